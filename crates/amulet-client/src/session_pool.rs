//! Sessions for operations in flight. A session orders its own commands
//! by sequence number, so it carries one operation at a time; the pool
//! hands each concurrent operation its own.

use std::sync::Mutex;
use std::time::Instant;

/// A session and its next sequence number.
#[derive(Debug)]
pub(crate) struct SessionSlot {
    /// Random, never 0.
    pub id: u64,
    /// Sequence of the next operation (the first is 1).
    pub next_sequence: u64,
    /// When the cluster last renewed it (open or keep-alive), by this
    /// client's clock.
    pub renewed: Instant,
    /// Whether the cluster has opened it.
    pub open: bool,
    /// The replica the last attempt failed at: the next attempt goes to
    /// another one when the partition has one (a replica that is down or
    /// catching up should not get the resend too).
    pub failed_at: Option<String>,
}

impl SessionSlot {
    /// A fresh, not yet opened session.
    pub fn fresh() -> SessionSlot {
        SessionSlot {
            id: rand::random::<u64>().max(1),
            next_sequence: 1,
            renewed: Instant::now(),
            open: false,
            failed_at: None,
        }
    }
}

/// Idle sessions.
#[derive(Debug, Default)]
pub(crate) struct SessionPool {
    idle: Mutex<Vec<SessionSlot>>,
}

impl SessionPool {
    /// An idle session, or a fresh one.
    pub fn take(&self) -> SessionSlot {
        self.idle
            .lock()
            .expect("session pool lock")
            .pop()
            .unwrap_or_else(SessionSlot::fresh)
    }

    /// Returns a session after its operation ended.
    pub fn give_back(&self, slot: SessionSlot) {
        self.idle.lock().expect("session pool lock").push(slot);
    }

    /// Takes every idle session (to close them).
    pub fn drain(&self) -> Vec<SessionSlot> {
        std::mem::take(&mut *self.idle.lock().expect("session pool lock"))
    }
}
