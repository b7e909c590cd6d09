//! Logs in segment files (thesis §3.5.2: DLog keeps recent appends in
//! memory and the rest on disk). A log's entries are replicated state and
//! stay `Bytes` in an `imbl::Vector`; what changes is where those bytes
//! live. A node writes runs of a log's older entries to immutable segment
//! files and re-points the entries at the file's mapping (the same bytes,
//! so replicas stay equal and execution never knows). A checkpoint then
//! names a run as (segment, first index, count) instead of copying it,
//! and a restart maps the segment again.
//!
//! The state machine does no I/O: the node lends this module its segment
//! store for the span of one checkpoint encode or decode
//! ([`with_log_segments`]), as [`amulet_types::checkpoint_format`] lends
//! the file's version. Without one (the simulator, messages between
//! nodes, a checkpoint sent to a peer) every entry is written inline, and
//! a segment run in a file decodes to an error, never a panic.

use bytes::Bytes;
use std::cell::RefCell;
use std::sync::Arc;

/// A node's segment files, as the checkpoint codec sees them.
pub trait LogSegments {
    /// The segment holding `entry`'s bytes and the entry's index in it,
    /// if `entry` lies in a segment file of this node.
    fn locate(&self, entry: &Bytes) -> Option<(u64, u32)>;
    /// Every entry of segment `segment`, in order, or why there are none
    /// (the message names the file).
    fn entries(&self, segment: u64) -> Result<Arc<[Bytes]>, String>;
}

thread_local! {
    static SEGMENTS: RefCell<Option<Arc<dyn LogSegments>>> = const { RefCell::new(None) };
}

/// Runs `code` (a checkpoint encode or decode) with `segments` lent to
/// the logs' codec on this thread.
pub fn with_log_segments<T>(segments: Arc<dyn LogSegments>, code: impl FnOnce() -> T) -> T {
    let before = SEGMENTS.with(|s| s.replace(Some(segments)));
    let result = code();
    SEGMENTS.with(|s| *s.borrow_mut() = before);
    result
}

/// The segments lent to this thread, if any.
pub(crate) fn lent() -> Option<Arc<dyn LogSegments>> {
    SEGMENTS.with(|s| s.borrow().clone())
}
