//! The split a machine orders on its own: DynaTree's balancer cutting a
//! range partition that grew too large or too busy, and a bulk load
//! pre-splitting a range map chunk by chunk (docs/dynatree.md). Both cut
//! one map's range at one key onto a new partition that keeps the
//! source's replicas, on a new stream with the same storage; an operator's
//! `amulet split` names its ids, stream and storage itself.

use crate::{PartitionMap, Reconfiguration, StreamSpec};
use amulet_types::{PartitionId, StorageMode, StreamId};
use bytes::Bytes;

impl Reconfiguration {
    /// The split of `source`'s range of map `name` at `at`: the new
    /// partition is `map`'s next id, on `map`'s next stream id above
    /// `also_used` too (streams some node runs that the map does not
    /// name), acceptors the source's replicas, with `storage`. `None` if
    /// `map` has no partition `source`.
    pub fn split_at_key(
        map: &PartitionMap,
        source: PartitionId,
        name: &str,
        at: Bytes,
        storage: StorageMode,
        also_used: impl IntoIterator<Item = StreamId>,
    ) -> Option<Reconfiguration> {
        let info = map.partitions.get(&source)?;
        Some(Reconfiguration::Split {
            source,
            new: map.next_partition_id(),
            stream: StreamSpec {
                stream: map.next_stream_id(also_used),
                acceptors: info.replicas.clone(),
                learners: Vec::new(),
                storage,
                base_position: 0,
            },
            at_token: None,
            at_keys: vec![(name.to_owned(), at)],
        })
    }
}
