//! What a replicated service provides to the replication layer.

use crate::{Layout, Placement};
use serde::de::DeserializeOwned;
use serde::Serialize;
use std::fmt::Debug;

/// What execution may depend on besides the command. All of it is decided
/// by the order, so every replica computes the same.
pub struct ExecContext<'a> {
    /// Replicated time, µs: the greatest timestamp carried by a command
    /// this replica executed. Never a local clock.
    pub now_micros: u64,
    /// Commands of the global stream delivered so far, this one included:
    /// the same number at every partition for the same command.
    pub global_position: u64,
    /// Whether this partition holds `key` of the command's keyspace.
    pub owns_key: &'a dyn Fn(&[u8]) -> bool,
    /// Whether this partition holds `key` of the named keyspace (commands
    /// placed across keyspaces).
    pub owns: &'a dyn Fn(&str, &[u8]) -> bool,
    /// The user the command was judged for (`None`: nobody was checked,
    /// an `--insecure` node or a value ordered before access control).
    /// State a command holds open for its sender (a snapshot, a read
    /// version) counts against this user's share (docs/security.md).
    pub user: Option<&'a str>,
}

/// A change of the partition map a command makes when it succeeds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum KeyspaceChange {
    /// A keyspace is created with this layout.
    Create(String, Layout),
    /// A keyspace is dropped.
    Drop(String),
    /// A node's eventual store is (re)registered
    /// ([`crate::PartitionMap::register_eventual_store`]).
    EventualStore {
        /// The node.
        node: amulet_types::NodeId,
        /// Its store's incarnation.
        incarnation: u64,
    },
}

/// A deterministic service the replicas of a partition execute.
pub trait StateMachine {
    /// A client command.
    type Command: Clone + Debug + Serialize + DeserializeOwned;
    /// A reply, or one partition's part of it.
    type Reply: Clone + Debug + PartialEq + Serialize + DeserializeOwned;
    /// What a replica checkpoint holds of the state. Taking one runs on
    /// the event loop between deliveries, so it must be cheap (an O(1)
    /// copy-on-write clone); writing it runs in the background.
    type Checkpoint: Clone + Debug + Serialize + DeserializeOwned + Send + 'static;

    /// The state as a checkpoint.
    fn checkpoint(&self) -> Self::Checkpoint;

    /// Replaces the state by a checkpoint's, keeping this value's
    /// configuration (limits). Restoring the checkpoint of a state and
    /// executing the same commands gives the same replies and state.
    fn restore(&mut self, checkpoint: Self::Checkpoint);

    /// Splits the state at a reconfiguration's fence: removes every entry
    /// for which `moves(keyspace, key)` holds and returns them as the new
    /// partition's state, with what every partition holds alike (the
    /// catalog of keyspaces, open snapshots' leases).
    fn split_off(&mut self, moves: &dyn Fn(&str, &[u8]) -> bool) -> Self::Checkpoint;

    /// Takes in a partition merged into this one: its entries join these.
    fn absorb(&mut self, other: Self::Checkpoint);

    /// The keys the command touches, for routing.
    fn placement(command: &Self::Command) -> Placement;

    /// What the command needs of its sender (docs/security.md), each need
    /// given to `need`; the replica checks them against the access
    /// configuration at the command's point of the order. A command that
    /// names nothing needs only an authentic sender.
    fn needs(command: &Self::Command, need: &mut dyn FnMut(crate::Need<'_>));

    /// Checks sizes and shapes; the error is the reply. Run at the edge.
    fn validate(&self, command: &Self::Command) -> Result<(), Self::Reply>;

    /// Executes the command on this partition's state.
    fn execute(&mut self, command: &Self::Command, ctx: &ExecContext<'_>) -> Self::Reply;

    /// The reply from every involved partition's partial reply, given in
    /// increasing partition order.
    fn combine(command: &Self::Command, partials: &[Self::Reply]) -> Self::Reply;

    /// Whether the command must be ordered by the global stream even when
    /// it involves one partition: its effect is named by its global
    /// position (a snapshot), so that position must be unique and the
    /// same in every partition.
    fn needs_global_order(_command: &Self::Command) -> bool {
        false
    }

    /// Whether the command never changes state (no reply is recorded for
    /// it: a retried read just reads again).
    fn is_read_only(command: &Self::Command) -> bool;

    /// Named sizes of the state for metrics and status (open snapshots,
    /// read versions, ...).
    fn gauges(&self) -> Vec<(&'static str, u64)> {
        Vec::new()
    }

    /// How many entries this partition holds of `keyspace` (0 for a
    /// keyspace it holds nothing of): what the balancer splits a range
    /// partition by (docs/dynatree.md). Must be cheap (it is asked every
    /// second on the event loop). `None`: the service has no such sizes.
    fn keyspace_entries(&self, _keyspace: &str) -> Option<u64> {
        None
    }

    /// The key at position `at` of `keyspace` in key order (0-based), if
    /// it holds that many: where the balancer cuts a partition (its middle
    /// key). Asked only when a split is proposed.
    fn keyspace_key_at(&self, _keyspace: &str, _at: u64) -> Option<bytes::Bytes> {
        None
    }

    /// The bytes of the keys and values of `keyspace` this partition
    /// holds: what the balancer splits a range partition by besides its
    /// entries (`split_bytes`). Must be cheap, as `keyspace_entries`.
    /// `None`: the service has no such sizes.
    fn keyspace_bytes(&self, _keyspace: &str) -> Option<u64> {
        None
    }

    /// The first key of `keyspace` in key order whose predecessors hold at
    /// least `bytes` bytes of keys and values: where the balancer cuts a
    /// partition split by size (half its bytes). Asked only when a split
    /// is proposed.
    fn keyspace_key_after_bytes(&self, _keyspace: &str, _bytes: u64) -> Option<bytes::Bytes> {
        None
    }

    /// Whether the command is decided by a vote of every partition it
    /// involves (a transaction's commit, SCONEKV §4 without its locks):
    /// `execute` only votes, changing nothing, and its partial reply is
    /// the vote; once every involved partition's vote is in (S-SMR's
    /// signal exchange), `finish` applies it, in every partition at the
    /// same point of the order. A voted command involving one partition is
    /// finished at once on its own vote.
    fn is_voted(_command: &Self::Command) -> bool {
        false
    }

    /// Whether the command spans partitions only for its *place* in the
    /// order (a read version): its partials change no state and no later
    /// command depends on them. A partition then executes the commands
    /// after it without waiting for its signals; only their *replies*
    /// wait, until every involved partition has executed it (DMap §III-B's
    /// guarantee, which is what strictness needs: nothing answered after
    /// the command here can be followed by something ordered before it
    /// elsewhere). Such a command must not change state.
    fn orders_only(_command: &Self::Command) -> bool {
        false
    }

    /// Applies a voted command given every involved partition's vote, in
    /// increasing partition order (this partition's among them); returns
    /// the reply. Deterministic in the votes and the state.
    fn finish(
        &mut self,
        command: &Self::Command,
        _votes: &[Self::Reply],
        _ctx: &ExecContext<'_>,
    ) -> Self::Reply {
        unreachable!("finish of a command that is not voted: {command:?}")
    }

    /// The partition map change the command asks for, if any. The replica
    /// refuses the command unchanged when the map cannot take the change
    /// (an invalid layout, a keyspace that exists).
    fn keyspace_request(command: &Self::Command) -> Option<KeyspaceChange>;

    /// The partition map change the command makes if `reply` says it
    /// succeeded. Only commands placed on every partition may change it.
    fn keyspace_change(command: &Self::Command, reply: &Self::Reply) -> Option<KeyspaceChange>;
}
