//! Sessions for operations in flight. A session orders its own commands
//! by sequence number, so it carries one operation at a time; the pool
//! hands each concurrent operation its own.

use crate::rules::Session;
use rand::RngCore;
use std::sync::Mutex;

/// Idle sessions.
#[derive(Debug, Default)]
pub(crate) struct SessionPool {
    idle: Mutex<Vec<Session>>,
}

impl SessionPool {
    /// An idle session, or a fresh one with an id drawn from `rng`.
    pub fn take(&self, rng: &mut (impl RngCore + ?Sized)) -> Session {
        let idle = self.idle.lock().expect("session pool lock").pop();
        idle.unwrap_or_else(|| Session::fresh(rng))
    }

    /// Returns a session after its operation ended.
    pub fn give_back(&self, session: Session) {
        self.idle.lock().expect("session pool lock").push(session);
    }

    /// Takes every idle session (to close them).
    pub fn drain(&self) -> Vec<Session> {
        std::mem::take(&mut *self.idle.lock().expect("session pool lock"))
    }
}
