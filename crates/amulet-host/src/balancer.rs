//! The balancer (docs/dynatree.md; DynaTree's oracle): a range partition
//! holding more than `split_entries` entries of one range map is split at
//! its middle key, with no operator command, so a map created with one
//! partition grows to many as data arrives; two neighbouring ranges that
//! together hold at most `merge_entries` are merged back.
//!
//! The decision is a proposal, ordered on the global stream like an
//! operator's `amulet split`: the partition's lowest live replica makes it
//! from its own state (a replica of the partition knows its size; nobody
//! else does), and a proposal built on a map another change replaced
//! first fails on the map version and is built again at the next turn.
//! The new half keeps the partition's replicas (no state moves between
//! nodes), so the split itself is cheap; each half starts at half the
//! bound, which is the hysteresis: a partition splits again only after it
//! has doubled.

use crate::host::Host;
use amulet_smr::StreamSpec;
use amulet_smr::{Body, ClientRequest, Layout, PartitionMap, Reconfiguration, StateMachine};
use amulet_types::{MapVersion, NodeId, PartitionId, StorageMode, TimeMicros};
use bytes::Bytes;

/// How often the balancer looks at the partitions it proposes for.
const BALANCE_INTERVAL_MICROS: u64 = 1_000_000;

/// A change proposed on a map version that is still the newest after this
/// long is proposed again (its request may have been lost with a
/// coordinator, or refused while another change took effect).
const CHANGE_RETRY_MICROS: u64 = 5_000_000;

/// What the balancer does (`[balancer]` in the node's file).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BalancerConfig {
    /// Whether it proposes anything (the operator's pause switch).
    pub enabled: bool,
    /// A partition holding more than this many entries of one range map
    /// is split at its middle key.
    pub split_entries: u64,
    /// Two neighbouring ranges of a range map, held by partitions with the
    /// same replicas, that together hold at most this many entries (of
    /// every map) are merged into one partition; 0: never. At most half of
    /// `split_entries`, so a merged partition must double before it
    /// splits again (no flapping).
    pub merge_entries: u64,
    /// Whether a node replicating at least two partitions more than
    /// another gives one of them to it (`amulet_smr::next_rebalance`),
    /// proposed by the node that proposes self-healing's repairs. Needs
    /// membership and checkpoints (a move's state travels as one).
    pub moves: bool,
}

impl Default for BalancerConfig {
    fn default() -> BalancerConfig {
        BalancerConfig {
            enabled: true,
            split_entries: 1_000_000,
            merge_entries: 0,
            moves: true,
        }
    }
}

/// The balancer's record.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Balancing {
    /// When it last looked.
    pub(crate) looked_at: Option<TimeMicros>,
    /// The map version and time of the last split or merge proposed.
    pub(crate) proposed: Option<(MapVersion, TimeMicros)>,
}

impl<S: StateMachine> Host<S> {
    /// The balancer's turn (from [`Host::tick`]).
    pub(crate) fn balance(&mut self, now: TimeMicros) {
        let config = self.config.balancer;
        if !config.enabled || config.split_entries == 0 {
            return;
        }
        if self
            .balancing
            .looked_at
            .is_some_and(|at| now.since(at) < BALANCE_INTERVAL_MICROS)
        {
            return;
        }
        self.balancing.looked_at = Some(now);
        let Some(map) = self.current_map().cloned() else {
            return;
        };
        if let Some((version, at)) = self.balancing.proposed {
            if version == map.version && now.since(at) < CHANGE_RETRY_MICROS {
                return; // the last change has not taken effect yet
            }
        }
        let gone = self.gone_nodes();
        if map
            .partitions
            .values()
            .any(|p| p.replicas.iter().any(|n| gone.contains(n)))
        {
            // Re-homing first (one change at a time): a split now would
            // only give self-healing one more partition to move.
            return;
        }
        let me = self.config.me;
        let also_used: Vec<_> = self.node.streams().keys().copied().collect();
        let split = self
            .replicas
            .iter()
            .filter(|(_, r)| r.map().version == map.version && !r.moved_away())
            // A split waits for a move's hand-off (refused until then).
            .filter(|(p, _)| !map.handing_off.contains_key(p))
            .filter(|(p, _)| proposer(&map, **p, &gone) == Some(me))
            .find_map(|(p, r)| {
                let storage = self.stream_storage(&map, map.partitions[p].stream);
                split_of(
                    &map,
                    *p,
                    r.state(),
                    config.split_entries,
                    &also_used,
                    storage,
                )
            });
        let change = split
            .or_else(|| self.merge_of(&map, &gone, config.merge_entries))
            .or_else(|| self.move_of(&map, config.moves));
        let Some((partition, change)) = change else {
            return;
        };
        let what = match change {
            Reconfiguration::Merge { .. } => {
                self.counters.merges_proposed += 1;
                "merge"
            }
            Reconfiguration::Move { .. } => {
                self.counters.moves_proposed += 1;
                "move"
            }
            _ => {
                self.counters.splits_proposed += 1;
                "split"
            }
        };
        tracing::info!(
            map_version = map.version.0,
            ?change,
            "balancer: proposing a {what}"
        );
        self.balancing.proposed = Some((map.version, now));
        let request = ClientRequest {
            map_version: map.version,
            session: None,
            body: Body::Reconfigure(change),
            // The node's own change: nobody to check.
            principal: None,
        };
        if let Some(replica) = self.replicas.get_mut(&partition) {
            replica.submit(now.0, request);
        }
    }

    /// The merge the balancer proposes, if any: two neighbouring ranges of
    /// a range map held by partitions with the same replicas, this node
    /// the proposer of both, that together hold at most `bound` entries
    /// of all keyspaces. The right one merges into the left.
    fn merge_of(
        &self,
        map: &PartitionMap,
        gone: &[NodeId],
        bound: u64,
    ) -> Option<(PartitionId, Reconfiguration)> {
        if bound == 0 {
            return None;
        }
        let me = self.config.me;
        let held = |p: PartitionId| {
            self.replicas
                .get(&p)
                .filter(|r| r.map().version == map.version && !r.moved_away())
        };
        let total = |p: PartitionId| -> Option<u64> {
            let state = held(p)?.state();
            map.keyspaces
                .keys()
                .map(|name| state.keyspace_entries(name))
                .sum()
        };
        let same_replicas = |a: PartitionId, b: PartitionId| {
            let mut x = map.partitions.get(&a)?.replicas.clone();
            let mut y = map.partitions.get(&b)?.replicas.clone();
            x.sort();
            y.sort();
            Some(x == y)
        };
        for layout in map.keyspaces.values() {
            let Layout::Range(ranges) = layout else {
                continue;
            };
            for pair in ranges.windows(2) {
                let (into, source) = (pair[0].1, pair[1].1);
                if into == source
                    || same_replicas(into, source) != Some(true)
                    || proposer(map, into, gone) != Some(me)
                {
                    continue;
                }
                let (Some(a), Some(b)) = (total(into), total(source)) else {
                    continue;
                };
                if a + b <= bound {
                    return Some((into, Reconfiguration::Merge { source, into }));
                }
            }
        }
        None
    }

    /// The move the balancer proposes, if any (`amulet_smr::next_rebalance`),
    /// with the partition whose replica here submits it: when this node
    /// proposes the cluster's own changes (as self-healing's repairs) and
    /// checkpoints are taken.
    fn move_of(&self, map: &PartitionMap, moves: bool) -> Option<(PartitionId, Reconfiguration)> {
        if !moves || self.checkpointer.every_micros() == 0 {
            return None;
        }
        let live = self.live_if_proposer(map)?;
        let storage_of = |stream| self.stream_storage(map, stream);
        let also_used = self.node.streams().keys().copied();
        let change = amulet_smr::next_rebalance(map, &live, also_used, storage_of)?;
        let (via, _) = self
            .replicas
            .iter()
            .filter(|(_, r)| r.map().version == map.version && !r.moved_away())
            .max_by_key(|(_, r)| r.global_position())?;
        Some((*via, change))
    }

    /// Nodes the view removed or that are leaving (none without
    /// membership).
    fn gone_nodes(&self) -> Vec<NodeId> {
        let Some(membership) = self.membership() else {
            return Vec::new();
        };
        let view = membership.view();
        view.nodes()
            .keys()
            .copied()
            .chain(view.removed().iter().copied())
            .filter(|n| view.gone(*n))
            .collect()
    }
}

/// The replica that proposes `partition`'s splits: its lowest replica the
/// view has not removed and that is not leaving.
fn proposer(map: &PartitionMap, partition: PartitionId, gone: &[NodeId]) -> Option<NodeId> {
    map.partitions
        .get(&partition)?
        .replicas
        .iter()
        .copied()
        .filter(|n| !gone.contains(n))
        .min()
}

/// The split of `partition` the balancer proposes, if it holds more than
/// `bound` entries of a range map: at the map's middle key, into a new
/// partition (the map's next id) on a new stream with the same replicas.
fn split_of<S: StateMachine>(
    map: &PartitionMap,
    partition: PartitionId,
    state: &S,
    bound: u64,
    also_used: &[amulet_types::StreamId],
    storage: StorageMode,
) -> Option<(PartitionId, Reconfiguration)> {
    let info = map.partitions.get(&partition)?;
    for (name, layout) in &map.keyspaces {
        let Layout::Range(ranges) = layout else {
            continue;
        };
        if !ranges.iter().any(|(_, p)| *p == partition) {
            continue;
        }
        let entries = state.keyspace_entries(name)?;
        if entries <= bound {
            continue;
        }
        // The middle key, or the next one when the middle one starts one
        // of the partition's ranges (a cut there would move nothing of
        // that range and is refused).
        let at = (entries / 2..entries)
            .take(2)
            .filter_map(|i| state.keyspace_key_at(name, i))
            .find(|key| !starts_a_range(ranges, key))?;
        let change = Reconfiguration::Split {
            source: partition,
            new: map.next_partition_id(),
            stream: StreamSpec {
                stream: map.next_stream_id(also_used.iter().copied()),
                acceptors: info.replicas.clone(),
                learners: Vec::new(),
                storage,
                base_position: 0,
            },
            at_token: None,
            at_keys: vec![(name.clone(), at)],
        };
        return Some((partition, change));
    }
    None
}

/// Whether `key` is the first key of one of the keyspace's ranges.
fn starts_a_range(ranges: &[(Bytes, PartitionId)], key: &Bytes) -> bool {
    ranges.iter().any(|(start, _)| start == key)
}
