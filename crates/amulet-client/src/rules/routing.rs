//! Routing (DMap §III-B): the partition a command goes to by a partition
//! map, and the node an attempt goes to.
//!
//! Randomness is an input: every choice draws from the generator passed
//! in, through [`below`] only, so a seeded generator makes the same
//! choices on every platform and with every version of `rand` (the
//! simulator replays a seed from it).

use amulet_smr::{PartitionMap, Placement};
use amulet_types::{NodeId, PartitionId};
use rand::RngCore;

/// The partition a command with `placement` is sent to by `map`: the first
/// one it involves (a multi-partition command is ordered through any of
/// its partitions' replicas, which multicast it to all of them). A
/// keyspace unknown to `map` (which may be stale) goes to the lowest
/// partition, whose replica answers "stale map" or "unknown keyspace".
/// `None` only for a map without partitions.
pub fn partition_for(map: &PartitionMap, placement: &Placement) -> Option<PartitionId> {
    map.partitions_for(placement)
        .ok()
        .and_then(|partitions| partitions.first().copied())
        .or_else(|| map.partitions.keys().next().copied())
}

/// A replica of `partition` by `map` among `reachable` (ascending: the
/// nodes the caller can address), other than `avoid` when the partition
/// has another: a replica that just failed (down, partitioned away,
/// catching up) should not get the resend too, and other than the
/// client's `suspects` when the partition has a replica not suspected.
/// With `prefer`, the client's own replica ([`preferred`]); without, a
/// random one. `None` when no replica is reachable.
pub fn replica(
    map: &PartitionMap,
    partition: PartitionId,
    avoid: Option<NodeId>,
    reachable: &[NodeId],
    suspects: &[NodeId],
    prefer: Option<u64>,
    rng: &mut (impl RngCore + ?Sized),
) -> Option<NodeId> {
    let mut replicas: Vec<NodeId> = map
        .partitions
        .get(&partition)
        .map(|p| {
            p.replicas
                .iter()
                .copied()
                .filter(|n| reachable.binary_search(n).is_ok())
                .collect()
        })
        .unwrap_or_default();
    // Per partition, not over all nodes: a partition whose replicas are
    // all suspected still gets one.
    if replicas.iter().any(|n| !suspects.contains(n)) {
        replicas.retain(|n| !suspects.contains(n));
    }
    if replicas.len() > 1 {
        replicas.retain(|n| Some(*n) != avoid);
    }
    match prefer {
        Some(seed) => preferred(&replicas, seed),
        None => pick(&replicas, rng),
    }
}

/// The replica a client with `seed` sends to among `candidates`: the one
/// with the highest score of (seed, node) (rendezvous hashing). A client
/// that sends every operation of a partition to one replica fills its
/// batches (`batcher.rs`) where one that spreads them over N replicas
/// sends N times as many calls, each carrying a third; the nodes' cost is
/// mostly per call. Many clients, each with its own seed, still spread
/// over the replicas; and when the preferred one is left out (it failed,
/// it is not reachable), each client moves to its next-highest one, not
/// all to the same, and comes back when it returns.
pub fn preferred(candidates: &[NodeId], seed: u64) -> Option<NodeId> {
    candidates
        .iter()
        .copied()
        .max_by_key(|n| (score(seed, *n), n.0))
}

/// A well-mixed 64-bit function of (seed, node) (SplitMix64's finalizer).
fn score(seed: u64, node: NodeId) -> u64 {
    let mut z = seed ^ u64::from(node.0).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// A random node among `nodes`, `None` when there is none.
pub fn any_node(nodes: &[NodeId], rng: &mut (impl RngCore + ?Sized)) -> Option<NodeId> {
    pick(nodes, rng)
}

/// A uniformly chosen element.
fn pick<T: Copy>(items: &[T], rng: &mut (impl RngCore + ?Sized)) -> Option<T> {
    if items.is_empty() {
        return None;
    }
    let index = below(rng, items.len() as u64) as usize;
    items.get(index).copied()
}

/// Uniform in `[0, bound)`, unbiased (rejection sampling), from whole
/// `next_u64` draws, so the result is a function of the generator's
/// stream alone. Panics if `bound == 0`.
pub fn below(rng: &mut (impl RngCore + ?Sized), bound: u64) -> u64 {
    assert!(bound > 0, "below(0) has no value to return");
    // Reject the top partial copy of [0, bound) so every residue is
    // equally likely.
    let zone = u64::MAX - (u64::MAX % bound + 1) % bound;
    loop {
        let x = rng.next_u64();
        if x <= zone {
            return x % bound;
        }
    }
}
