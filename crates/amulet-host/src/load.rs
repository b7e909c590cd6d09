//! Load windows (docs/dynatree.md, "Splits by load"): the balancer's
//! measure of how busy each partition replicated here is, in commands per
//! second over a window (10 s by default), with the sample of keys
//! that says where a hot range's load is halved.
//!
//! Each replica counts what it executes ([`amulet_smr::LoadSample`]); at
//! the balancer's turn the host closes a window that is long enough and
//! starts the next. A window is thrown away, not closed, when the
//! partition's ranges changed during it (a split, a merge, a move): its
//! keys and rate described another range.

use crate::host::Host;
use amulet_smr::{Layout, PartitionMap, StateMachine};
use amulet_types::{PartitionId, TimeMicros};
use bytes::Bytes;
use std::collections::BTreeMap;

/// How long a window is by default (`BalancerConfig::load_window_micros`).
pub const LOAD_WINDOW_MICROS: u64 = 10_000_000;

/// One partition's current window and the last one closed.
#[derive(Clone, Debug, Default)]
pub(crate) struct LoadWindow {
    /// When the current window started (host time).
    started: Option<TimeMicros>,
    /// The partition's ranges when it started: (keyspace, first key).
    ranges: Vec<(String, Bytes)>,
    /// The last window closed with these ranges.
    pub(crate) last: Option<MeasuredLoad>,
}

/// A closed window.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct MeasuredLoad {
    /// Commands executed per second over it.
    pub(crate) ops_per_second: u64,
    /// Its sampled keys by keyspace, sorted.
    pub(crate) keys: BTreeMap<String, Vec<Bytes>>,
}

/// The ranges `partition` holds in `map`, in a form to compare.
fn ranges_of(map: &PartitionMap, partition: PartitionId) -> Vec<(String, Bytes)> {
    let mut ranges = Vec::new();
    for (name, layout) in &map.keyspaces {
        if let Layout::Range(starts) = layout {
            for (start, p) in starts {
                if *p == partition {
                    ranges.push((name.clone(), start.clone()));
                }
            }
        }
    }
    ranges
}

impl<S: StateMachine> Host<S> {
    /// Closes the windows of the replicas of `map` here that are long
    /// enough, and restarts those whose ranges changed.
    pub(crate) fn measure_load(&mut self, map: &PartitionMap, now: TimeMicros) {
        let window_micros = self.config.balancer.load_window_micros.max(1);
        let windows = &mut self.balancing.load;
        windows.retain(|p, _| self.replicas.contains_key(p));
        for (partition, replica) in self.replicas.iter_mut() {
            if replica.map().version != map.version || replica.moved_away() {
                continue;
            }
            let window = windows.entry(*partition).or_default();
            let ranges = ranges_of(map, *partition);
            if window.started.is_none() || window.ranges != ranges {
                *window = LoadWindow {
                    started: Some(now),
                    ranges,
                    last: None,
                };
                replica.reset_load();
                continue;
            }
            let started = window.started.unwrap_or(now);
            let elapsed = now.since(started);
            if elapsed < window_micros {
                continue;
            }
            let load = replica.load();
            let mut keys: BTreeMap<String, Vec<Bytes>> = BTreeMap::new();
            for (keyspace, key) in load.samples() {
                keys.entry(keyspace.to_owned())
                    .or_default()
                    .push(key.clone());
            }
            for sorted in keys.values_mut() {
                sorted.sort();
            }
            let ops_per_second =
                u64::try_from(u128::from(load.ops()) * 1_000_000 / u128::from(elapsed))
                    .unwrap_or(u64::MAX);
            window.last = Some(MeasuredLoad {
                ops_per_second,
                keys,
            });
            window.started = Some(now);
            replica.reset_load();
        }
    }

    /// The load of `partition` over the last window closed, if one closed
    /// since its ranges last changed.
    pub(crate) fn measured_load(&self, partition: PartitionId) -> Option<&MeasuredLoad> {
        self.balancing.load.get(&partition)?.last.as_ref()
    }
}
