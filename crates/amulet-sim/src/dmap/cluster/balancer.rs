//! The balancer each DMap seed runs (docs/dynatree.md).

use super::*;

/// The balancer a seed runs: with DMap's clients (`--dmap`) it splits
/// range partitions past 2 to 4 entries (the workload's keys are few), or
/// in half the seeds past 6 to 11 bytes instead, or in a quarter past 5 to
/// 20 commands per second instead, and in half the seeds
/// merges neighbours holding at most half that. Drawn
/// from its own generator, so that the seed's other draws do not depend on
/// it. Paused with the other clients: under a change of the map every
/// second, a command judged by map version (a map drop, say) is refused as
/// stale at every resend, since the client's resends back off to 500 ms
/// (`amulet-sim --logs --seed 19` with it on; docs/dynatree.md).
pub(super) fn balancer_of(seed: u64, kind: ClientKind) -> amulet_host::BalancerConfig {
    let mut rng = Rng::new(seed ^ 0x6261_6C61);
    let enabled = kind == ClientKind::Map;
    let mut split_entries = rng.range(2, 4);
    let mut merge_entries = if rng.chance(0.5) {
        split_entries / 2
    } else {
        0
    };
    // Half the seeds split by size alone: past 6 to 11 bytes of keys and
    // values (the workload's are a few bytes each), cut where the bytes
    // halve, and merge below half of that. Drawn last, so that the other
    // seeds' draws stay as they were.
    let split_bytes = if rng.chance(0.5) { rng.range(6, 11) } else { 0 };
    if split_bytes > 0 {
        split_entries = 1_000;
        if merge_entries > 0 {
            merge_entries = split_entries / 2;
        }
    }
    // Half the other seeds split by load alone: past 5 to 20 commands per
    // second over a load window (the workload's rate per partition is a
    // few tens), cut at the median of the keys the commands named; merges then
    // also need both neighbours cold. Drawn after the others, as above.
    let by_load = split_bytes == 0 && rng.chance(0.5) && LOAD_SPLITS.get();
    let split_ops_per_second = if by_load { rng.range(5, 20) } else { 0 };
    // Seeds run for seconds of virtual time: windows of 1 to 3 s.
    let load_window_micros = rng.range(1, 3) * 1_000_000;
    if by_load {
        split_entries = 1_000;
        if merge_entries > 0 {
            merge_entries = split_entries / 2;
        }
    }
    amulet_host::BalancerConfig {
        enabled,
        split_entries,
        split_bytes,
        merge_entries,
        split_ops_per_second,
        load_window_micros,
        moves: true,
        // The workload's bytes and load are tiny: both always count, so
        // that moves by weight follow the moves by count.
        weigh_bytes_from: 0,
        weigh_ops_per_second_from: 0,
    }
}

thread_local! {
    /// Whether seeds may draw splits by load (see
    /// [`WithoutLoadSplits`]).
    static LOAD_SPLITS: std::cell::Cell<bool> = const { std::cell::Cell::new(true) };
}

/// While it lives, seeds run on this thread draw no splits by load: the
/// balancer they ran before splits by load existed, so that a regression
/// test pinned to a seed keeps the scenario it was found in.
pub struct WithoutLoadSplits(());

impl WithoutLoadSplits {
    /// Turns the draw off on this thread until dropped.
    pub fn new() -> WithoutLoadSplits {
        LOAD_SPLITS.set(false);
        WithoutLoadSplits(())
    }
}

impl Default for WithoutLoadSplits {
    fn default() -> WithoutLoadSplits {
        WithoutLoadSplits::new()
    }
}

impl Drop for WithoutLoadSplits {
    fn drop(&mut self) {
        LOAD_SPLITS.set(true);
    }
}

/// Budgets, in the nemesis, the acceptors of every stream a node's map
/// holds that the run did not start with: the streams the balancer's
/// moves and self-healing create, not only the operator's. Without it
/// the nemesis, budgeting only the groups it knew, crashed two in-memory
/// acceptors of a balancer-made stream one after the other (seed 101:
/// stream 8 of `{n1, n4, n6}` after n4 and n1 restarted), which loses
/// the stream for good, as documented for in-memory acceptors.
pub(super) fn budget_runtime_streams(
    harness: &mut Harness,
    budgeted: &mut std::collections::BTreeSet<StreamId>,
) {
    let mut new = Vec::new();
    for (_, host) in harness.hosts() {
        let Some(map) = host.current_map() else {
            continue;
        };
        for (stream, spec) in &map.streams {
            // A single synced acceptor needs no budget: it is the stream.
            if spec.acceptors.len() > 1 && !budgeted.contains(stream) {
                new.push((*stream, spec.acceptors.clone()));
            }
        }
    }
    for (stream, acceptors) in new {
        if budgeted.insert(stream) {
            harness.nemesis.add_group(CrashGroup::minority(acceptors));
        }
    }
}
