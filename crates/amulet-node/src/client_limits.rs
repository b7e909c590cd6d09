//! Limits per client at the client port (docs/security.md), so that no
//! single client can take a node's connections or memory: connections per
//! client (a user's certificate, or the remote address of a connection
//! without one) and requests in flight per user. Over a limit a request is
//! refused with RESOURCE_EXHAUSTED naming the limit; nothing is queued.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// Connections one client may hold open to a node.
pub(crate) const CONNECTIONS_PER_CLIENT_MAX: usize = 256;
/// Requests of one user a node works on at once (an `ExecuteBatch` counts
/// each of its requests).
pub(crate) const IN_FLIGHT_PER_USER_MAX: usize = 8_192;

/// Counts per key; a [`Slot`] gives its unit back when dropped.
#[derive(Default)]
pub(crate) struct Counts {
    held: Mutex<HashMap<String, usize>>,
}

/// One unit of a key's count, held until dropped.
pub(crate) struct Slot {
    counts: Arc<Counts>,
    key: String,
}

impl Counts {
    /// A unit of `key`'s count if fewer than `max` are held.
    pub(crate) fn acquire(self: &Arc<Self>, key: &str, max: usize) -> Option<Slot> {
        let mut held = self.held.lock().expect("limits lock");
        let count = held.entry(key.to_string()).or_insert(0);
        if *count >= max {
            return None;
        }
        *count += 1;
        Some(Slot {
            counts: self.clone(),
            key: key.to_string(),
        })
    }

    #[cfg(test)]
    fn held(&self, key: &str) -> usize {
        self.held
            .lock()
            .expect("limits lock")
            .get(key)
            .copied()
            .unwrap_or(0)
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        let mut held = self.counts.held.lock().expect("limits lock");
        if let Some(count) = held.get_mut(&self.key) {
            *count -= 1;
            if *count == 0 {
                // Keys of clients gone are forgotten: the map stays as
                // small as the set of clients connected now.
                held.remove(&self.key);
            }
        }
    }
}

impl std::fmt::Debug for Slot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Slot({})", self.key)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn security_a_client_over_its_limit_gets_no_slot_until_one_is_given_back() {
        let counts = Arc::new(Counts::default());
        let a: Vec<Slot> = (0..3)
            .map(|_| counts.acquire("alice", 3).unwrap())
            .collect();
        assert!(counts.acquire("alice", 3).is_none());
        assert!(
            counts.acquire("bob", 3).is_some(),
            "another client is not limited by alice"
        );
        drop(a);
        assert_eq!(counts.held("alice"), 0);
        assert!(counts.acquire("alice", 3).is_some());
    }
}
