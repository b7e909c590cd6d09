//! The balancer each DMap seed runs (docs/dynatree.md).

use super::*;

/// The balancer a seed runs: with DMap's clients (`--dmap`) it splits
/// range partitions past 2 to 4 entries (the workload's keys are few), and
/// in half the seeds merges neighbours holding at most half that. Drawn
/// from its own generator, so that the seed's other draws do not depend on
/// it. Paused with the other clients: under a change of the map every
/// second, a command judged by map version (a map drop, say) is refused as
/// stale at every resend, since the client's resends back off to 500 ms
/// (`amulet-sim --logs --seed 19` with it on; docs/dynatree.md).
pub(super) fn balancer_of(seed: u64, kind: ClientKind) -> amulet_host::BalancerConfig {
    let mut rng = Rng::new(seed ^ 0x6261_6C61);
    let enabled = kind == ClientKind::Map;
    let split_entries = rng.range(2, 4);
    let merge_entries = if rng.chance(0.5) {
        split_entries / 2
    } else {
        0
    };
    amulet_host::BalancerConfig {
        enabled,
        split_entries,
        merge_entries,
    }
}
