//! Deliberately injected bugs, compiled only with the `inject-bugs` cargo
//! feature: the real-process fault suite builds such a binary for
//! `tests/fault/run --bug local-reads` to show that its checkers catch a
//! replica that answers reads from its own state without ordering them,
//! and `--bug tail-skips` that its log tailers catch tail reads that
//! start one entry late.
//! A binary built without the feature ignores the variable.

/// The environment variable naming the bug (`local-reads`, `tail-skips`).
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

/// The host bugs the environment names, if this binary was built to
/// carry them (none otherwise).
pub(crate) fn host_bugs() -> amulet_host::HostBugs {
    let tail_skips = cfg!(feature = "inject-bugs")
        && std::env::var(INJECT_BUG_VARIABLE).as_deref() == Ok("tail-skips");
    if tail_skips {
        tracing::warn!("injected bug: log tail reads from inside a log start one entry late");
    }
    amulet_host::HostBugs {
        tail_skips_an_entry: tail_skips,
        ..amulet_host::HostBugs::default()
    }
}
