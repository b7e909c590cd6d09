//! Deliberately injected bugs, compiled only with the `inject-bugs` cargo
//! feature: the real-process fault suite builds such a binary for
//! `tests/fault/run --bug local-reads` to show that its checkers catch a
//! replica that answers reads from its own state without ordering them.
//! A binary built without the feature ignores the variable.

/// The environment variable naming the bug (`local-reads`).
pub const INJECT_BUG_VARIABLE: &str = "AMULET_INJECT_BUG";

/// The replica bugs the environment names, if this binary was built to
/// carry them (none otherwise).
pub(crate) fn replica_bugs() -> amulet_host::ReplicaBugs {
    let local_reads = cfg!(feature = "inject-bugs")
        && std::env::var(INJECT_BUG_VARIABLE).as_deref() == Ok("local-reads");
    if local_reads {
        tracing::warn!("injected bug: replicas answer reads without ordering them");
    }
    amulet_host::ReplicaBugs {
        answer_reads_locally: local_reads,
        ..amulet_host::ReplicaBugs::default()
    }
}
