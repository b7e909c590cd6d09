//! Integrity: every learner incarnation delivers a value at most once,
//! only values that were multicast, only from a stream the value was
//! multicast to, and only from streams it subscribes to.

use super::value_name;
use crate::history::History;
use crate::violation::{Property, Violation};
use amulet_types::ValueId;
use std::collections::BTreeMap;

/// Every integrity violation in `history`.
pub fn check(history: &History) -> Vec<Violation> {
    let mut violations = Vec::new();
    let report = |violations: &mut Vec<Violation>, message: String| {
        violations.push(Violation::new(Property::Integrity, message));
    };
    for run in history.learners() {
        let mut first_position: BTreeMap<ValueId, usize> = BTreeMap::new();
        for (position, &(stream, value)) in run.deliveries.iter().enumerate() {
            let name = value_name(value);
            if let Some(first) = first_position.insert(value, position) {
                first_position.insert(value, first);
                report(
                    &mut violations,
                    format!(
                        "{} delivered {name} twice: at positions {first} and {position}",
                        run.name()
                    ),
                );
            }
            match history.proposals().get(&value) {
                None => report(
                    &mut violations,
                    format!(
                        "{} delivered {name} from {stream} at position {position}, \
                         but it was never multicast",
                        run.name()
                    ),
                ),
                Some(proposal) if !proposal.streams.contains(&stream) => report(
                    &mut violations,
                    format!(
                        "{} delivered {name} from {stream} at position {position}, \
                         but it was multicast to {:?}",
                        run.name(),
                        proposal.streams
                    ),
                ),
                Some(_) => {}
            }
            if !run.subscriptions.contains(&stream) {
                report(
                    &mut violations,
                    format!(
                        "{} delivered {name} from {stream} at position {position}, \
                         but subscribes only to {:?}",
                        run.name(),
                        run.subscriptions
                    ),
                );
            }
        }
    }
    violations
}

#[cfg(test)]
mod tests {
    use super::super::fixtures::{learn, propose_all, v};
    use super::*;

    #[test]
    fn clean_history_passes() {
        let mut history = History::new();
        propose_all(&mut history, &[(v(1, 1), 0), (v(1, 2), 1)]);
        learn(&mut history, 5, &[0, 1], &[(0, v(1, 1)), (1, v(1, 2))]);
        learn(&mut history, 6, &[1], &[(1, v(1, 2))]);
        assert_eq!(check(&history), vec![]);
    }

    #[test]
    fn duplicate_delivery_is_reported_with_both_positions() {
        let mut history = History::new();
        propose_all(&mut history, &[(v(1, 1), 0), (v(1, 2), 0)]);
        learn(
            &mut history,
            5,
            &[0],
            &[(0, v(1, 1)), (0, v(1, 2)), (0, v(1, 1))],
        );
        let violations = check(&history);
        assert_eq!(violations.len(), 1, "{violations:?}");
        assert_eq!(violations[0].property, Property::Integrity);
        assert!(violations[0]
            .message
            .contains("n5#1 delivered v1#1.1 twice: at positions 0 and 2"));
    }

    #[test]
    fn value_never_multicast_is_reported() {
        let mut history = History::new();
        propose_all(&mut history, &[(v(1, 1), 0)]);
        learn(&mut history, 5, &[0], &[(0, v(1, 1)), (0, v(9, 9))]);
        let violations = check(&history);
        assert_eq!(violations.len(), 1);
        assert!(violations[0].message.contains("v9#1.9"));
        assert!(violations[0].message.contains("never multicast"));
    }

    #[test]
    fn delivery_from_an_unsubscribed_or_wrong_stream_is_reported() {
        let mut history = History::new();
        propose_all(&mut history, &[(v(1, 1), 0), (v(1, 2), 1)]);
        // n5 subscribes to s0 only but delivers v1.2 of s1; n6 delivers
        // v1.1 (multicast to s0) as if from s1.
        learn(&mut history, 5, &[0], &[(0, v(1, 1)), (1, v(1, 2))]);
        learn(&mut history, 6, &[0, 1], &[(1, v(1, 1))]);
        let messages: Vec<String> = check(&history).into_iter().map(|v| v.message).collect();
        assert_eq!(messages.len(), 2, "{messages:?}");
        assert!(messages[0].contains("n5#1") && messages[0].contains("subscribes only"));
        assert!(messages[1].contains("n6#1") && messages[1].contains("multicast to"));
    }
}
