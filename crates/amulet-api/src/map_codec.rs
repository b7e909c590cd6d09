//! The partition map on the wire.

use crate::command_codec::{layout_from_pb, layout_to_pb};
use crate::pb;
use amulet_smr::{PartitionInfo, PartitionMap};
use amulet_types::{MapVersion, NodeId, PartitionId, StreamId};
use std::collections::BTreeMap;
use tonic::Status;

/// The map and the nodes' client addresses as sent to clients.
pub fn map_to_pb(map: &PartitionMap, addresses: &BTreeMap<NodeId, String>) -> pb::PartitionMap {
    pb::PartitionMap {
        version: map.version.0,
        global_stream: map.global_stream.0,
        partitions: map
            .partitions
            .iter()
            .map(|(id, info)| pb::Partition {
                id: id.0,
                stream: info.stream.0,
                replicas: info.replicas.iter().map(|n| n.0).collect(),
                handing_off: map
                    .handing_off
                    .get(id)
                    .map(|nodes| nodes.iter().map(|n| n.0).collect())
                    .unwrap_or_default(),
            })
            .collect(),
        token_ring: map
            .token_ring
            .iter()
            .map(|(token, p)| pb::TokenRange {
                first_token: *token,
                partition: p.0,
            })
            .collect(),
        keyspaces: map
            .keyspaces
            .iter()
            .map(|(name, layout)| pb::Keyspace {
                name: name.clone(),
                layout: Some(layout_to_pb(layout)),
            })
            .collect(),
        nodes: addresses
            .iter()
            .map(|(node, address)| pb::NodeAddress {
                node: node.0,
                address: address.clone(),
            })
            .collect(),
    }
}

/// A map received from a node, checked like a configured one, and the
/// nodes' client addresses.
pub fn map_from_pb(
    map: pb::PartitionMap,
) -> Result<(PartitionMap, BTreeMap<NodeId, String>), Status> {
    let mut partitions = BTreeMap::new();
    let mut handing_off = BTreeMap::new();
    for p in map.partitions {
        if !p.handing_off.is_empty() {
            handing_off.insert(
                PartitionId(p.id),
                p.handing_off.iter().copied().map(NodeId).collect(),
            );
        }
        let info = PartitionInfo {
            stream: StreamId(p.stream),
            replicas: p.replicas.into_iter().map(NodeId).collect(),
        };
        if partitions.insert(PartitionId(p.id), info).is_some() {
            return Err(Status::invalid_argument(format!(
                "partition {} listed twice",
                p.id
            )));
        }
    }
    let mut keyspaces = BTreeMap::new();
    for k in map.keyspaces {
        let layout = layout_from_pb(k.layout)?;
        keyspaces.insert(k.name, layout);
    }
    let decoded = PartitionMap {
        version: MapVersion(map.version),
        global_stream: StreamId(map.global_stream),
        partitions,
        token_ring: map
            .token_ring
            .into_iter()
            .map(|t| (t.first_token, PartitionId(t.partition)))
            .collect(),
        keyspaces,
        // Clients route by partitions and layouts; which streams were
        // created or retired at run time, and which eventual store each
        // node has, is the nodes' business.
        streams: BTreeMap::new(),
        retired_streams: Default::default(),
        merged: Default::default(),
        eventual_stores: Default::default(),
        handing_off,
    };
    decoded
        .validate()
        .map_err(|e| Status::invalid_argument(e.to_string()))?;
    let addresses = map
        .nodes
        .into_iter()
        .map(|n| (NodeId(n.node), n.address))
        .collect();
    Ok((decoded, addresses))
}

#[cfg(test)]
mod tests {
    use super::*;
    use amulet_smr::Layout;
    use bytes::Bytes;

    #[test]
    fn a_map_survives_the_wire() {
        let mut map = PartitionMap::uniform(
            StreamId(9),
            (1..=3)
                .map(|p| {
                    (
                        PartitionId(p),
                        PartitionInfo {
                            stream: StreamId(p),
                            replicas: vec![NodeId(1), NodeId(2), NodeId(3)],
                        },
                    )
                })
                .collect(),
        );
        map.create_keyspace("h", Layout::Hash).unwrap();
        map.create_keyspace(
            "r",
            Layout::Range(vec![
                (Bytes::new(), PartitionId(1)),
                (Bytes::from_static(b"m"), PartitionId(2)),
            ]),
        )
        .unwrap();
        let addresses: BTreeMap<NodeId, String> = [(NodeId(1), "127.0.0.1:1".to_string())].into();
        let (back, back_addresses) = map_from_pb(map_to_pb(&map, &addresses)).unwrap();
        assert_eq!(back, map);
        assert_eq!(back_addresses, addresses);
    }

    #[test]
    fn a_map_without_partitions_is_refused() {
        let err = map_from_pb(pb::PartitionMap::default()).unwrap_err();
        assert_eq!(err.code(), tonic::Code::InvalidArgument);
    }
}
