//! What makes a replica durable (issue 23, durability): every change of a
//! [`NodeState`] comes from one of a few inputs, and applying the same
//! inputs to the same state gives the same state (nothing reads a clock
//! or draws a number). A runtime appends each input to a journal, syncs it
//! (group commit), and recovers by replaying the synced journal over its
//! last checkpoint (a serialized `NodeState`), so a restarted replica has
//! exactly the clock it had and never issues a dot twice.
//!
//! The runtime's two rules, which the simulator follows and checks:
//! - a coordinated write is synced before its client is answered and
//!   before it is replicated (else a crash reissues its dot for another
//!   value: `amulet-sim --dotted --bug ack-before-sync`);
//! - a sync reply is sent only after every input before it is synced (its
//!   clock feeds the asker's watermark, which prunes dot-key entries; a
//!   reply describing state a crash then loses could let every copy of a
//!   dot-key entry go while a peer still lacks the dot).

use crate::anti_entropy::SyncReply;
use crate::node_state::NodeState;
use crate::object::Object;
use crate::version_vector::VersionVector;
use bytes::Bytes;
use serde::{Deserialize, Serialize};

/// One input that changes a replica's state.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Input {
    /// A client's write or delete coordinated here.
    Coordinate {
        /// The key.
        key: Bytes,
        /// The value (`None`: a delete).
        value: Option<Bytes>,
        /// The client's context.
        context: VersionVector,
    },
    /// A coordinator's replication message.
    Update {
        /// The key.
        key: Bytes,
        /// The coordinator's object.
        object: Object,
    },
    /// A peer's anti-entropy reply.
    ApplySync(SyncReply),
    /// A page of a replacement's full transfer.
    ApplyTransfer(crate::replacement::TransferPage),
    /// A ring change (a replacement elsewhere).
    SetRing(crate::ring::Ring),
    /// A strip pass.
    Strip {
        /// Keys it visits.
        max_keys: usize,
    },
    /// The bases a peer's anti-entropy ask carried (the watermark learns
    /// them as from an answer).
    PeerBases {
        /// The asker.
        peer: crate::dot::ReplicaId,
        /// Its clock's bases.
        bases: Vec<(crate::dot::ReplicaId, u64)>,
    },
    /// A coordinator's skip hint, applied after its replicated object
    /// (`skips.rs`). Last, so the variants before it keep their encoding.
    Skips(crate::skips::Skips),
}

impl NodeState {
    /// Applies `input` exactly as the live call did (recovery replays the
    /// synced journal with it).
    pub fn apply(&mut self, input: &Input) {
        match input {
            Input::Coordinate {
                key,
                value,
                context,
            } => {
                // A replica only journals writes it accepted.
                self.coordinate(key, value.clone(), context)
                    .expect("a journaled write was accepted");
            }
            Input::Update { key, object } => {
                self.update(key, object);
            }
            Input::ApplySync(reply) => {
                self.apply_sync(reply);
            }
            Input::ApplyTransfer(page) => {
                self.apply_transfer(page);
            }
            Input::SetRing(ring) => {
                self.set_ring(ring.clone());
            }
            Input::Strip { max_keys } => {
                self.strip_some(*max_keys);
            }
            Input::PeerBases { peer, bases } => {
                self.note_peer_bases(*peer, bases);
            }
            Input::Skips(skips) => {
                self.note_skips(skips);
            }
        }
    }

    /// The state a restart rebuilds: `checkpoint` with `synced` replayed.
    pub fn recover(checkpoint: &NodeState, synced: &[Input]) -> NodeState {
        let mut state = checkpoint.clone();
        state.issued.reset();
        for input in synced {
            state.apply(input);
        }
        state.check_invariants();
        state
    }

    /// The checkpoint's bytes (postcard).
    pub fn encode_checkpoint(&self) -> Vec<u8> {
        postcard::to_allocvec(self).expect("a replica's state encodes")
    }

    /// A checkpoint from its bytes (total: damaged bytes are an error).
    pub fn decode_checkpoint(bytes: &[u8]) -> Result<NodeState, postcard::Error> {
        let state: NodeState = postcard::from_bytes(bytes)?;
        Ok(state)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{ReplicaId, Ring, SyncBudget};

    fn b(s: &str) -> Bytes {
        Bytes::copy_from_slice(s.as_bytes())
    }

    #[test]
    fn replaying_the_journal_over_a_checkpoint_rebuilds_the_state_exactly() {
        let ring = Ring::new(vec![ReplicaId(1), ReplicaId(2), ReplicaId(3)], 3);
        let mut a = NodeState::new(ReplicaId(1), ring.clone());
        let mut peer = NodeState::new(ReplicaId(2), ring);
        for i in 0..5 {
            peer.coordinate(&b(&format!("p{i}")), Some(b("x")), &VersionVector::new())
                .unwrap();
        }
        let checkpoint = NodeState::decode_checkpoint(&a.encode_checkpoint()).unwrap();
        assert_eq!(checkpoint, a);
        let mut journal = Vec::new();
        let reply = peer.answer_sync(&a.sync_request(peer.id()), SyncBudget::default());
        for input in [
            Input::Coordinate {
                key: b("k"),
                value: Some(b("v")),
                context: VersionVector::new(),
            },
            Input::ApplySync(reply),
            Input::Coordinate {
                key: b("k"),
                value: None,
                context: a.fetch(b"k").read_context(),
            },
            Input::Strip { max_keys: 10 },
        ] {
            a.apply(&input);
            journal.push(input);
        }
        assert_eq!(NodeState::recover(&checkpoint, &journal), a);
        // A restart that lost the last two inputs issues the lost write's
        // dot again: why writes are synced before they are answered.
        let behind = NodeState::recover(&checkpoint, &journal[..2]);
        assert_eq!(behind.clock().base(ReplicaId(1)), 1);
    }

    #[test]
    fn every_damaged_checkpoint_is_an_error_not_a_panic() {
        let ring = Ring::new(vec![ReplicaId(1), ReplicaId(2)], 2);
        let mut a = NodeState::new(ReplicaId(1), ring);
        a.coordinate(&b("k"), Some(b("v")), &VersionVector::new())
            .unwrap();
        let bytes = a.encode_checkpoint();
        for cut in 0..bytes.len() {
            let _ = NodeState::decode_checkpoint(&bytes[..cut]);
        }
        assert!(NodeState::decode_checkpoint(&bytes[..bytes.len() / 2]).is_err());
    }
}
