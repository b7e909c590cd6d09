//! Wall-clock time for the benchmark driver (the only place it reads clocks).

use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

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

/// A point in time that bounds a loop.
#[derive(Clone, Copy, Debug)]
pub struct Deadline(Instant);

impl Deadline {
    pub fn after(d: Duration) -> Deadline {
        Deadline(now() + d)
    }

    pub fn passed(&self) -> bool {
        now() >= self.0
    }
}
