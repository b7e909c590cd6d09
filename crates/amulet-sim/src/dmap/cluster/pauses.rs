//! Process pauses under the DMap workload (Rapid §4.1; the harness's
//! [`crate::harness::Pause`]).

use super::pinned;
use crate::harness::Pause;
use crate::rng::Rng;
use amulet_types::{NodeId, TimeMicros};

/// Process pauses shorter than the monitors' `failure_after` (800 ms
/// here): one to three in a third of the seeds, each of 50 to 700 ms, at a
/// random node, ending at least a second before the heal. A pause this
/// short must not remove anyone by itself (Rapid §4.1), and every checker
/// runs as before: the paused node's timers fire late, and what reached
/// it meanwhile is handled at once when it resumes. A separate generator,
/// so the rest of the seed draws as before.
pub(super) fn draw_pauses(seed: u64, nodes: &[NodeId], safety_end: TimeMicros) -> Vec<Pause> {
    let mut rng = Rng::new(seed ^ 0x7061_7573);
    if !rng.chance(1.0 / 3.0) || safety_end.0 < 3_000_000 || !pinned::new_draws() {
        return Vec::new();
    }
    (0..rng.range(1, 4))
        .filter_map(|_| {
            let node = *rng.pick(nodes)?;
            Some(Pause {
                at: TimeMicros(rng.range(300_000, safety_end.0 - 1_800_000)),
                node,
                micros: rng.range(50_000, 700_001),
            })
        })
        .collect()
}
