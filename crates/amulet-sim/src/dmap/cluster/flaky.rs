//! A node with lossy links under the DMap workload (Rapid §4.1: a node
//! that is flaky, not dead, must not be removed, and must not make its
//! observers remove others; the membership swarm checks it against a
//! modelled global stream, this checks it with the real host).

use super::pinned;
use crate::rng::Rng;
use amulet_types::NodeId;

/// In three seeds of ten, one random node whose every link loses 1 to 5%
/// of its messages, both ways, from the start until the heal, on top of
/// the network's own loss. Its observers see it miss a probe now and then
/// but never for the `failure_after` of 800 ms, so the accuracy checker
/// (`check_no_false_removal`) still says no one is removed in a seed
/// without crashes or partitions. A separate generator, so a seed without
/// a flaky node draws as before.
pub(super) fn draw_flaky(seed: u64, nodes: &[NodeId]) -> Option<(NodeId, f64)> {
    let mut rng = Rng::new(seed ^ 0x666C_616B);
    if !rng.chance(0.3) || !pinned::new_draws() {
        return None;
    }
    let node = *rng.pick(nodes)?;
    let share = f64::from(rng.range(1, 6) as u32) / 100.0;
    Some((node, share))
}
