//! What a [`crate::Client`] takes from its environment: a monotonic clock
//! and a random generator. The client's rules ([`crate::rules`]) decide
//! with what these give (deadlines, session renewal, replica choice), so
//! a test or a simulation can pass its own.

use amulet_types::TimeMicros;
use rand::{RngCore, SeedableRng};
use std::fmt;
use std::sync::Arc;

/// A monotonic clock.
pub trait Clock: Send + Sync + 'static {
    /// Microseconds since some fixed origin; never goes back.
    fn now(&self) -> TimeMicros;
}

/// Tokio's clock (which a test can pause and advance), counted from the
/// clock's creation.
#[derive(Clone, Copy, Debug)]
pub struct TokioClock {
    origin: tokio::time::Instant,
}

impl TokioClock {
    /// A clock whose origin is now.
    pub fn new() -> TokioClock {
        TokioClock {
            origin: tokio::time::Instant::now(),
        }
    }
}

impl Default for TokioClock {
    fn default() -> TokioClock {
        TokioClock::new()
    }
}

impl Clock for TokioClock {
    fn now(&self) -> TimeMicros {
        let elapsed = tokio::time::Instant::now().duration_since(self.origin);
        TimeMicros(u64::try_from(elapsed.as_micros()).unwrap_or(u64::MAX))
    }
}

/// A client's clock and random generator.
pub struct ClientEnv {
    /// Deadlines and session leases are measured by it.
    pub clock: Arc<dyn Clock>,
    /// Session ids and replica choices are drawn from it.
    pub rng: Box<dyn RngCore + Send>,
}

impl ClientEnv {
    /// Tokio's clock and a generator seeded from the operating system.
    pub fn real() -> ClientEnv {
        ClientEnv {
            clock: Arc::new(TokioClock::new()),
            rng: Box::new(rand::rngs::StdRng::from_os_rng()),
        }
    }
}

impl Default for ClientEnv {
    fn default() -> ClientEnv {
        ClientEnv::real()
    }
}

impl fmt::Debug for ClientEnv {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ClientEnv")
            .field("now", &self.clock.now())
            .finish_non_exhaustive()
    }
}
