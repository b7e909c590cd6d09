//! The `[membership]` section (docs/membership.md): whether the node
//! monitors its peers and re-homes removed nodes' partitions, and how long
//! a silent peer is given.

use super::{invalid, ConfigError};
use serde::Deserialize;

/// `[membership]`; every field has a default, and so has a file without
/// the section.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MembershipEntry {
    /// Whether this node runs membership: it monitors its subjects and
    /// proposes alerts and cuts (default true). Every node should agree:
    /// a node that does not monitor leaves its subjects to their other
    /// observers.
    #[serde(default = "yes")]
    pub enabled: bool,
    /// Silence after which an observer reports a peer unreachable, ms
    /// (default 4500: removal within about 5 s of a crash, none for a 4 s
    /// pause). A restart that takes longer removes the node.
    #[serde(default = "default_failure_timeout_ms")]
    pub failure_timeout_ms: u64,
    /// Whether the view's lowest active member moves a removed node's
    /// partitions to live nodes (default true). Turn it off for a rolling
    /// upgrade whose restarts may outlast `failure_timeout_ms`.
    #[serde(default = "yes")]
    pub self_healing: bool,
    /// This node joined a running cluster (`amulet join` writes it,
    /// default false): it may be a member of no configured stream. It
    /// takes its streams, partitions and peers from the view and the
    /// partition maps its peers send, once the view admits it.
    #[serde(default)]
    pub joiner: bool,
}

impl Default for MembershipEntry {
    fn default() -> MembershipEntry {
        MembershipEntry {
            enabled: true,
            failure_timeout_ms: default_failure_timeout_ms(),
            self_healing: true,
            joiner: false,
        }
    }
}

fn yes() -> bool {
    true
}

fn default_failure_timeout_ms() -> u64 {
    4_500
}

/// Shortest and longest failure timeouts accepted, ms: below 0.5 s a GC
/// pause or a busy second removes healthy nodes; above 10 min a dead one
/// is never re-homed in practice.
const FAILURE_TIMEOUT_MS: std::ops::RangeInclusive<u64> = 500..=600_000;

impl MembershipEntry {
    /// Refuses values outside their bounds.
    pub fn validate(&self) -> Result<(), ConfigError> {
        if !FAILURE_TIMEOUT_MS.contains(&self.failure_timeout_ms) {
            return Err(invalid(format!(
                "[membership] failure_timeout_ms = {} is outside {}..={}",
                self.failure_timeout_ms,
                FAILURE_TIMEOUT_MS.start(),
                FAILURE_TIMEOUT_MS.end()
            )));
        }
        Ok(())
    }

    /// The monitor's timing: production's, with this failure timeout.
    pub fn monitor(&self) -> amulet_membership::MonitorConfig {
        amulet_membership::MonitorConfig {
            failure_after_micros: self.failure_timeout_ms * 1_000,
            ..amulet_membership::MonitorConfig::default()
        }
    }
}
