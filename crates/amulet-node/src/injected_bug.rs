//! Deliberately injected bugs, compiled only with the `inject-bugs` cargo
//! feature: the real-process fault suite builds such a binary for
//! `tests/fault/run --bug local-reads` to show that its checkers catch a
//! replica that answers reads from its own state without ordering them.
//! A binary built without the feature ignores the variable.

use amulet_dmap::PartitionState;
use amulet_smr::Replica;

/// The environment variable naming the bug (`local-reads`).
pub const INJECT_BUG_VARIABLE: &str = "AMULET_INJECT_BUG";

/// Turns on the bug the environment names, if this binary was built to
/// carry it.
pub(crate) fn apply(replica: &mut Replica<PartitionState>) {
    if cfg!(feature = "inject-bugs")
        && std::env::var(INJECT_BUG_VARIABLE).as_deref() == Ok("local-reads")
    {
        tracing::warn!("injected bug: this replica answers reads without ordering them");
        replica.set_bug_answer_reads_locally(true);
    }
}
