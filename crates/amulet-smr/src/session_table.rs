//! Client sessions for exactly-once commands (design decision 8).
//!
//! Every command of a session carries an increasing sequence number, and a
//! client sends a session's next command only after the previous one was
//! answered. A replica remembers, per session, the last sequence it
//! executed and the reply, so a retry (same sequence) replays the reply
//! instead of executing again.
//!
//! Multi-partition commands are judged against a separate "global" record
//! that every partition updates for every command of the global stream,
//! involved or not: all partitions see the same global stream, so they all
//! judge such a command alike and either all execute it (and exchange
//! signals) or none does. Sessions are opened, renewed and closed only by
//! global commands and expire by the global stream's clock, for the same
//! reason: expiry must never differ between partitions.

use amulet_types::SessionId;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// What a replica does with a command of a session.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SessionCheck<R> {
    /// A new sequence: execute it.
    Fresh,
    /// The last executed sequence again: answer with its reply (`None`
    /// when this partition was not involved and holds no reply).
    Duplicate(Option<R>),
    /// Below the last executed sequence: the client moved on already.
    Stale,
    /// No such session (never opened, closed, or expired).
    Unknown,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
struct Session<R> {
    expires_at_micros: u64,
    local: Option<(u64, R)>,
    global: Option<(u64, Option<R>)>,
}

/// The sessions a partition knows. Part of the replicated state.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct SessionTable<R> {
    sessions: BTreeMap<SessionId, Session<R>>,
}

impl<R> Default for SessionTable<R> {
    fn default() -> Self {
        SessionTable {
            sessions: BTreeMap::new(),
        }
    }
}

impl<R: Clone> SessionTable<R> {
    /// Open sessions.
    pub fn len(&self) -> usize {
        self.sessions.len()
    }

    /// Whether no session is open.
    pub fn is_empty(&self) -> bool {
        self.sessions.is_empty()
    }

    /// Opens `session`, or renews it if open, until `expires_at_micros` of
    /// global time.
    pub fn open(&mut self, session: SessionId, expires_at_micros: u64) {
        let entry = self.sessions.entry(session).or_insert(Session {
            expires_at_micros,
            local: None,
            global: None,
        });
        entry.expires_at_micros = entry.expires_at_micros.max(expires_at_micros);
    }

    /// Renews an open session; false if it is unknown.
    pub fn renew(&mut self, session: SessionId, expires_at_micros: u64) -> bool {
        match self.sessions.get_mut(&session) {
            Some(entry) => {
                entry.expires_at_micros = entry.expires_at_micros.max(expires_at_micros);
                true
            }
            None => false,
        }
    }

    /// Closes a session.
    pub fn close(&mut self, session: SessionId) {
        self.sessions.remove(&session);
    }

    /// The session whose lease ends first, and when (global time, µs).
    /// Linear in the open sessions: for invariant checks.
    pub fn first_to_expire(&self) -> Option<(SessionId, u64)> {
        self.sessions
            .iter()
            .map(|(id, s)| (*id, s.expires_at_micros))
            .min_by_key(|(_, expires_at_micros)| *expires_at_micros)
    }

    /// Drops sessions whose lease ended by global time `now_micros`.
    pub fn expire(&mut self, now_micros: u64) {
        self.sessions
            .retain(|_, s| s.expires_at_micros > now_micros);
    }

    /// Judges a command of the partition's own stream.
    pub fn check_local(&self, session: SessionId, sequence: u64) -> SessionCheck<R> {
        let Some(entry) = self.sessions.get(&session) else {
            return SessionCheck::Unknown;
        };
        judge(
            entry.local.as_ref().map(|(s, r)| (*s, Some(r.clone()))),
            sequence,
        )
    }

    /// Judges a command of the global stream.
    pub fn check_global(&self, session: SessionId, sequence: u64) -> SessionCheck<R> {
        let Some(entry) = self.sessions.get(&session) else {
            return SessionCheck::Unknown;
        };
        judge(entry.global.clone(), sequence)
    }

    /// Whether `sequence` of `session` was executed here already, on
    /// either stream: `Some(reply)` (the reply if still held) or `None`.
    /// A retried command answered with a stale map must not run again
    /// under the new map, where it may belong to the other stream (a
    /// partition split or merged in between changes what it involves).
    pub fn executed(&self, session: SessionId, sequence: u64) -> Option<Option<R>> {
        let entry = self.sessions.get(&session)?;
        if let Some((s, reply)) = &entry.local {
            if *s == sequence {
                return Some(Some(reply.clone()));
            }
        }
        if let Some((s, reply)) = &entry.global {
            if *s == sequence {
                return Some(reply.clone());
            }
        }
        let last = entry
            .local
            .as_ref()
            .map(|(s, _)| *s)
            .max(entry.global.as_ref().map(|(s, _)| *s))?;
        (sequence < last).then_some(None)
    }

    /// Records the reply to a command of the partition's stream.
    pub fn record_local(&mut self, session: SessionId, sequence: u64, reply: R) {
        if let Some(entry) = self.sessions.get_mut(&session) {
            entry.local = Some((sequence, reply));
        }
    }

    /// Takes in the sessions of a partition merged into this one (at the
    /// same point of the order, so both hold the same sessions and global
    /// records): per session, the later of the two local records, since
    /// a session's commands run one at a time.
    pub fn absorb(&mut self, other: SessionTable<R>) {
        for (id, theirs) in other.sessions {
            match self.sessions.get_mut(&id) {
                Some(mine) => {
                    let later = match (&mine.local, &theirs.local) {
                        (Some((a, _)), Some((b, _))) => b > a,
                        (None, Some(_)) => true,
                        _ => false,
                    };
                    if later {
                        mine.local = theirs.local;
                    }
                    mine.expires_at_micros = mine.expires_at_micros.max(theirs.expires_at_micros);
                }
                None => {
                    self.sessions.insert(id, theirs);
                }
            }
        }
    }

    /// Records a command of the global stream (with its reply where this
    /// partition was involved).
    pub fn record_global(&mut self, session: SessionId, sequence: u64, reply: Option<R>) {
        if let Some(entry) = self.sessions.get_mut(&session) {
            entry.global = Some((sequence, reply));
        }
    }
}

fn judge<R>(last: Option<(u64, Option<R>)>, sequence: u64) -> SessionCheck<R> {
    match last {
        None => SessionCheck::Fresh,
        Some((last, _)) if sequence > last => SessionCheck::Fresh,
        Some((last, reply)) if sequence == last => SessionCheck::Duplicate(reply),
        Some(_) => SessionCheck::Stale,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_retry_replays_the_reply_and_an_old_sequence_is_stale() {
        let mut t = SessionTable::<&str>::default();
        let s = SessionId(7);
        assert_eq!(t.check_local(s, 1), SessionCheck::Unknown);
        t.open(s, 100);
        assert_eq!(t.check_local(s, 1), SessionCheck::Fresh);
        t.record_local(s, 1, "one");
        assert_eq!(t.check_local(s, 1), SessionCheck::Duplicate(Some("one")));
        assert_eq!(t.check_local(s, 2), SessionCheck::Fresh);
        t.record_local(s, 3, "three");
        assert_eq!(t.check_local(s, 2), SessionCheck::Stale);
        // The global record is separate.
        assert_eq!(t.check_global(s, 2), SessionCheck::Fresh);
        t.record_global(s, 2, None);
        assert_eq!(t.check_global(s, 2), SessionCheck::Duplicate(None));
    }

    #[test]
    fn sessions_expire_by_global_time_and_renewal_extends_them() {
        let mut t = SessionTable::<u8>::default();
        t.open(SessionId(1), 100);
        t.open(SessionId(2), 100);
        assert!(t.renew(SessionId(2), 300));
        assert!(!t.renew(SessionId(3), 300));
        t.expire(100);
        assert_eq!(t.check_local(SessionId(1), 1), SessionCheck::Unknown);
        assert_eq!(t.check_local(SessionId(2), 1), SessionCheck::Fresh);
        t.close(SessionId(2));
        assert!(t.is_empty());
    }
}
