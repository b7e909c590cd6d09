//! The eventual map's checkers, run once anti-entropy is quiescent:
//!
//! - **convergence**: every replica of a key holds the same versions;
//! - **causality**: those versions are exactly the written values no
//!   other write superseded (a write supersedes the versions its client's
//!   context saw, DottedDB §IV-E): none lost, none resurrected, none
//!   invented, siblings only where writes were concurrent;
//! - **integrity**: no dot was issued twice (a restarted replica rebuilt
//!   its clock exactly from its checkpoint and synced journal);
//! - **no garbage**: no clock bitmap bits (every gap closed), no deleted key is stored (no tombstones, §IV-F), no
//!   stored context is left unstripped (§IV-C: metadata per key shrinks
//!   to the versions' dots), no dot-key entry outlives the dot reaching
//!   every peer (§IV-G).

use super::Write;
use crate::violation::{Property, Violation};
use amulet_dotted::{Dot, NodeState, ReplicaId};
use bytes::Bytes;
use std::collections::{BTreeMap, BTreeSet};

/// Violations of the final state `nodes` reached after `writes`.
pub(crate) fn check(nodes: &[NodeState], writes: &[Write]) -> Vec<Violation> {
    let mut violations = Vec::new();
    let by_id: BTreeMap<ReplicaId, &NodeState> = nodes.iter().map(|n| (n.id(), n)).collect();
    let mut issued: BTreeMap<Dot, &Write> = BTreeMap::new();
    for w in writes {
        if let Some(first) = issued.insert(w.dot, w) {
            violations.push(Violation::new(
                Property::Integrity,
                format!(
                    "dot {} issued twice: {:?}={:?} and {:?}={:?}",
                    w.dot, first.key, first.value, w.key, w.value
                ),
            ));
        }
    }
    let mut keys: BTreeMap<&Bytes, Vec<&Write>> = BTreeMap::new();
    for w in writes {
        keys.entry(&w.key).or_default().push(w);
    }
    for (key, key_writes) in &keys {
        let replicas = nodes[0].ring().replicas(key);
        let held: Vec<(ReplicaId, BTreeMap<Dot, Bytes>)> = replicas
            .iter()
            .map(|id| {
                let versions = by_id[id]
                    .fetch(key)
                    .versions()
                    .iter()
                    .filter_map(|(dot, v)| v.clone().map(|v| (*dot, v)))
                    .collect();
                (*id, versions)
            })
            .collect();
        for (id, versions) in &held[1..] {
            if versions != &held[0].1 {
                violations.push(Violation::new(
                    Property::Convergence,
                    format!(
                        "{key:?}: {} holds {:?} but {id} holds {:?}",
                        held[0].0, held[0].1, versions
                    ),
                ));
            }
        }
        let (first, actual) = &held[0];
        // A write lost with its node superseded nothing anywhere else,
        // unless it survived after all (a replica held it unsynced and
        // kept it): then it superseded what its context covers, there
        // and wherever it went.
        let superseding: Vec<&&Write> = key_writes
            .iter()
            .filter(|o| !o.lost || actual.contains_key(&o.dot))
            .collect();
        let expected: BTreeMap<Dot, &Bytes> = key_writes
            .iter()
            .filter(|w| !w.lost)
            .filter_map(|w| w.value.as_ref().map(|v| (w.dot, v)))
            .filter(|(dot, _)| !superseding.iter().any(|o| o.context.covers(*dot)))
            .collect();
        for (dot, value) in &expected {
            if !actual.contains_key(dot) {
                violations.push(Violation::new(
                    Property::Causality,
                    format!("{key:?}: the write {dot}={value:?} no write saw is lost at {first}"),
                ));
            }
        }
        for (dot, value) in actual {
            // A write only its destroyed node had durably may have
            // survived in a replica's unsynced state: allowed, not
            // required, unless another write superseded it.
            let maybe_lost = key_writes.iter().any(|w| w.dot == *dot && w.lost)
                && !superseding.iter().any(|o| o.context.covers(*dot));
            if !expected.contains_key(dot) && !maybe_lost {
                let why = match key_writes.iter().find(|w| w.dot == *dot) {
                    None => "was never written".to_string(),
                    Some(_) => {
                        let by: Vec<Dot> = superseding
                            .iter()
                            .filter(|o| o.context.covers(*dot))
                            .map(|o| o.dot)
                            .collect();
                        format!("was superseded by {by:?}")
                    }
                };
                violations.push(Violation::new(
                    Property::Causality,
                    format!("{key:?}: {first} holds {dot}={value:?}, which {why}"),
                ));
            }
        }
    }
    let written: BTreeSet<&Bytes> = keys.keys().copied().collect();
    for node in nodes {
        for (key, object) in node.stored() {
            if !written.contains(key) {
                violations.push(Violation::new(
                    Property::Causality,
                    format!("{}: stores {key:?}, never written", node.id()),
                ));
            }
            if object.values().is_empty() {
                violations.push(Violation::new(
                    Property::Garbage,
                    format!("{}: keeps a tombstone for {key:?}: {object:?}", node.id()),
                ));
            }
            if !object.context().is_empty() {
                violations.push(Violation::new(
                    Property::Garbage,
                    format!(
                        "{}: {key:?}'s context is not stripped: {:?}",
                        node.id(),
                        object.context()
                    ),
                ));
            }
        }
        let retired: Vec<ReplicaId> = node
            .clock()
            .ids()
            .filter(|id| node.ring().is_retired(*id))
            .collect();
        if !retired.is_empty() || node.retired_in_flight() > 0 || node.transfers_pending() > 0 {
            violations.push(Violation::new(
                Property::Garbage,
                format!(
                    "{}: retired ids {retired:?} in its clock, {} retired ids not closed or not forgotten, {} transfers unfinished",
                    node.id(),
                    node.retired_in_flight(),
                    node.transfers_pending()
                ),
            ));
        }
        if node.clock().bitmap_words() > 0 {
            violations.push(Violation::new(
                Property::Garbage,
                format!(
                    "{}: {} clock bitmap words left when quiescent",
                    node.id(),
                    node.clock().bitmap_words()
                ),
            ));
        }
        if node.non_stripped_len() > 0 || node.dot_keys_len() > 0 {
            violations.push(Violation::new(
                Property::Garbage,
                format!(
                    "{}: {} non-stripped keys and {} dot-key entries left when quiescent",
                    node.id(),
                    node.non_stripped_len(),
                    node.dot_keys_len()
                ),
            ));
        }
    }
    violations
}
