//! The swarm's operator: now and then it asks a live replica for a
//! reconfiguration (split, merge, stream replacement, move, and in a third
//! of its seeds the global stream's replacement) drawn against the newest
//! map, while clients run and the nemesis strikes.

use super::*;
use amulet_smr::{Reconfiguration, StreamSpec};

/// The operator's record, in two thirds of the seeds.
pub(super) struct Operator {
    /// When it sends the next reconfiguration.
    pub(super) next: TimeMicros,
    /// The id its next split gives the new partition.
    pub(super) next_partition: u32,
    /// The id its next new stream gets.
    pub(super) next_stream: u32,
    pub(super) rng: Rng,
    /// In a third of the map workload's seeds with an operator, it also
    /// replaces the global stream now and then; a separate generator, so
    /// the other seeds draw as before.
    pub(super) global_rng: Option<Rng>,
}

impl Operator {
    /// The operator of `seed`, if it has one (two thirds of the seeds).
    pub(super) fn of_seed(
        seed: u64,
        kind: ClientKind,
        operator_rng: &mut Rng,
        partitions: u32,
    ) -> Option<Operator> {
        operator_rng.chance(2.0 / 3.0).then(|| Operator {
            next: TimeMicros(operator_rng.range(100_000, 1_500_000)),
            next_partition: partitions + 1,
            next_stream: partitions + 2,
            rng: operator_rng.fork(),
            global_rng: {
                let mut global_rng = Rng::new(seed ^ 0x676C_6F62);
                // The map workload's seeds only: the other workloads' pinned
                // seeds keep their scenarios.
                let draws = kind == ClientKind::Map && pinned::global_draws();
                (global_rng.chance(1.0 / 3.0) && draws).then_some(global_rng)
            },
        })
    }
}

impl DmapCluster {
    /// The operator sends one reconfiguration, drawn against the newest
    /// map a live node holds, to a live replica of the partition it
    /// concerns. Its reply is only printed: a refused or lost one is
    /// followed by another.
    pub(super) fn reconfigure(&mut self, harness: &mut Harness) {
        let now = harness.now;
        let Some(map) = newest_map(harness) else {
            return;
        };
        let storage = self.storage;
        // A move's new replicas fetch the state from checkpoints.
        let kinds = if self.checkpoints.every_micros > 0 {
            4
        } else {
            3
        };
        let lost = harness.nemesis.lost_state().clone();
        let kills_for_good = harness.nemesis.kills_for_good();
        let operator = self.operator.as_mut().expect("checked by the caller");
        operator.next = now.plus(operator.rng.range(200_000, 1_500_000));
        if operator
            .global_rng
            .as_mut()
            .is_some_and(|rng| rng.chance(0.25))
        {
            self.replace_global_stream(harness, &map);
            return;
        }
        let operator = self.operator.as_mut().expect("checked by the caller");
        let partitions: Vec<PartitionId> = map.partitions.keys().copied().collect();
        let source = *operator.rng.pick(&partitions).expect("partitions");
        let replicas = map.partitions[&source].replicas.clone();
        let spec = |stream: u32| StreamSpec {
            stream: StreamId(stream),
            acceptors: replicas.clone(),
            learners: Vec::new(),
            storage,
            base_position: 0,
        };
        let twins: Vec<PartitionId> = partitions
            .iter()
            .copied()
            .filter(|p| *p != source && map.partitions[p].replicas == replicas)
            .collect();
        let hosting = map.hosting_nodes();
        let change = match operator.rng.below(kinds) {
            3 => {
                // To one node or to REPLICAS nodes among those replicating
                // something, the old replicas learning the new stream. One
                // node only with synced acceptors: a lone acceptor that
                // loses its state at a crash loses the stream. Not in a
                // run that kills a node for good: the nemesis' budgets
                // follow the groups the run started with, and the partition
                // would die with its one node (seed 9008462: nothing left
                // to re-home it from).
                let lone = operator.rng.chance(0.3);
                let size = if lone && storage == StorageMode::SyncDurable && !kills_for_good {
                    1
                } else {
                    REPLICAS as usize
                };
                // Acceptors that lost their state never vote again (the
                // nemesis' budgets): the new stream's come from those that
                // did not. In-memory acceptors are safe only while a
                // majority stays up: such streams keep REPLICAS acceptors.
                let mut pool: Vec<NodeId> = hosting
                    .iter()
                    .copied()
                    .filter(|n| !lost.contains(n))
                    .collect();
                if storage != StorageMode::SyncDurable && pool.len() < size {
                    pool = replicas.clone();
                }
                let mut to = Vec::new();
                while to.len() < size.min(pool.len()) {
                    let at = operator.rng.below(pool.len() as u64) as usize;
                    to.push(pool.swap_remove(at));
                }
                to.sort();
                operator.next_stream += 1;
                let learners = replicas
                    .iter()
                    .copied()
                    .filter(|n| !to.contains(n))
                    .collect();
                Reconfiguration::Move {
                    partition: source,
                    replicas: to.clone(),
                    stream: StreamSpec {
                        stream: StreamId(operator.next_stream),
                        acceptors: to,
                        learners,
                        storage,
                        base_position: 0,
                    },
                }
            }
            0 if !twins.is_empty() => {
                let other = *operator.rng.pick(&twins).expect("not empty");
                Reconfiguration::Merge {
                    source: source.max(other),
                    into: source.min(other),
                }
            }
            1 => {
                operator.next_stream += 1;
                Reconfiguration::ReplaceStream {
                    partition: source,
                    stream: spec(operator.next_stream),
                }
            }
            _ => {
                // A cut inside one of the source's token segments, and in
                // a range map inside one of its ranges (a..f keys).
                let segments: Vec<(u32, u32)> = map
                    .token_ring
                    .iter()
                    .enumerate()
                    .filter(|(_, e)| e.1 == source)
                    .map(|(i, e)| {
                        let end = map.token_ring.get(i + 1).map_or(u32::MAX, |n| n.0);
                        (e.0, end)
                    })
                    .filter(|(a, b)| b - a > 1)
                    .collect();
                let at_token = operator
                    .rng
                    .pick(&segments)
                    .map(|(a, b)| a + 1 + operator.rng.below(u64::from(b - a - 1)) as u32);
                let mut at_keys = Vec::new();
                for (name, layout) in &map.keyspaces {
                    if let Layout::Range(ranges) = layout {
                        let cuts: Vec<Bytes> = (0..26u8)
                            .flat_map(|c| [vec![b'a' + c], vec![b'a' + c, b'm']])
                            .map(Bytes::from)
                            .filter(|k| {
                                let at = ranges.partition_point(|r| r.0 <= *k);
                                ranges[at - 1].1 == source && ranges[at - 1].0 != *k
                            })
                            .collect();
                        if let Some(key) = operator.rng.pick(&cuts) {
                            at_keys.push((name.clone(), key.clone()));
                        }
                    }
                }
                operator.next_partition += 1;
                operator.next_stream += 1;
                Reconfiguration::Split {
                    source,
                    new: PartitionId(operator.next_partition),
                    stream: spec(operator.next_stream),
                    at_token,
                    at_keys,
                }
            }
        };
        let live: Vec<NodeId> = replicas
            .iter()
            .copied()
            .filter(|n| harness.host(*n).is_some())
            .collect();
        let Some(&to) = operator.rng.pick(&live) else {
            return;
        };
        if let Reconfiguration::Move { stream, .. } = &change {
            // Its acceptors may span the groups the nemesis budgets (a
            // single synced acceptor needs no budget: it is the stream).
            if stream.acceptors.len() > 1 {
                harness
                    .nemesis
                    .add_group(CrashGroup::minority(stream.acceptors.clone()));
            }
        }
        if self.verbose {
            println!("t={}us operator -> {to}: {change:?}", now.0);
        }
        let request = ClientRequest {
            map_version: map.version,
            session: None,
            body: amulet_smr::Body::Reconfigure(change),
            principal: None,
        };
        harness.request(OPERATOR_ENDPOINT, to, 0, Some(source), request);
    }

    /// Asks a live replica to replace the global stream (thesis §4.2): the
    /// same members, three acceptors (or as many as there are) drawn from
    /// the active members of the view that can vote, the others learners. Acceptors that lost their
    /// state, were killed for good or left never vote again (the
    /// nemesis' budgets); with too few left, nothing is asked.
    fn replace_global_stream(&mut self, harness: &mut Harness, map: &PartitionMap) {
        let members = match map.streams.get(&map.global_stream) {
            Some(spec) => spec.members(),
            None => self.configs[0].members(),
        };
        let nemesis = &harness.nemesis;
        // Acceptors are active members of the view (the edge refuses
        // others: a node outside the view never learns the map).
        let view = newest_membership(harness).map(|m| m.view().clone());
        let active = |n: &NodeId| {
            view.as_ref().is_none_or(|v| {
                v.state(*n) == Some(amulet_membership::MemberState::Active) && !v.gone(*n)
            })
        };
        let mut pool: Vec<NodeId> = members
            .iter()
            .copied()
            .filter(|n| {
                !nemesis.lost_state().contains(n)
                    && !nemesis.dead().contains(n)
                    && !nemesis.left().contains(n)
                    && active(n)
            })
            .collect();
        let size = (REPLICAS as usize).min(members.len());
        if pool.len() < size {
            return;
        }
        let operator = self.operator.as_mut().expect("checked by the caller");
        let mut acceptors = Vec::new();
        while acceptors.len() < size {
            let at = operator.rng.below(pool.len() as u64) as usize;
            acceptors.push(pool.swap_remove(at));
        }
        acceptors.sort();
        operator.next_stream += 1;
        let stream = StreamSpec {
            stream: StreamId(operator.next_stream),
            learners: members
                .iter()
                .copied()
                .filter(|n| !acceptors.contains(n))
                .collect(),
            acceptors: acceptors.clone(),
            storage: self.storage,
            base_position: 0,
        };
        let live: Vec<NodeId> = map
            .hosting_nodes()
            .into_iter()
            .filter(|n| harness.host(*n).is_some_and(|h| h.current_map().is_some()))
            .collect();
        let Some(&to) = operator.rng.pick(&live) else {
            return;
        };
        if acceptors.len() > 1 {
            harness
                .nemesis
                .add_group(CrashGroup::minority(acceptors.clone()));
        }
        let change = Reconfiguration::ReplaceGlobalStream { stream };
        if self.verbose {
            println!("t={}us operator -> {to}: {change:?}", harness.now.0);
        }
        let request = ClientRequest {
            map_version: map.version,
            session: None,
            body: amulet_smr::Body::Reconfigure(change),
            principal: None,
        };
        harness.request(OPERATOR_ENDPOINT, to, 0, None, request);
    }
}
