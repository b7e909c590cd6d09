//! The balancer (docs/dynatree.md; DynaTree's oracle): a range partition
//! holding more than `split_entries` entries of one range map is split at
//! its middle key, and one holding more than `split_bytes` bytes of its
//! keys and values at the key that halves them, with no operator command,
//! so a map created with one partition grows to many as data arrives; two
//! neighbouring ranges that together hold at most `merge_entries` (and
//! half of `split_bytes`) are merged back.
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
use crate::load::{LoadWindow, MeasuredLoad};
use amulet_smr::{Body, ClientRequest, Layout, PartitionMap, Reconfiguration, StateMachine};
use amulet_types::{MapVersion, NodeId, PartitionId, StorageMode, TimeMicros};
use bytes::Bytes;
use std::collections::BTreeMap;

/// How often the balancer looks at the partitions it proposes for.
pub(crate) const BALANCE_INTERVAL_MICROS: u64 = 1_000_000;

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
    /// A partition holding more than this many bytes of keys and values
    /// of one range map is split at the key that halves them; 0: never
    /// by size. Merges keep below half of it.
    pub split_bytes: u64,
    /// Two neighbouring ranges of a range map, held by partitions with the
    /// same replicas, that together hold at most this many entries (of
    /// every map) are merged into one partition; 0: never. At most half of
    /// `split_entries`, so a merged partition must double before it
    /// splits again (no flapping).
    pub merge_entries: u64,
    /// A range partition executing more than this many commands per
    /// second over a load window (`crate::LOAD_WINDOW_MICROS`) is split at
    /// the median key of its load, not of its size; 0: never by load.
    /// With it, merges also need both neighbours cold: together at most
    /// half of it.
    pub split_ops_per_second: u64,
    /// How long a load window is, µs (default
    /// [`crate::LOAD_WINDOW_MICROS`]): long enough that a burst does not
    /// split a range, short enough that a range turned hot splits soon.
    pub load_window_micros: u64,
    /// Whether a node replicating at least two partitions more than
    /// another gives one of them to it (`amulet_smr::next_rebalance`),
    /// proposed by the node that proposes self-healing's repairs. Needs
    /// membership and checkpoints (a move's state travels as one).
    pub moves: bool,
    /// Moves by weight (`amulet_smr::next_weight_move`) count the nodes'
    /// bytes once the cluster's partitions hold this many together (a
    /// few kilobytes of difference are not worth a replica's move).
    pub weigh_bytes_from: u64,
    /// ... and their load once the partitions execute this many commands
    /// per second together.
    pub weigh_ops_per_second_from: u64,
}

impl Default for BalancerConfig {
    fn default() -> BalancerConfig {
        BalancerConfig {
            enabled: true,
            split_entries: 1_000_000,
            split_bytes: 256 * 1024 * 1024,
            merge_entries: 0,
            split_ops_per_second: 0,
            load_window_micros: crate::LOAD_WINDOW_MICROS,
            moves: true,
            weigh_bytes_from: 64 * 1024 * 1024,
            weigh_ops_per_second_from: 1_000,
        }
    }
}

/// A change in a line an operator reads: partitions, the cut, the
/// replicas.
fn describe(change: &Reconfiguration) -> String {
    let key = |k: &Bytes| match std::str::from_utf8(k) {
        Ok(text) if !text.chars().any(char::is_control) => format!("{text:?}"),
        _ => format!(
            "0x{}",
            k.iter().map(|b| format!("{b:02x}")).collect::<String>()
        ),
    };
    match change {
        Reconfiguration::Split {
            source,
            new,
            at_token,
            at_keys,
            ..
        } => {
            let cuts: Vec<String> = at_keys
                .iter()
                .map(|(map, k)| format!("{map} at {}", key(k)))
                .chain(at_token.map(|t| format!("token {t}")))
                .collect();
            format!("p{} -> p{}, {}", source.0, new.0, cuts.join(", "))
        }
        Reconfiguration::Merge { source, into } => format!("p{} into p{}", source.0, into.0),
        Reconfiguration::ReplaceStream { partition, stream } => {
            format!("p{} to stream {}", partition.0, stream.stream.0)
        }
        Reconfiguration::Move {
            partition,
            replicas,
            ..
        } => format!(
            "p{} to nodes {:?}",
            partition.0,
            replicas.iter().map(|n| n.0).collect::<Vec<_>>()
        ),
        Reconfiguration::ReplaceGlobalStream { stream } => {
            format!("global stream to stream {}", stream.stream.0)
        }
    }
}

/// Decisions kept for `amulet status` (the newest; older ones are in the
/// node's log).
pub const BALANCER_DECISIONS_KEPT: usize = 16;

/// A change the balancer proposed here (docs/dynatree.md, "Pause and
/// decisions").
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BalancerDecision {
    /// When, by the host's clock.
    pub at: TimeMicros,
    /// The map version it was built on (it takes effect as the next one
    /// unless another change came first).
    pub map_version: u64,
    /// "split", "split by load", "tail split", "merge", "move" or "move
    /// by weight".
    pub kind: &'static str,
    /// The partition it was proposed for.
    pub partition: PartitionId,
    /// The change itself, as logged.
    pub change: String,
}

/// The balancer's record.
#[derive(Clone, Debug, Default)]
pub(crate) struct Balancing {
    /// The operator's pause at run time (`amulet balancer pause`), over
    /// the file's `enabled`: `None` until set.
    pub(crate) enabled_override: Option<bool>,
    /// The last decisions, oldest first.
    pub(crate) decisions: std::collections::VecDeque<BalancerDecision>,
    /// When it last looked.
    pub(crate) looked_at: Option<TimeMicros>,
    /// When this node last sent its weight report (`crate::weight_reports`).
    pub(crate) reported_at: Option<TimeMicros>,
    /// The map version and time of the last split or merge proposed.
    pub(crate) proposed: Option<(MapVersion, TimeMicros)>,
    /// The load windows of the partitions replicated here (with
    /// `split_ops_per_second`).
    pub(crate) load: BTreeMap<PartitionId, LoadWindow>,
    /// The nodes' last weight reports (kept by the proposer of the
    /// cluster's changes; `crate::weight_reports`).
    pub(crate) reports: BTreeMap<NodeId, crate::weight_reports::WeightReport>,
    /// Peers' weight reports received.
    pub(crate) reports_received: u64,
}

impl<S: StateMachine> Host<S> {
    /// Whether this node's balancer proposes changes: the operator's
    /// run-time switch if set, else the file's `[balancer] enabled`.
    pub fn balancer_enabled(&self) -> bool {
        self.balancing
            .enabled_override
            .unwrap_or(self.config.balancer.enabled)
    }

    /// Pauses (`false`) or resumes (`true`) this node's balancer at run
    /// time. A change already proposed still takes effect.
    pub fn set_balancer_enabled(&mut self, enabled: bool) {
        if self.balancer_enabled() != enabled {
            tracing::info!(enabled, "balancer switched by the operator");
        }
        self.balancing.enabled_override = Some(enabled);
    }

    /// The balancer's last decisions here, oldest first (at most
    /// [`BALANCER_DECISIONS_KEPT`]).
    pub fn balancer_decisions(&self) -> Vec<BalancerDecision> {
        self.balancing.decisions.iter().cloned().collect()
    }

    /// The balancer's turn (from [`Host::tick`]).
    pub(crate) fn balance(&mut self, now: TimeMicros) {
        let config = self.config.balancer;
        if !self.balancer_enabled() || config.split_entries == 0 {
            return;
        }
        // The broken variant reports as the balancer did before reports
        // counted: at its turn only (below).
        let silent_too = self.config.bugs.balancer_moves_to_silent_nodes;
        if config.moves && !silent_too {
            self.report_weights(now);
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
        // Always: besides splits by load, a window's keys tell a tail
        // written in order (sequential inserts) from one written all over.
        self.measure_load(&map, now);
        if config.moves && silent_too {
            self.report_weights(now);
        }
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
                let load = self.measured_load(*p);
                split_of(&map, *p, r.state(), load, &config, &also_used, storage)
            });
        let split_by = split.as_ref().map(|(_, _, by)| *by);
        let merge = || self.merge_of(&map, &gone, &config);
        let mut change = split
            .map(|(partition, change, _)| (partition, change))
            .or_else(merge)
            .map(|c| (c, false));
        if change.is_none() && config.moves {
            let (weights, latest) = self.reported_weights(&map, now);
            change = self.move_of(&map, &weights, &latest, now);
        }
        let Some(((partition, change), by_weight)) = change else {
            return;
        };
        let what = match change {
            Reconfiguration::Split { .. } if split_by == Some(SplitBy::Load) => {
                self.counters.splits_proposed += 1;
                self.counters.load_splits_proposed += 1;
                "split by load"
            }
            Reconfiguration::Split { .. } if split_by == Some(SplitBy::Tail) => {
                self.counters.splits_proposed += 1;
                self.counters.tail_splits_proposed += 1;
                "tail split"
            }
            Reconfiguration::Merge { .. } => {
                self.counters.merges_proposed += 1;
                "merge"
            }
            Reconfiguration::Move { .. } if by_weight => {
                self.counters.moves_proposed += 1;
                self.counters.weight_moves_proposed += 1;
                "move by weight"
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
        if self.balancing.decisions.len() == BALANCER_DECISIONS_KEPT {
            self.balancing.decisions.pop_front();
        }
        self.balancing.decisions.push_back(BalancerDecision {
            at: now,
            map_version: map.version.0,
            kind: what,
            partition,
            change: describe(&change),
        });
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
    /// the proposer of both, that together hold at most `merge_entries`
    /// entries of all keyspaces (and, with `split_bytes`, at most half of
    /// it in bytes: a merged partition must double before it splits
    /// again). The right one merges into the left.
    fn merge_of(
        &self,
        map: &PartitionMap,
        gone: &[NodeId],
        config: &BalancerConfig,
    ) -> Option<(PartitionId, Reconfiguration)> {
        let bound = config.merge_entries;
        if bound == 0 {
            return None;
        }
        let bytes_bound = match config.split_bytes {
            0 => u64::MAX,
            split => split / 2,
        };
        let me = self.config.me;
        let held = |p: PartitionId| {
            self.replicas
                .get(&p)
                .filter(|r| r.map().version == map.version && !r.moved_away())
        };
        let total = |p: PartitionId| -> Option<(u64, u64)> {
            let state = held(p)?.state();
            let entries: u64 = map
                .keyspaces
                .keys()
                .map(|name| state.keyspace_entries(name))
                .sum::<Option<u64>>()?;
            Some((entries, bytes_of(map, state)))
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
                if !self.cold(into, source, config) {
                    continue;
                }
                if a.0 + b.0 <= bound && a.1.saturating_add(b.1) <= bytes_bound {
                    return Some((into, Reconfiguration::Merge { source, into }));
                }
            }
        }
        None
    }

    /// Whether two neighbours are cold enough to merge: with splits by
    /// load, both measured over a window and together at most half the
    /// bound (a merged partition must double its load to split again).
    fn cold(&self, a: PartitionId, b: PartitionId, config: &BalancerConfig) -> bool {
        let bound = config.split_ops_per_second;
        if bound == 0 {
            return true;
        }
        let (Some(x), Some(y)) = (self.measured_load(a), self.measured_load(b)) else {
            return false;
        };
        x.ops_per_second.saturating_add(y.ops_per_second) <= bound / 2
    }

    /// The move the balancer proposes, if any: one that evens out the
    /// partitions per node (`amulet_smr::next_rebalance`), else one that
    /// evens out their weights by the nodes' reports of `map`'s version
    /// (`amulet_smr::next_weight_move`; then `true`; `latest`, the
    /// reports of any version, choose the partition a move by count
    /// takes), with the partition
    /// whose replica here submits it: when this node proposes the
    /// cluster's own changes (as self-healing's repairs) and checkpoints
    /// are taken. Only nodes that reported `map` lately take part
    /// (`Host::reporting_lately`): a partition with a replica on another
    /// stays where it is, as it does with one on a node the view removed.
    #[allow(clippy::type_complexity)]
    fn move_of(
        &self,
        map: &PartitionMap,
        weights: &BTreeMap<PartitionId, u64>,
        latest: &BTreeMap<PartitionId, u64>,
        now: TimeMicros,
    ) -> Option<((PartitionId, Reconfiguration), bool)> {
        if self.checkpointer.every_micros() == 0 {
            return None;
        }
        let mut live = self.live_if_proposer(map)?;
        let reporting = self.reporting_lately(now);
        if !self.config.bugs.balancer_moves_to_silent_nodes {
            live.retain(|n| reporting.contains(n));
        }
        let storage_of = |stream| self.stream_storage(map, stream);
        let also_used: Vec<_> = self.node.streams().keys().copied().collect();
        let weight_of = |p: PartitionId| latest.get(&p).copied();
        let by_count = amulet_smr::next_rebalance(
            map,
            &live,
            also_used.iter().copied(),
            storage_of,
            weight_of,
        );
        let (change, by_weight) = match by_count {
            Some(change) => (change, false),
            None => {
                let change =
                    amulet_smr::next_weight_move(map, &live, &also_used, storage_of, weights)?;
                (change, true)
            }
        };
        let (via, _) = self
            .replicas
            .iter()
            .filter(|(_, r)| r.map().version == map.version && !r.moved_away())
            .max_by_key(|(_, r)| r.global_position())?;
        Some(((*via, change), by_weight))
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

/// The bytes of keys and values `state` holds of every map of `map` (a
/// service without byte sizes counts none).
pub(crate) fn bytes_of<S: StateMachine>(map: &PartitionMap, state: &S) -> u64 {
    map.keyspaces
        .keys()
        .map(|name| state.keyspace_bytes(name).unwrap_or(0))
        .fold(0, u64::saturating_add)
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

/// Why the balancer cuts a partition.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum SplitBy {
    /// Its entries or bytes of one range map passed the bound.
    Size,
    /// It executed more commands per second than the bound.
    Load,
    /// Past the size bound, and it holds the map's tail written in key
    /// order: cut where the last window's writes start.
    Tail,
}

/// The split of `partition` the balancer proposes, if it holds more than
/// `split_entries` entries of a range map (at the map's middle key) or
/// more than `split_bytes` bytes of its keys and values (at the key that
/// halves them), or else executed more than `split_ops_per_second` over
/// its last load window (at the median key of that load), into a new
/// partition (the map's next id) on a new stream with the same replicas;
/// with what it is by.
fn split_of<S: StateMachine>(
    map: &PartitionMap,
    partition: PartitionId,
    state: &S,
    load: Option<&MeasuredLoad>,
    config: &BalancerConfig,
    also_used: &[amulet_types::StreamId],
    storage: StorageMode,
) -> Option<(PartitionId, Reconfiguration, SplitBy)> {
    let hot = load.filter(|l| {
        config.split_ops_per_second > 0 && l.ops_per_second > config.split_ops_per_second
    });
    for (name, layout) in &map.keyspaces {
        let Layout::Range(ranges) = layout else {
            continue;
        };
        if !ranges.iter().any(|(_, p)| *p == partition) {
            continue;
        }
        let entries = state.keyspace_entries(name)?;
        let bytes = state.keyspace_bytes(name).unwrap_or(0);
        let by_bytes = config.split_bytes > 0 && bytes > config.split_bytes;
        let over_entries = entries > config.split_entries;
        let window_keys = load
            .and_then(|l| l.keys.get(name))
            .filter(|keys| keys.len() >= LOAD_CUT_SAMPLES_MIN);
        let hot_keys = hot.and(window_keys);
        if !over_entries && !by_bytes && hot_keys.is_none() {
            continue;
        }
        // A cut at a key that starts one of the partition's ranges would
        // move nothing of that range and is refused: then the next key.
        let middle = || {
            (entries / 2..entries)
                .take(2)
                .filter_map(|i| state.keyspace_key_at(name, i))
                .find(|key| !amulet_smr::starts_range(ranges, key))
        };
        let halving = || {
            state
                .keyspace_key_after_bytes(name, bytes / 2)
                .filter(|key| !amulet_smr::starts_range(ranges, key))
        };
        // Over the byte bound, the cut halves the bytes (a few large
        // values make the middle key a poor cut); else the entries; else,
        // hot, the load (a hot range of a small map splits where its
        // commands halve, not its keys).
        let by_size = by_bytes
            .then(halving)
            .flatten()
            .or_else(|| over_entries.then(middle).flatten());
        let by_load = || {
            let keys = hot_keys?;
            amulet_smr::load_median(keys, |key| !amulet_smr::starts_range(ranges, key))
        };
        // The map's last range, whose last window touched only keys above
        // its median: sequential inserts (a window shorter than half the
        // partition's fill time; a longer one reaches below the median
        // and reads as writes all over). A cut at the middle would leave
        // a left half never written again at half the bound, every time;
        // this cut leaves nine tenths of the bound behind (at least half
        // the partition) and hands the tail, where the inserts go, to the
        // new partition, small. B+trees split their rightmost leaf the
        // same way under appends. By entries only: a cut near the end
        // does not halve bytes.
        let tail = || {
            let (_, last) = ranges.last()?;
            let keys = window_keys.filter(|_| *last == partition)?;
            let median = state.keyspace_key_at(name, entries / 2)?;
            if *keys.first()? <= median {
                return None;
            }
            let keep =
                (config.split_entries.saturating_mul(9) / 10).clamp(entries / 2, entries - 1);
            state
                .keyspace_key_at(name, keep)
                .filter(|key| !amulet_smr::starts_range(ranges, key))
        };
        let cut = (over_entries && !by_bytes)
            .then(tail)
            .flatten()
            .map(|at| (at, SplitBy::Tail))
            .or_else(|| by_size.map(|at| (at, SplitBy::Size)))
            .or_else(|| by_load().map(|at| (at, SplitBy::Load)));
        // None: one entry larger than the bound, one hot key, or every
        // candidate starts a range: nothing to cut here.
        let Some((at, split_by)) = cut else {
            continue;
        };
        let change = Reconfiguration::split_at_key(
            map,
            partition,
            name,
            at,
            storage,
            also_used.iter().copied(),
        )?;
        return Some((partition, change, split_by));
    }
    None
}

/// Sampled keys a cut by load needs at least: fewer say little of where
/// the load falls.
const LOAD_CUT_SAMPLES_MIN: usize = 4;

#[cfg(test)]
mod tests;
