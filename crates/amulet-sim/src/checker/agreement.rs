//! Uniform agreement (and total order within a stream): for every stream
//! `s`, the sequences of `s`-values delivered by any two learner
//! incarnations subscribed to `s` are prefixes of one another. Crashed
//! incarnations count too: what a process delivers before crashing must
//! agree with everyone else (uniformity).
//!
//! All sequences are prefixes of one another exactly when each is a prefix
//! of the longest one, so each is compared with the longest only.

use super::value_name;
use crate::history::{History, LearnerRun};
use crate::violation::{Property, Violation};
use amulet_types::{StreamId, ValueId};
use std::collections::BTreeSet;

/// One learner's view of one stream: (merged position, value) in order.
type Projection = Vec<(usize, ValueId)>;

/// Every agreement violation in `history`.
pub fn check(history: &History) -> Vec<Violation> {
    let streams: BTreeSet<StreamId> = history
        .learners()
        .iter()
        .flat_map(|run| run.subscriptions.iter().copied())
        .collect();
    let mut violations = Vec::new();
    for stream in streams {
        check_stream(history, stream, &mut violations);
    }
    violations
}

fn project(run: &LearnerRun, stream: StreamId) -> Projection {
    run.deliveries
        .iter()
        .enumerate()
        .filter(|(_, (s, _))| *s == stream)
        .map(|(position, (_, value))| (position, *value))
        .collect()
}

fn check_stream(history: &History, stream: StreamId, violations: &mut Vec<Violation>) {
    let views: Vec<(&LearnerRun, Projection)> = history
        .learners()
        .iter()
        .filter(|run| run.subscriptions.contains(&stream))
        .map(|run| (run, project(run, stream)))
        .collect();
    // The first longest view is the reference (deterministic tie-break).
    let Some(reference) = views
        .iter()
        .enumerate()
        .max_by_key(|(index, (_, view))| (view.len(), std::cmp::Reverse(*index)))
        .map(|(index, _)| index)
    else {
        return;
    };
    let (long_run, long_view) = &views[reference];
    for (run, view) in &views {
        let divergence = view
            .iter()
            .zip(long_view.iter())
            .position(|(a, b)| a.1 != b.1);
        let Some(index) = divergence else {
            continue;
        };
        let (position, value) = view[index];
        let (long_position, long_value) = long_view[index];
        violations.push(Violation::new(
            Property::Agreement,
            format!(
                "on {stream}, {} and {} diverge at stream position {index}: \
                 {} delivered {} (merged position {position}) where {} delivered {} \
                 (merged position {long_position})",
                run.name(),
                long_run.name(),
                run.name(),
                value_name(value),
                long_run.name(),
                value_name(long_value),
            ),
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::super::fixtures::{learn, propose_all, v};
    use super::*;

    fn three_values() -> History {
        let mut history = History::new();
        propose_all(&mut history, &[(v(1, 1), 0), (v(1, 2), 0), (v(2, 1), 1)]);
        history
    }

    #[test]
    fn prefixes_and_interleavings_of_other_streams_pass() {
        let mut history = three_values();
        learn(
            &mut history,
            5,
            &[0, 1],
            &[(0, v(1, 1)), (1, v(2, 1)), (0, v(1, 2))],
        );
        // A crashed incarnation that delivered a prefix, then a restart.
        learn(&mut history, 6, &[0], &[(0, v(1, 1))]);
        history.learner_crashed(amulet_types::NodeId(6));
        learn(&mut history, 6, &[0], &[(0, v(1, 1)), (0, v(1, 2))]);
        learn(&mut history, 7, &[1], &[]);
        assert_eq!(check(&history), vec![]);
    }

    #[test]
    fn two_learners_deciding_differently_on_one_stream_are_reported() {
        let mut history = three_values();
        learn(&mut history, 5, &[0], &[(0, v(1, 1)), (0, v(1, 2))]);
        learn(&mut history, 6, &[0, 1], &[(1, v(2, 1)), (0, v(1, 2))]);
        let violations = check(&history);
        assert_eq!(violations.len(), 1, "{violations:?}");
        assert_eq!(violations[0].property, Property::Agreement);
        let message = &violations[0].message;
        assert!(message.contains("on s0, n6#1 and n5#1 diverge at stream position 0"));
        assert!(message.contains("n6#1 delivered v1#1.2 (merged position 1)"));
        assert!(message.contains("n5#1 delivered v1#1.1 (merged position 0)"));
    }

    #[test]
    fn crashed_incarnation_that_disagreed_is_reported_uniform_agreement() {
        let mut history = three_values();
        learn(&mut history, 5, &[0], &[(0, v(1, 2))]);
        history.learner_crashed(amulet_types::NodeId(5));
        learn(&mut history, 6, &[0], &[(0, v(1, 1)), (0, v(1, 2))]);
        let violations = check(&history);
        assert_eq!(violations.len(), 1, "{violations:?}");
        assert!(violations[0].message.contains("n5#1"));
    }
}
