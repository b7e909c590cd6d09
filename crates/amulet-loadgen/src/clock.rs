//! Wall-clock time for the load generator (the only place it reads clocks;
//! the workspace's clippy.toml keeps clocks out of the protocol cores).

use std::time::{Instant, SystemTime, UNIX_EPOCH};

/// The current instant.
#[allow(clippy::disallowed_methods)]
pub fn now() -> Instant {
    Instant::now()
}

/// Seconds since the Unix epoch.
#[allow(clippy::disallowed_methods)]
pub fn unix_seconds() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}
