//! Identifiers. All are small `Copy` newtypes so they cannot be mixed up.

use serde::{Deserialize, Serialize};
use std::fmt;

/// A process (one per machine, design decision 5).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct NodeId(pub u32);

/// A multicast stream (a ring in the thesis). Learners merge the streams
/// they subscribe to in increasing `StreamId` order (thesis §3.3).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct StreamId(pub u32);

/// A consensus instance of one stream. Instances start at 0.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
pub struct Instance(pub u64);

impl Instance {
    /// The next instance.
    pub fn next(self) -> Instance {
        Instance(self.0 + 1)
    }
}

/// A Paxos ballot. Unique across the system because it embeds the node that
/// owns it (thesis A.1.2: "composed out of a counter and the coordinator id").
/// Ordered by round first, then by node.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
pub struct Ballot {
    /// Counter, increased to pre-empt a lower ballot.
    pub round: u32,
    /// Owner of the ballot.
    pub node: u32,
}

impl Ballot {
    /// The ballot no one owns; every acceptor starts having promised it.
    pub const ZERO: Ballot = Ballot { round: 0, node: 0 };

    /// The smallest ballot owned by `node` that is higher than `self`.
    pub fn next_for(self, node: NodeId) -> Ballot {
        Ballot {
            round: self.round + 1,
            node: node.0,
        }
    }
}

/// Identifier of a proposed value. Lets acceptors and learners refer to a
/// value without its bytes (indirect consensus, thesis A.1.1) and lets
/// learners drop a value decided twice (a proposer's retry after a timeout).
/// `incarnation` changes at every restart of the proposer so sequences of
/// different runs never collide.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct ValueId {
    /// The node whose proposer created the value.
    pub proposer: NodeId,
    /// The proposer's run; strictly increasing across restarts.
    pub incarnation: u32,
    /// Per-incarnation sequence, starting at 1.
    pub sequence: u64,
}

/// A partition of the replicated state: one replica group with its own
/// stream (DMap §III: one group of replicas per shard).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct PartitionId(pub u32);

/// Version of the partition map. Every change of the map, ordered by the
/// global stream, increases it; commands carry the version their client
/// routed by (DMap §III-B a).
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
pub struct MapVersion(pub u64);

/// A client session: commands carry (session, sequence) so a retry takes
/// effect once (design decision 8).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct SessionId(pub u64);

/// Time as an input (microseconds since an arbitrary epoch). Protocol cores
/// never read a clock; the caller passes this in.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
pub struct TimeMicros(pub u64);

impl TimeMicros {
    /// `self - earlier`, saturating at zero.
    pub fn since(self, earlier: TimeMicros) -> u64 {
        self.0.saturating_sub(earlier.0)
    }
    /// `self + micros`.
    pub fn plus(self, micros: u64) -> TimeMicros {
        TimeMicros(self.0.saturating_add(micros))
    }
}

macro_rules! display_as_number {
    ($($t:ty => $p:literal),*) => {$(
        impl fmt::Display for $t {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, concat!($p, "{}"), self.0)
            }
        }
    )*};
}
display_as_number!(NodeId => "n", StreamId => "s", Instance => "i", PartitionId => "p", MapVersion => "v", SessionId => "c");

impl fmt::Display for Ballot {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "b{}.{}", self.round, self.node)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ballots_order_by_round_then_node() {
        let a = Ballot { round: 1, node: 9 };
        let b = Ballot { round: 2, node: 1 };
        assert!(a < b);
        assert!(a.next_for(NodeId(3)) > a);
        assert!(Ballot { round: 2, node: 2 } > b);
    }
}
