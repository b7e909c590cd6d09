//! The checkpoint file format (thesis §3.4.2): what a node writes as a
//! replica's checkpoint and what a peer sends in a state transfer, the
//! same bytes in the node and in the simulator.
//!
//! Layout: `MAGIC` (8 bytes), format version (u32 LE), the postcard
//! payload, then its length (u64 LE) and crc32c (u32 LE). Decoding is
//! total: a short, truncated, corrupt or foreign file is an error, never a
//! panic.

use amulet_multicast::MergePosition;
use amulet_smr::ReplicaCheckpoint;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use std::io::Write;

const MAGIC: &[u8; 8] = b"AMCKPT\x00\x01";
/// 3: partitions keep read versions and recent writes (transactions),
/// replicas their votes on commits; files of format 2 are refused.
/// 4: partitions keep logs (DLog); files of format 3 still decode (a
/// partition's checkpoint reads without its logs: see
/// `amulet_smr::checkpoint_format`).
/// 5: replicas keep the access configuration (users, roles, grants,
/// tokens); files of formats 3 and 4 decode with a new cluster's.
/// 6: partitions keep who holds each open snapshot and read version (the
/// per-user limits); files of formats 3 to 5 decode with no holders.
/// 7: replicas keep the cluster's membership (docs/membership.md); files
/// of formats 3 to 6 decode with none (the configured first view).
/// 8: partition maps keep the nodes each partition is being handed off
/// from (`PartitionMap::handing_off`); files of formats 3 to 7 decode
/// with none.
/// 9: the view's members keep the client address a joiner gave
/// (`Member::client_address`); files of formats 7 and 8 decode with
/// none.
/// 10: a log's entries are runs, inline or a range of one of the node's
/// segment files (`amulet_dmap::log_segments`); files of formats 4 to 9
/// hold them inline as one sequence.
const VERSION: u32 = 10;
/// The oldest format this build reads.
const OLDEST_VERSION: u32 = 3;
const HEADER_BYTES: usize = 12;
const TRAILER_BYTES: usize = 12;

/// What a checkpoint file holds: a replica's state and the merge position
/// of its streams it reflects.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct CheckpointBody<C, R> {
    /// The replica's replicated state.
    pub replica: ReplicaCheckpoint<C, R>,
    /// Where its merge stood: the learners resume from each lane's `next`.
    pub position: MergePosition,
}

/// Writes `body` in the file format to `out`, streaming (a checkpoint can
/// be large: it is never held encoded in memory whole); returns the bytes
/// written.
pub fn encode_checkpoint_to<C: Serialize, R: Serialize, W: Write>(
    body: &CheckpointBody<C, R>,
    out: &mut W,
) -> std::io::Result<u64> {
    out.write_all(MAGIC)?;
    out.write_all(&VERSION.to_le_bytes())?;
    let mut payload = Checksummed {
        inner: out,
        crc: 0,
        len: 0,
    };
    postcard::to_io(body, &mut payload)
        .map_err(|e| std::io::Error::other(format!("cannot encode a checkpoint: {e}")))?;
    let (len, crc) = (payload.len, payload.crc);
    out.write_all(&len.to_le_bytes())?;
    out.write_all(&crc.to_le_bytes())?;
    Ok(len + (HEADER_BYTES + TRAILER_BYTES) as u64)
}

/// `body` in the file format, in memory.
pub fn encode_checkpoint<C: Serialize, R: Serialize>(body: &CheckpointBody<C, R>) -> Vec<u8> {
    let mut bytes = Vec::new();
    encode_checkpoint_to(body, &mut bytes).expect("writing to memory does not fail");
    bytes
}

/// Decodes a checkpoint file's bytes (also those a peer sent in a state
/// transfer).
pub fn decode_checkpoint<C: DeserializeOwned, R: DeserializeOwned>(
    bytes: &[u8],
) -> Result<CheckpointBody<C, R>, String> {
    if bytes.len() < HEADER_BYTES + TRAILER_BYTES {
        return Err(format!(
            "{} bytes is too short for a checkpoint",
            bytes.len()
        ));
    }
    if &bytes[..8] != MAGIC {
        return Err("not an amulet checkpoint (bad magic)".into());
    }
    let version = u32::from_le_bytes(bytes[8..12].try_into().expect("4 bytes"));
    if !(OLDEST_VERSION..=VERSION).contains(&version) {
        return Err(format!(
            "checkpoint format {version}, this build reads {OLDEST_VERSION} to {VERSION}"
        ));
    }
    let trailer = &bytes[bytes.len() - TRAILER_BYTES..];
    let len = u64::from_le_bytes(trailer[..8].try_into().expect("8 bytes"));
    let crc = u32::from_le_bytes(trailer[8..].try_into().expect("4 bytes"));
    let payload = &bytes[HEADER_BYTES..bytes.len() - TRAILER_BYTES];
    if len != payload.len() as u64 {
        return Err(format!(
            "payload of {} bytes, trailer says {len} (truncated?)",
            payload.len()
        ));
    }
    if crc32c::crc32c(payload) != crc {
        return Err("payload checksum mismatch".into());
    }
    let format = if version == VERSION {
        amulet_smr::checkpoint_format::CURRENT_FORMAT
    } else {
        version
    };
    amulet_smr::checkpoint_format::with_decoding_format(format, || postcard::from_bytes(payload))
        .map_err(|e| format!("payload does not decode: {e}"))
}

/// Counts and checksums what passes through.
struct Checksummed<'a, W: Write> {
    inner: &'a mut W,
    crc: u32,
    len: u64,
}

impl<W: Write> Write for Checksummed<'_, W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.crc = crc32c::crc32c_append(self.crc, &buf[..n]);
        self.len += n as u64;
        Ok(n)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush()
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use amulet_dmap::{MapLimits, MapReply, PartitionCheckpoint, PartitionState};
    use amulet_multicast::{LanePosition, MergePosition};
    use amulet_smr::{PartitionInfo, PartitionMap, Replica, ReplicaConfig};
    use amulet_types::{Instance, NodeId, PartitionId, StreamId};

    pub(crate) type DmapBody = CheckpointBody<PartitionCheckpoint, MapReply>;

    /// A checkpoint of partition 1 (streams 1 and 2) at `global`.
    pub(crate) fn body(global: u64) -> DmapBody {
        let map = PartitionMap::uniform(
            StreamId(1),
            vec![(
                PartitionId(1),
                PartitionInfo {
                    stream: StreamId(2),
                    replicas: vec![NodeId(1), NodeId(2), NodeId(3)],
                },
            )],
        );
        let config = ReplicaConfig::new(NodeId(1), 1, PartitionId(1));
        let replica = Replica::new(config, map, PartitionState::new(MapLimits::default()));
        let mut checkpoint = replica.checkpoint().expect("idle replica");
        checkpoint.global_position = global;
        let lane = |s: u32| LanePosition {
            stream: StreamId(s),
            next: Instance(global),
            carry: 0,
            consumed: global,
            delivered: Default::default(),
            state: amulet_multicast::LaneState::Active,
            start: 0,
        };
        CheckpointBody {
            replica: checkpoint,
            position: MergePosition {
                lanes: vec![lane(1), lane(2)],
                turn: 0,
                remaining: 1,
                rounds: global,
                waiting: None,
                completed: Default::default(),
                fence: None,
            },
        }
    }

    #[test]
    fn thesis_3_4_2_an_encoded_checkpoint_decodes_to_itself() {
        let written = body(77);
        let bytes = encode_checkpoint(&written);
        let read: DmapBody = decode_checkpoint(&bytes).expect("decodes");
        assert_eq!(read.position, written.position);
        assert_eq!(read.replica.global_position, 77);
        let mut streamed = Vec::new();
        let size = encode_checkpoint_to(&written, &mut streamed).expect("encodes");
        assert_eq!(streamed, bytes);
        assert_eq!(size, bytes.len() as u64);
    }

    /// A partition checkpoint as format 3 wrote it (before logs).
    #[derive(Serialize)]
    struct Format3Partition {
        maps: std::collections::BTreeMap<amulet_dmap::MapName, amulet_dmap::Entries>,
        snapshot_leases: std::collections::BTreeMap<u64, u64>,
        transactions: amulet_dmap::TransactionCheckpoint,
    }

    /// A partition checkpoint as formats 4 and 5 wrote it (before
    /// holders).
    #[derive(Serialize)]
    struct Format4Partition {
        maps: std::collections::BTreeMap<amulet_dmap::MapName, amulet_dmap::Entries>,
        snapshot_leases: std::collections::BTreeMap<u64, u64>,
        transactions: amulet_dmap::TransactionCheckpoint,
        logs: std::collections::BTreeMap<amulet_dmap::MapName, amulet_dmap::Log>,
    }

    fn format_4_partition(state: PartitionCheckpoint) -> Format4Partition {
        Format4Partition {
            maps: state.maps,
            snapshot_leases: state.snapshot_leases,
            transactions: state.transactions,
            logs: state.logs,
        }
    }

    /// A partition map as formats 7 and older wrote it (no hand-off sets).
    #[derive(Serialize)]
    struct Format7Map {
        version: amulet_types::MapVersion,
        global_stream: amulet_types::StreamId,
        partitions:
            std::collections::BTreeMap<amulet_types::PartitionId, amulet_smr::PartitionInfo>,
        token_ring: Vec<(u32, amulet_types::PartitionId)>,
        keyspaces: std::collections::BTreeMap<String, amulet_smr::Layout>,
        streams: std::collections::BTreeMap<amulet_types::StreamId, amulet_smr::StreamSpec>,
        retired_streams: std::collections::BTreeSet<amulet_types::StreamId>,
        merged: std::collections::BTreeMap<amulet_types::PartitionId, amulet_types::PartitionId>,
        eventual_stores: std::collections::BTreeMap<amulet_types::NodeId, u64>,
    }

    fn format_7_map(map: amulet_smr::PartitionMap) -> Format7Map {
        Format7Map {
            version: map.version,
            global_stream: map.global_stream,
            partitions: map.partitions,
            token_ring: map.token_ring,
            keyspaces: map.keyspaces,
            streams: map.streams,
            retired_streams: map.retired_streams,
            merged: map.merged,
            eventual_stores: map.eventual_stores,
        }
    }

    /// A replica's checkpoint before format 5 (no access configuration).
    #[derive(Serialize)]
    struct Format4Replica<C> {
        partition: amulet_types::PartitionId,
        map: Format7Map,
        state: C,
        sessions: amulet_smr::SessionTable<amulet_smr::ClientReply<MapReply>>,
        local_clock_micros: u64,
        global_clock_micros: u64,
        global_position: u64,
        early_signals: std::collections::BTreeMap<
            u64,
            std::collections::BTreeMap<amulet_types::PartitionId, Option<bytes::Bytes>>,
        >,
        signal_cache: std::collections::BTreeMap<u64, bytes::Bytes>,
        undecodable: u64,
        pending_reconfiguration: Option<amulet_smr::Reconfiguration>,
        absorbed_signals: std::collections::BTreeMap<
            amulet_types::PartitionId,
            (u64, std::collections::BTreeMap<u64, bytes::Bytes>),
        >,
        votes: std::collections::BTreeMap<u64, bytes::Bytes>,
    }

    #[derive(Serialize)]
    struct Format4Body<C> {
        replica: Format4Replica<C>,
        position: MergePosition,
    }

    /// `current` in the shape of format 4 and older (no access
    /// configuration), its partition's state made by `state`.
    fn older_shape<C>(
        current: &DmapBody,
        state: impl FnOnce(PartitionCheckpoint) -> C,
    ) -> Format4Body<C> {
        let r = current.replica.clone();
        Format4Body {
            replica: Format4Replica {
                partition: r.partition,
                map: format_7_map(r.map),
                state: state(r.state),
                sessions: r.sessions,
                local_clock_micros: r.local_clock_micros,
                global_clock_micros: r.global_clock_micros,
                global_position: r.global_position,
                early_signals: r.early_signals,
                signal_cache: r.signal_cache,
                undecodable: r.undecodable,
                pending_reconfiguration: r.pending_reconfiguration,
                absorbed_signals: r.absorbed_signals,
                votes: r.votes,
            },
            position: current.position.clone(),
        }
    }

    fn format_4(current: &DmapBody) -> Vec<u8> {
        encode_older(&older_shape(current, format_4_partition), 4)
    }

    /// A replica's checkpoint of formats 5 and 6: format 4's fields, then
    /// the access configuration (postcard writes a nested struct's fields
    /// in place, as if they were this one's).
    #[derive(Serialize)]
    struct Format6Replica<C> {
        older: Format4Replica<C>,
        access: std::sync::Arc<amulet_smr::AccessControl>,
    }

    #[derive(Serialize)]
    struct Format6Body<C> {
        replica: Format6Replica<C>,
        position: MergePosition,
    }

    /// `current` in the shape of formats 5 and 6 (no membership), its
    /// partition's state made by `state`.
    fn with_access<C>(
        current: &DmapBody,
        state: impl FnOnce(PartitionCheckpoint) -> C,
    ) -> Format6Body<C> {
        let older = older_shape(current, state);
        Format6Body {
            replica: Format6Replica {
                older: older.replica,
                access: current.replica.access.clone(),
            },
            position: older.position,
        }
    }

    /// `current` as format 5 wrote it: the access configuration, no
    /// holders.
    fn format_5(current: &DmapBody) -> Vec<u8> {
        encode_older(&with_access(current, format_4_partition), 5)
    }

    /// `current` as format 6 wrote it: holders, no membership.
    fn format_6(current: &DmapBody) -> Vec<u8> {
        encode_older(&with_access(current, |state| state), 6)
    }

    /// A replica's checkpoint of format 7: format 6's fields, then the
    /// membership; its map has no hand-off sets.
    #[derive(Serialize)]
    struct Format7Replica<C> {
        older: Format6Replica<C>,
        membership: Option<std::sync::Arc<amulet_membership::Membership>>,
    }

    #[derive(Serialize)]
    struct Format7Body<C> {
        replica: Format7Replica<C>,
        position: MergePosition,
    }

    /// `current` as format 7 wrote it: membership, no hand-off sets.
    fn format_7(current: &DmapBody) -> Vec<u8> {
        let older = with_access(current, |state| state);
        let body = Format7Body {
            replica: Format7Replica {
                older: older.replica,
                membership: current.replica.membership.clone(),
            },
            position: older.position,
        };
        encode_older(&body, 7)
    }

    /// `body` in the file layout of format `version`.
    fn encode_older<T: Serialize>(body: &T, version: u32) -> Vec<u8> {
        let payload = postcard::to_allocvec(body).unwrap();
        let mut out = MAGIC.to_vec();
        out.extend(version.to_le_bytes());
        out.extend(&payload);
        out.extend((payload.len() as u64).to_le_bytes());
        out.extend(crc32c::crc32c(&payload).to_le_bytes());
        out
    }

    #[test]
    fn security_a_checkpoint_of_format_4_decodes_with_a_new_clusters_access() {
        let mut current = body(9);
        let mut access = amulet_smr::AccessControl::default();
        access
            .apply(&amulet_smr::AccessChange::AssignRole {
                user: "alice".into(),
                role: "readers".into(),
            })
            .unwrap();
        current.replica.access = std::sync::Arc::new(access);
        let read: DmapBody = decode_checkpoint(&encode_checkpoint(&current)).unwrap();
        assert_eq!(
            read.replica.access, current.replica.access,
            "format 5 keeps it"
        );
        let read: DmapBody = decode_checkpoint(&format_4(&current)).expect("format 4 decodes");
        assert_eq!(read.replica.global_position, 9);
        assert_eq!(*read.replica.access, amulet_smr::AccessControl::default());
    }

    #[test]
    fn security_a_checkpoint_of_format_5_decodes_with_no_holders() {
        let mut current = body(9);
        current.replica.state.snapshot_leases.insert(4, 1_000);
        current
            .replica
            .state
            .holders
            .snapshots
            .insert(4, "alice".into());
        let read: DmapBody = decode_checkpoint(&encode_checkpoint(&current)).unwrap();
        assert_eq!(
            read.replica.state.holders, current.replica.state.holders,
            "format 6 keeps them"
        );
        let read: DmapBody = decode_checkpoint(&format_5(&current)).expect("format 5 decodes");
        assert_eq!(read.replica.global_position, 9);
        assert_eq!(
            read.replica.state.snapshot_leases,
            current.replica.state.snapshot_leases
        );
        assert_eq!(read.replica.state.holders, amulet_dmap::Holders::default());
    }

    #[test]
    fn sconekv_2_a_checkpoint_of_format_6_decodes_without_membership() {
        let mut current = body(9);
        let view = amulet_membership::View::initial(&["a:1".into(), "b:1".into()]);
        let membership =
            amulet_membership::Membership::new(view, amulet_membership::MembershipBug::None);
        current.replica.membership = Some(std::sync::Arc::new(membership));
        let read: DmapBody = decode_checkpoint(&encode_checkpoint(&current)).unwrap();
        assert_eq!(
            read.replica.membership, current.replica.membership,
            "format 7 keeps it"
        );
        let read: DmapBody = decode_checkpoint(&format_6(&current)).expect("format 6 decodes");
        assert_eq!(read.replica.global_position, 9);
        assert_eq!(read.replica.access, current.replica.access);
        assert_eq!(read.replica.membership, None);
    }

    #[test]
    fn dmap_iii_c_a_checkpoint_of_format_7_decodes_with_no_hand_offs() {
        let mut current = body(9);
        current.replica.map.handing_off.insert(
            amulet_types::PartitionId(1),
            [amulet_types::NodeId(4)].into_iter().collect(),
        );
        let read: DmapBody = decode_checkpoint(&encode_checkpoint(&current)).unwrap();
        assert_eq!(read.replica.map, current.replica.map, "format 8 keeps them");
        let read: DmapBody = decode_checkpoint(&format_7(&current)).expect("format 7 decodes");
        assert_eq!(read.replica.global_position, 9);
        assert!(read.replica.map.handing_off.is_empty());
        let mut without = current.replica.map.clone();
        without.handing_off.clear();
        assert_eq!(read.replica.map, without);
    }

    #[test]
    fn a_checkpoint_of_format_3_decodes_without_logs() {
        let mut current = body(9);
        let map = amulet_dmap::MapName::new("m").unwrap();
        let mut entries = amulet_dmap::Entries::new();
        entries.insert(b"k", b"v");
        current.replica.state.maps.insert(map.clone(), entries);
        let old = older_shape(&current, |state| Format3Partition {
            maps: state.maps,
            snapshot_leases: state.snapshot_leases,
            transactions: state.transactions,
        });
        let mut bytes = encode_older(&old, 3);
        let read: DmapBody = decode_checkpoint(&bytes).expect("format 3 decodes");
        assert_eq!(read.replica.global_position, 9);
        assert!(read.replica.state.logs.is_empty());
        assert_eq!(
            read.replica.state.maps[&map].value(b"k").as_deref(),
            Some(&b"v"[..])
        );
        bytes[8..12].copy_from_slice(&2u32.to_le_bytes());
        assert!(decode_checkpoint::<PartitionCheckpoint, MapReply>(&bytes).is_err());
    }

    #[test]
    fn every_damaged_checkpoint_is_an_error_not_a_panic() {
        let good = encode_checkpoint(&body(5));
        assert!(decode_checkpoint::<PartitionCheckpoint, MapReply>(&good).is_ok());
        // Every truncation and every single-byte flip is refused.
        for cut in 0..good.len() {
            assert!(
                decode_checkpoint::<PartitionCheckpoint, MapReply>(&good[..cut]).is_err(),
                "truncated to {cut} accepted"
            );
        }
        for i in 0..good.len() {
            let mut bad = good.clone();
            bad[i] ^= 0x40;
            assert!(
                decode_checkpoint::<PartitionCheckpoint, MapReply>(&bad).is_err(),
                "flip at byte {i} accepted"
            );
        }
    }
}
