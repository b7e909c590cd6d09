//! A client session (DMap §III-B): commands carry (session, sequence), so
//! a replica executes a resent command once and answers the resend with
//! the reply it recorded. A session orders its own commands by sequence,
//! so it carries one operation at a time.

use amulet_types::{NodeId, SessionId, TimeMicros};
use rand::RngCore;

/// One session as the client sees it.
#[derive(Clone, Debug)]
pub struct Session {
    /// Never 0 (0 means "no session" on the wire).
    id: SessionId,
    /// Sequence of the current (or next) operation; the first is 1.
    sequence: u64,
    /// When the cluster last opened or renewed it, by the client's clock
    /// (the time the request was sent, so the lease is never
    /// overestimated); `None` while it is not open.
    renewed_at: Option<TimeMicros>,
    /// The replica this session's last command attempt failed at.
    failed_at: Option<NodeId>,
}

impl Session {
    /// A fresh, not yet opened session with a random id.
    pub fn fresh(rng: &mut (impl RngCore + ?Sized)) -> Session {
        Session::with_id(SessionId(rng.next_u64().max(1)))
    }

    /// A fresh, not yet opened session with the given id (not 0).
    pub fn with_id(id: SessionId) -> Session {
        assert!(id.0 != 0, "session id 0 means no session");
        Session {
            id,
            sequence: 1,
            renewed_at: None,
            failed_at: None,
        }
    }

    /// The session's id.
    pub fn id(&self) -> SessionId {
        self.id
    }

    /// The sequence the current operation's attempts carry.
    pub fn sequence(&self) -> u64 {
        self.sequence
    }

    /// Whether the cluster has opened it (as far as the client knows).
    pub fn is_open(&self) -> bool {
        self.renewed_at.is_some()
    }

    /// Whether the session must be opened (or renewed) before the next
    /// command: it is not open, or more than half of `lease_micros`
    /// elapsed since it was last renewed, so that it cannot expire in
    /// the middle of an operation's attempts.
    pub fn needs_opening(&self, now: TimeMicros, lease_micros: u64) -> bool {
        match self.renewed_at {
            None => true,
            Some(at) => now.since(at) > lease_micros / 2,
        }
    }

    /// The cluster opened or renewed the session; the request was sent at
    /// `sent_at`.
    pub fn opened(&mut self, sent_at: TimeMicros) {
        self.renewed_at = Some(sent_at);
    }

    /// A replica no longer knows the session (expired, closed, or a
    /// command overtook the opening in its partition's merge): open it
    /// again before the next command.
    pub fn expired(&mut self) {
        self.renewed_at = None;
    }

    /// The replica the last command attempt failed at (`None` after a
    /// success).
    pub fn failed_at(&self) -> Option<NodeId> {
        self.failed_at
    }

    pub(crate) fn set_failed_at(&mut self, node: Option<NodeId>) {
        self.failed_at = node;
    }

    /// The operation ended, whatever happened (done, failed, given up):
    /// its sequence is used up, so a later operation is never mistaken
    /// for a resend of this one (which the replica would answer with
    /// this one's recorded reply).
    pub fn end_operation(&mut self) {
        self.sequence += 1;
    }
}
