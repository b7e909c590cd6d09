//! Validity (checked after the healed phase): every value multicast by a
//! correct proposer incarnation (one that never crashed) is delivered by
//! every correct learner incarnation (live at the end of the run)
//! subscribed to one of the value's streams.
//!
//! Agreement's liveness half ("if a correct process delivers m, every
//! correct subscriber eventually does") follows from this one plus uniform
//! agreement for values of correct proposers; for values of crashed
//! proposers it is checked here too: a value some correct learner
//! delivered must reach every correct subscriber.

use super::value_name;
use crate::history::History;
use crate::violation::{Property, Violation};
use amulet_types::ValueId;
use std::collections::BTreeSet;

/// Every validity violation in `history`, one per learner that misses
/// values, naming how many and the first few.
pub fn check(history: &History) -> Vec<Violation> {
    let delivered_by_correct: BTreeSet<ValueId> = history
        .correct_learners()
        .flat_map(|run| run.deliveries.iter().map(|(_, value)| *value))
        .collect();
    let mut violations = Vec::new();
    for run in history.correct_learners() {
        let delivered: BTreeSet<ValueId> = run.deliveries.iter().map(|(_, v)| *v).collect();
        let missing: Vec<String> = history
            .proposals()
            .values()
            .filter(|proposal| !proposal.streams.is_disjoint(&run.subscriptions))
            .filter(|proposal| {
                !history.is_proposer_crashed(proposal.proposer, proposal.incarnation)
                    || delivered_by_correct.contains(&proposal.value)
            })
            .filter(|proposal| !delivered.contains(&proposal.value))
            .map(|proposal| {
                format!(
                    "{} (multicast to {:?} by {}#{} at {}us)",
                    value_name(proposal.value),
                    proposal.streams,
                    proposal.proposer,
                    proposal.incarnation,
                    proposal.time.0
                )
            })
            .collect();
        if missing.is_empty() {
            continue;
        }
        let shown: Vec<&str> = missing.iter().take(3).map(String::as_str).collect();
        violations.push(Violation::new(
            Property::Validity,
            format!(
                "{} (subscribed to {:?}) never delivered {} value(s) it must, first: {}",
                run.name(),
                run.subscriptions,
                missing.len(),
                shown.join(", ")
            ),
        ));
    }
    violations
}

#[cfg(test)]
mod tests {
    use super::super::fixtures::{learn, propose_all, v};
    use super::*;
    use amulet_types::NodeId;

    #[test]
    fn everything_delivered_passes_and_crashed_ones_are_excused() {
        let mut history = History::new();
        propose_all(&mut history, &[(v(1, 1), 0), (v(2, 1), 1), (v(3, 1), 0)]);
        history.proposer_crashed(NodeId(3), 1);
        learn(&mut history, 5, &[0], &[]);
        history.learner_crashed(NodeId(5)); // A crashed incarnation owes nothing.
        learn(&mut history, 5, &[0], &[(0, v(1, 1))]);
        learn(&mut history, 6, &[1], &[(1, v(2, 1))]);
        assert_eq!(check(&history), vec![]);
    }

    #[test]
    fn value_of_a_correct_proposer_missing_at_a_subscriber_is_reported() {
        let mut history = History::new();
        propose_all(&mut history, &[(v(1, 1), 0), (v(1, 2), 0), (v(2, 1), 1)]);
        learn(&mut history, 5, &[0, 1], &[(0, v(1, 1)), (1, v(2, 1))]);
        learn(&mut history, 6, &[1], &[(1, v(2, 1))]);
        let violations = check(&history);
        assert_eq!(violations.len(), 1, "{violations:?}");
        assert_eq!(violations[0].property, Property::Validity);
        let message = &violations[0].message;
        assert!(message.contains("n5#1"), "{message}");
        assert!(message.contains("never delivered 1 value(s)"), "{message}");
        assert!(
            message.contains("v1#1.2 (multicast to {StreamId(0)} by n1#1"),
            "{message}"
        );
    }

    #[test]
    fn value_of_a_crashed_proposer_delivered_by_one_correct_learner_must_reach_all() {
        let mut history = History::new();
        propose_all(&mut history, &[(v(3, 1), 0)]);
        history.proposer_crashed(NodeId(3), 1);
        learn(&mut history, 5, &[0], &[(0, v(3, 1))]);
        learn(&mut history, 6, &[0], &[]);
        let violations = check(&history);
        assert_eq!(violations.len(), 1, "{violations:?}");
        assert!(violations[0].message.contains("n6#1"));
    }
}
