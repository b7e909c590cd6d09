//! One checker per atomic multicast property (openraft keeps one invariant
//! file per property). Each takes the whole [`History`] and returns every
//! violation it finds, with messages naming nodes, values and positions.

pub mod agreement;
pub mod group_agreement;
pub mod integrity;
pub mod linearizability;
pub mod order;
pub mod transactions;
pub mod validity;

use crate::history::History;
use crate::violation::Violation;
use amulet_types::ValueId;

/// The safety properties, which hold at every instant of every run:
/// integrity, uniform agreement, partial order.
pub fn check_safety(history: &History) -> Vec<Violation> {
    let mut violations = integrity::check(history);
    violations.extend(agreement::check(history));
    violations.extend(order::check(history));
    violations
}

/// Safety and, if the run finished its healed phase, validity.
pub fn check_all(history: &History) -> Vec<Violation> {
    let mut violations = check_safety(history);
    if history.finished_at().is_some() {
        violations.extend(validity::check(history));
    }
    violations
}

/// `proposer#incarnation.sequence`: the short name of a value in messages.
pub fn value_name(value: ValueId) -> String {
    format!(
        "v{}#{}.{}",
        value.proposer.0, value.incarnation, value.sequence
    )
}

#[cfg(test)]
pub(crate) mod fixtures;
