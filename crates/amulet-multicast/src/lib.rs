//! Atomic multicast (thesis §2.6, §3.3, §3.4.3).
//!
//! Each stream is a Ring Paxos instance sequence (`amulet-paxos`). A node
//! that learns several streams merges them deterministically: M instances
//! of the first stream (by stream id), then M of the next, and so on, round
//! after round ([`Merger`]). Because every learner uses the same function
//! over the same per-stream sequences, any two learners deliver the values
//! they have in common in the same relative order, and there is no cycle
//! across streams. An idle stream would block the merge, so each stream's
//! coordinator proposes *skips* ([`SkipPacer`]): one instance that counts
//! as `k` instances in the merge, keeping every stream at λ instances/s.
#![deny(missing_docs)]

mod control;
mod group;
mod lane;
mod merger;
mod multicast_node;
mod recovery;
mod skip_pacer;

pub use control::{Control, ControlError, ControlOp, CONTROL_BYTES};
pub use group::GroupId;
pub use merger::{
    LanePosition, LaneState, MergeBug, MergePosition, Merged, Merger, PendingJoin, PositionError,
    SubscriptionEvent,
};
pub use multicast_node::{Effects, MulticastError, MulticastNode, ReconfigureError};
pub use recovery::checkpoint_reaches;
pub use skip_pacer::SkipPacer;
