//! Partial order: if two learners deliver `m` and `m'`, they deliver them
//! in the same order. Equivalently, the precedence graph built from every
//! learner incarnation's merged sequence has no cycle. Consecutive pairs of
//! each sequence suffice: precedence within a sequence is their transitive
//! closure. This catches cross-stream cycles (a learner of s1 and s2
//! merging m1 before m2 while another merges m2 before m1, the hazard of
//! dynamic subscriptions in Elastic Paxos), which per-stream agreement
//! cannot see.

use super::value_name;
use crate::history::History;
use crate::violation::{Property, Violation};
use amulet_types::ValueId;
use std::collections::{BTreeMap, BTreeSet, VecDeque};

/// Who saw an edge `a -> b`: learner index and the positions of `a`, `b`.
#[derive(Clone, Copy, Debug)]
struct Witness {
    learner: usize,
    positions: (usize, usize),
}

/// The precedence graph over delivered values.
struct Graph {
    values: Vec<ValueId>,
    successors: Vec<Vec<usize>>,
    witnesses: BTreeMap<(usize, usize), Witness>,
}

/// Every order violation in `history`: one per strongly connected
/// component of the precedence graph larger than one value, each shown as
/// one cycle through it.
pub fn check(history: &History) -> Vec<Violation> {
    let graph = build(history);
    let mut violations = Vec::new();
    for component in strongly_connected(&graph) {
        if component.len() < 2 {
            continue;
        }
        let cycle = find_cycle(&graph, &component);
        let steps: Vec<String> = cycle
            .windows(2)
            .map(|pair| {
                let witness = graph.witnesses[&(pair[0], pair[1])];
                let run = &history.learners()[witness.learner];
                format!(
                    "{} before {} at {} positions {}, {}",
                    value_name(graph.values[pair[0]]),
                    value_name(graph.values[pair[1]]),
                    run.name(),
                    witness.positions.0,
                    witness.positions.1
                )
            })
            .collect();
        violations.push(Violation::new(
            Property::Order,
            format!(
                "delivery order has a cycle through {} values ({} in its component): {}",
                cycle.len() - 1,
                component.len(),
                steps.join("; ")
            ),
        ));
    }
    violations
}

fn build(history: &History) -> Graph {
    let mut index: BTreeMap<ValueId, usize> = BTreeMap::new();
    let mut values = Vec::new();
    let mut witnesses = BTreeMap::new();
    for (learner, run) in history.learners().iter().enumerate() {
        let mut seen = BTreeSet::new();
        let mut previous: Option<(usize, usize)> = None;
        for (position, (_, value)) in run.deliveries.iter().enumerate() {
            if !seen.insert(*value) {
                continue; // A duplicate is integrity's to report.
            }
            let node = *index.entry(*value).or_insert_with(|| {
                values.push(*value);
                values.len() - 1
            });
            if let Some((before, before_position)) = previous {
                witnesses.entry((before, node)).or_insert(Witness {
                    learner,
                    positions: (before_position, position),
                });
            }
            previous = Some((node, position));
        }
    }
    let mut successors = vec![Vec::new(); values.len()];
    for &(from, to) in witnesses.keys() {
        successors[from].push(to);
    }
    Graph {
        values,
        successors,
        witnesses,
    }
}

/// Tarjan's algorithm, iterative (histories have many thousands of values).
fn strongly_connected(graph: &Graph) -> Vec<Vec<usize>> {
    let count = graph.values.len();
    let mut order: Vec<Option<usize>> = vec![None; count];
    let mut low = vec![0; count];
    let mut on_stack = vec![false; count];
    let mut stack = Vec::new();
    let mut components = Vec::new();
    let mut next_order = 0;
    for root in 0..count {
        if order[root].is_some() {
            continue;
        }
        let mut calls: Vec<(usize, usize)> = vec![(root, 0)];
        order[root] = Some(next_order);
        low[root] = next_order;
        next_order += 1;
        stack.push(root);
        on_stack[root] = true;
        while let Some(&mut (node, ref mut edge)) = calls.last_mut() {
            if let Some(&next) = graph.successors[node].get(*edge) {
                *edge += 1;
                match order[next] {
                    None => {
                        order[next] = Some(next_order);
                        low[next] = next_order;
                        next_order += 1;
                        stack.push(next);
                        on_stack[next] = true;
                        calls.push((next, 0));
                    }
                    Some(next_order_seen) if on_stack[next] => {
                        low[node] = low[node].min(next_order_seen);
                    }
                    Some(_) => {}
                }
                continue;
            }
            calls.pop();
            if let Some(&(parent, _)) = calls.last() {
                low[parent] = low[parent].min(low[node]);
            }
            if Some(low[node]) == order[node] {
                let mut component = Vec::new();
                loop {
                    let member = stack.pop().expect("Tarjan stack holds the component");
                    on_stack[member] = false;
                    component.push(member);
                    if member == node {
                        break;
                    }
                }
                component.sort_unstable();
                components.push(component);
            }
        }
    }
    components.sort();
    components
}

/// A shortest cycle through the component's smallest value, as a list of
/// value indexes that starts and ends with that value.
fn find_cycle(graph: &Graph, component: &[usize]) -> Vec<usize> {
    let members: BTreeSet<usize> = component.iter().copied().collect();
    let start = component[0];
    let mut parent: BTreeMap<usize, usize> = BTreeMap::new();
    let mut queue = VecDeque::from([start]);
    while let Some(node) = queue.pop_front() {
        for &next in &graph.successors[node] {
            if next == start {
                let mut cycle = vec![start, node];
                let mut walk = node;
                while walk != start {
                    walk = parent[&walk];
                    cycle.push(walk);
                }
                cycle.reverse();
                return cycle;
            }
            if members.contains(&next) && !parent.contains_key(&next) {
                parent.insert(next, node);
                queue.push_back(next);
            }
        }
    }
    unreachable!("every value of a strongly connected component lies on a cycle");
}

#[cfg(test)]
mod tests {
    use super::super::fixtures::{learn, propose_all, v};
    use super::*;

    #[test]
    fn consistent_orders_pass() {
        let mut history = History::new();
        propose_all(&mut history, &[(v(1, 1), 0), (v(2, 1), 1), (v(3, 1), 2)]);
        learn(&mut history, 5, &[0, 1], &[(0, v(1, 1)), (1, v(2, 1))]);
        learn(&mut history, 6, &[1, 2], &[(1, v(2, 1)), (2, v(3, 1))]);
        learn(&mut history, 7, &[0, 2], &[(0, v(1, 1)), (2, v(3, 1))]);
        assert_eq!(check(&history), vec![]);
    }

    #[test]
    fn two_learners_merging_streams_in_opposite_orders_are_reported() {
        let mut history = History::new();
        propose_all(&mut history, &[(v(1, 1), 0), (v(2, 1), 1)]);
        learn(&mut history, 5, &[0, 1], &[(0, v(1, 1)), (1, v(2, 1))]);
        learn(&mut history, 6, &[0, 1], &[(1, v(2, 1)), (0, v(1, 1))]);
        let violations = check(&history);
        assert_eq!(violations.len(), 1, "{violations:?}");
        assert_eq!(violations[0].property, Property::Order);
        let message = &violations[0].message;
        assert!(
            message.contains("v1#1.1 before v2#1.1 at n5#1 positions 0, 1"),
            "{message}"
        );
        assert!(
            message.contains("v2#1.1 before v1#1.1 at n6#1 positions 0, 1"),
            "{message}"
        );
    }

    #[test]
    fn three_learner_cycle_invisible_to_any_pair_is_reported() {
        // The Multi-Ring hazard: each learner subscribes to two of three
        // streams and every pair of learners agrees on what they share,
        // yet a < b < c < a overall.
        let mut history = History::new();
        let (a, b, c) = (v(1, 1), v(2, 1), v(3, 1));
        propose_all(&mut history, &[(a, 0), (b, 1), (c, 2)]);
        learn(&mut history, 5, &[0, 1], &[(0, a), (1, b)]);
        learn(&mut history, 6, &[1, 2], &[(1, b), (2, c)]);
        learn(&mut history, 7, &[0, 2], &[(2, c), (0, a)]);
        let violations = check(&history);
        assert_eq!(violations.len(), 1, "{violations:?}");
        assert!(violations[0].message.contains("cycle through 3 values"));
        for name in ["n5#1", "n6#1", "n7#1"] {
            assert!(violations[0].message.contains(name));
        }
    }

    #[test]
    fn long_histories_do_not_overflow_the_stack() {
        let mut history = History::new();
        let values: Vec<(ValueId, u32)> = (1..=50_000).map(|i| (v(1, i), 0)).collect();
        propose_all(&mut history, &values);
        let deliveries: Vec<(u32, ValueId)> = values.iter().map(|(v, s)| (*s, *v)).collect();
        learn(&mut history, 5, &[0], &deliveries);
        let mut reversed = deliveries.clone();
        reversed.reverse();
        learn(&mut history, 6, &[0], &reversed);
        let violations = check(&history);
        assert_eq!(violations.len(), 1);
        assert!(violations[0].message.contains("(50000 in its component)"));
    }
}
