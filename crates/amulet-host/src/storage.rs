//! How the host reaches acceptor logs: the runtime opens them (files in
//! the node, simulated disks in the simulator) and the host writes and
//! syncs them through [`amulet_storage::AcceptorLog`], deciding when (group
//! commit) itself.

use crate::host::HostError;
use amulet_smr::{FenceHost, StreamSpec};
use amulet_storage::AcceptorLog;
use amulet_types::{NodeId, StreamConfig, StreamLimits, TimeMicros};

/// Opens the acceptor logs of streams created at run time (by a
/// reconfiguration, or named by a peer's checkpoint this node installs).
pub trait LogOpener {
    /// Opens `config`'s log: created by a reconfiguration taking effect
    /// now (`created_now`), or reopened (after a restart, or when
    /// installing a peer's checkpoint that merges it). An error stops the
    /// node: it cannot take part in a stream without its log.
    fn open(
        &mut self,
        config: &StreamConfig,
        created_now: bool,
    ) -> Result<Box<dyn AcceptorLog>, String>;
}

/// The configuration of a stream created at run time: its spec, with
/// `limits` (the global stream's).
pub fn runtime_stream_config(spec: &StreamSpec, limits: &StreamLimits) -> StreamConfig {
    StreamConfig {
        stream: spec.stream,
        acceptors: spec.acceptors.clone(),
        learners: spec.learners.clone(),
        storage: spec.storage,
        limits: limits.clone(),
        base_position: spec.base_position,
    }
}

/// Runs `work` with a [`FenceHost`] whose new streams get `limits` and open
/// their logs through `storage` (`created_now`: a reconfiguration creates
/// them now). The first log that cannot be opened is the error: the node
/// stops rather than run a stream without its log.
#[allow(clippy::too_many_arguments)] // one call's worth of context, named
pub(crate) fn with_fence_host<S, R>(
    me: NodeId,
    incarnation: u32,
    new_state: &dyn Fn() -> S,
    limits: &StreamLimits,
    storage: &mut dyn LogOpener,
    created_now: bool,
    now: TimeMicros,
    work: impl FnOnce(&mut FenceHost<'_, S>) -> R,
) -> Result<R, HostError> {
    let mut failed = None;
    let result = {
        let stream_config = |spec: &StreamSpec| runtime_stream_config(spec, limits);
        let mut open_log = |config: &StreamConfig| -> Box<dyn AcceptorLog> {
            match storage.open(config, created_now) {
                Ok(log) => log,
                Err(error) => {
                    failed.get_or_insert(HostError::OpenLog {
                        stream: config.stream.0,
                        error,
                    });
                    // A stand-in the caller never runs: the error stops it.
                    Box::new(amulet_storage::MemoryRing::after_restart(1))
                }
            }
        };
        let mut host = FenceHost {
            me,
            incarnation,
            new_state,
            stream_config: &stream_config,
            open_log: &mut open_log,
            now,
        };
        work(&mut host)
    };
    failed.map_or(Ok(result), Err)
}
