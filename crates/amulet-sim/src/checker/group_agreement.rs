//! Agreement within a replication group under dynamic subscriptions
//! (Elastic Paxos, thesis §4.4.4, Proposition 4): every replica of a merge
//! group delivers the same sequence, whatever streams the group joins and
//! leaves on the way, and makes the same subscription changes at the same
//! rounds. Uniform: crashed incarnations count too. All sequences are
//! prefixes of one another exactly when each is a prefix of the longest.

use super::value_name;
use crate::history::History;
use crate::violation::{Property, Violation};
use std::collections::BTreeMap;
use std::fmt::Debug;

/// Every disagreement between the runs of each group. `groups` maps a
/// group's name to the indices (in `history.learners()`) of its replicas'
/// runs; `events` gives each run's subscription changes in order.
pub fn check<E: PartialEq + Debug>(
    history: &History,
    groups: &BTreeMap<String, Vec<usize>>,
    events: &BTreeMap<usize, Vec<E>>,
) -> Vec<Violation> {
    let mut violations = Vec::new();
    let runs = history.learners();
    for (group, members) in groups {
        let Some(&longest) = members
            .iter()
            .max_by_key(|&&i| (runs[i].deliveries.len(), std::cmp::Reverse(i)))
        else {
            continue;
        };
        let reference = &runs[longest].deliveries;
        for &i in members {
            let run = &runs[i].deliveries;
            if let Some(at) = run.iter().zip(reference).position(|(a, b)| a != b) {
                violations.push(Violation::new(
                    Property::Agreement,
                    format!(
                        "group {group}: {} delivered {} at position {at} where {} delivered {}",
                        runs[i].name(),
                        value_name(run[at].1),
                        runs[longest].name(),
                        value_name(reference[at].1),
                    ),
                ));
            }
        }
        let empty = Vec::new();
        let Some(&most) = members
            .iter()
            .max_by_key(|&&i| (events.get(&i).map_or(0, Vec::len), std::cmp::Reverse(i)))
        else {
            continue;
        };
        let reference = events.get(&most).unwrap_or(&empty);
        for &i in members {
            let mine = events.get(&i).unwrap_or(&empty);
            if let Some(at) = mine.iter().zip(reference).position(|(a, b)| a != b) {
                violations.push(Violation::new(
                    Property::Agreement,
                    format!(
                        "group {group}: subscription change {at} of {} is {:?}, of {} {:?}",
                        runs[i].name(),
                        mine[at],
                        runs[most].name(),
                        reference[at],
                    ),
                ));
            }
        }
    }
    violations
}
