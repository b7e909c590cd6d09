//! The cluster the replica tests share: two partitions (nodes 1-3 on
//! stream 2, nodes 4-6 on stream 3; the global stream is 1) and map "m"
//! spread by hash, created in every replica's initial state.

use amulet_dmap::{ExecContext, MapCommand, MapLimits, MapName, PartitionState};
use amulet_smr::{Layout, PartitionInfo, PartitionMap, Replica, ReplicaConfig};
use amulet_types::{NodeId, PartitionId, StreamId};

/// The map every test uses.
pub fn map_name() -> MapName {
    MapName::new("m").unwrap()
}

/// The replica of `partition` at `node`, keeping `signal_cache_bytes` of
/// partial replies for late signal requests.
#[allow(dead_code)] // not every test file uses it
pub fn replica(node: u32, partition: u32, signal_cache_bytes: usize) -> Replica<PartitionState> {
    replica_at(node, partition, signal_cache_bytes, None)
}

/// [`replica`] with its map at `version` when given (as if changed since
/// by reconfigurations that moved no key).
pub fn replica_at(
    node: u32,
    partition: u32,
    signal_cache_bytes: usize,
    version: Option<u64>,
) -> Replica<PartitionState> {
    let info = |p: u32| {
        (
            PartitionId(p),
            PartitionInfo {
                stream: StreamId(p + 1),
                replicas: (3 * p - 2..=3 * p).map(NodeId).collect(),
            },
        )
    };
    let mut map = PartitionMap::uniform(StreamId(1), vec![info(1), info(2)]);
    map.create_keyspace("m", Layout::Hash).unwrap();
    if let Some(version) = version {
        map.version = amulet_types::MapVersion(version);
    }
    let mut state = PartitionState::new(MapLimits::default());
    let all = |_: &[u8]| true;
    let ctx = ExecContext {
        now_micros: 0,
        snapshot_id: 0,
        global_position: 0,
        owns_key: &all,
        owns: &|_, _| true,
        user: None,
    };
    state.execute(
        &MapCommand::CreateMap {
            map: map_name(),
            layout: Layout::Hash,
        },
        &ctx,
    );
    let mut config = ReplicaConfig::new(NodeId(node), 1, PartitionId(partition));
    config.signal_cache_bytes_max = signal_cache_bytes;
    Replica::new(config, map, state)
}
