//! Starting a host (thesis §3.4.2): which replicas a node runs and where
//! each continues from.
//!
//! Reconfigurations change the partitions, so the newest map among the
//! node's checkpoints (not the configured one) says which partitions the
//! node replicates now. Each replica with a checkpoint continues from it;
//! one without continues from the configured map's initial state if the
//! configured map gave it to the node (replaying its streams from instance
//! 0), and otherwise is forked again when its source replays a split's
//! fence, or fetched from a peer (a move). Checkpoints of partitions no
//! longer here (merged away, moved and handed off) are removed.

use crate::checkpoint_codec::CheckpointBody;
use crate::checkpointer::{lanes_of, Checkpointer};
use crate::command::Command;
use crate::config::HostConfig;
use crate::host::{Host, HostCounters, StartError};
use crate::state_transfer::StateTransfer;
use crate::storage::{runtime_stream_config, LogOpener};
use amulet_multicast::{GroupId, MergePosition, MulticastNode};
use amulet_smr::{group_of, PartitionMap, Replica, ReplicaConfig, StateMachine};
use amulet_storage::AcceptorLog;
use amulet_types::{PartitionId, StreamConfig, StreamId, TimeMicros};
use std::collections::BTreeMap;

/// A replica's checkpoint as read at start.
pub type StartCheckpoint<S> =
    CheckpointBody<<S as StateMachine>::Checkpoint, <S as StateMachine>::Reply>;

impl<S: StateMachine> Host<S> {
    /// Starts a host: `logs` are the node's configured streams with their
    /// opened logs, `map` the configured partition map (`None`: the node
    /// runs no service, only the ordering layer), `checkpoints` every
    /// checkpoint file the node holds (decoded; a damaged one stops the
    /// runtime before this). Streams created at run time that the newest
    /// map names are opened through `storage`. The commands to carry out
    /// first (removing checkpoints of partitions no longer here) are
    /// queued.
    pub fn start(
        config: HostConfig<S>,
        mut logs: Vec<(StreamConfig, Box<dyn AcceptorLog>)>,
        map: Option<PartitionMap>,
        checkpoints: BTreeMap<PartitionId, StartCheckpoint<S>>,
        storage: &mut dyn LogOpener,
        now: TimeMicros,
    ) -> Result<Host<S>, StartError> {
        let me = config.me;
        let mut out = Vec::new();
        let (replicas, restored) = start_replicas(&config, map.as_ref(), checkpoints, &mut out)?;
        // Streams created at run time by reconfigurations (in the newest
        // map a replica here restored) are not configured: open them too,
        // with the global stream's limits.
        if let Some(newest) = replicas.values().map(|r| r.map()).max_by_key(|m| m.version) {
            // The configured global stream's limits (its log is opened
            // from the configuration file even once it is replaced).
            let limits = map
                .iter()
                .chain([newest])
                .find_map(|m| logs.iter().find(|(c, _)| c.stream == m.global_stream))
                .map(|(c, _)| c.limits.clone())
                .unwrap_or_default();
            for spec in newest.streams.values() {
                let open = logs.iter().any(|(c, _)| c.stream == spec.stream);
                if open || !spec.members().contains(&me) {
                    continue;
                }
                let stream = runtime_stream_config(spec, &limits);
                let log = storage
                    .open(&stream, false)
                    .map_err(|error| StartError::OpenLog {
                        stream: spec.stream.0,
                        error,
                    })?;
                logs.push((stream, log));
            }
        }
        let groups = merge_groups(&config, &logs, map.as_ref(), &replicas)?;
        let mut node = MulticastNode::with_groups(me, logs, groups, config.incarnation, now);
        for (partition, position) in &restored {
            node.restore_group(group_of(*partition), position)
                .map_err(|e| StartError::Position {
                    partition: partition.0,
                    error: format!("{e:?}"),
                })?;
        }
        let checkpointer = Checkpointer::new(
            config.checkpoint_every_micros,
            replicas.iter().map(|(p, r)| {
                let durable = restored
                    .iter()
                    .find(|(q, _)| q == p)
                    .map(|(_, position)| lanes_of(position));
                (*p, r.global_position(), durable)
            }),
            now,
        );
        let transfer = StateTransfer::new(
            me,
            config.transfer_chunk_bytes,
            config.bugs.transfer_drops_last_chunk,
        );
        let counters = HostCounters {
            restores: restored.len() as u64,
            ..HostCounters::default()
        };
        let monitor = config
            .membership
            .as_ref()
            .map(|_| amulet_membership::Monitor::new(config.me, config.monitor));
        let mut host = Host {
            config,
            node,
            replicas,
            configured_map: map,
            known_map: None,
            heard_map: None,
            asked_streams: std::collections::BTreeSet::new(),
            known_access: None,
            pending: BTreeMap::new(),
            requests: BTreeMap::new(),
            checkpointer,
            transfer,
            fetched: Vec::new(),
            out,
            last_trim: None,
            last_async_sync: now,
            adoptions_checked_at: None,
            handed_off_reported: Default::default(),
            unsettled_rounds: 0,
            counters,
            monitor,
            known_membership: None,
            views_told: Default::default(),
            membership_counters: Default::default(),
            healing: Default::default(),
            balancing: Default::default(),
            newer_runners_asked_at: None,
            hand_off_nudged: BTreeMap::new(),
        };
        host.remember_maps();
        host.check_after_step();
        Ok(host)
    }
}

/// A node's replicas, and the merge positions of those restored from a
/// checkpoint.
type StartedReplicas<S> = (
    BTreeMap<PartitionId, Replica<S>>,
    Vec<(PartitionId, MergePosition)>,
);

/// The replicas the node runs, from the configured map and its
/// checkpoints (see the module comment); queues the removal of
/// checkpoints of partitions no longer here.
fn start_replicas<S: StateMachine>(
    config: &HostConfig<S>,
    map: Option<&PartitionMap>,
    mut bodies: BTreeMap<PartitionId, StartCheckpoint<S>>,
    out: &mut Vec<Command<S>>,
) -> Result<StartedReplicas<S>, StartError> {
    let me = config.me;
    let Some(initial) = map else {
        return Ok((BTreeMap::new(), Vec::new()));
    };
    let newest = bodies
        .values()
        .map(|b| &b.replica.map)
        .filter(|m| m.version >= initial.version)
        .max_by_key(|m| m.version)
        .cloned();
    let map = newest.as_ref().unwrap_or(initial);
    // A replica moved away from here (`Reconfiguration::Move`) keeps its
    // checkpoint until a majority of the new group holds the state.
    let leaving = map.leaving(me);
    let stale: Vec<PartitionId> = bodies
        .keys()
        .copied()
        .filter(|p| !map.partitions_of(me).contains(p) && !leaving.contains(p))
        .collect();
    for partition in stale {
        tracing::info!(
            partition = partition.0,
            "checkpoint of a partition no longer here removed"
        );
        bodies.remove(&partition);
        // Numbered below every write of this run (the checkpointer's
        // numbers start at 1).
        out.push(Command::RemoveCheckpoint {
            partition,
            write: 0,
        });
    }
    let mut here = map.partitions_of(me);
    here.extend(leaving.iter().filter(|p| bodies.contains_key(p)));
    let mut replicas = BTreeMap::new();
    let mut restored = Vec::new();
    for partition in here {
        let replica_config = ReplicaConfig::new(me, config.incarnation, partition);
        let state = (config.new_state)();
        let mut replica = match bodies.remove(&partition) {
            // Split off or moved here since the configured map, without a
            // checkpoint yet: forked again at the split's fence, or
            // fetched from a peer (`adopt_and_hand_off`).
            None if !initial.partitions_of(me).contains(&partition) => continue,
            None => Replica::new(replica_config, initial.clone(), state),
            Some(mut body) => {
                if config.bugs.checkpoint_past_position {
                    // Injected: the learner resumes one instance past the
                    // checkpoint in the partition's stream.
                    let stream = body.replica.map.partitions[&partition].stream;
                    for lane in &mut body.position.lanes {
                        if lane.stream == stream {
                            lane.next = lane.next.next();
                        }
                    }
                }
                let replica =
                    Replica::restore(replica_config, body.replica, state).map_err(|e| {
                        StartError::Restore {
                            partition: partition.0,
                            error: e.to_string(),
                        }
                    })?;
                tracing::info!(
                    partition = partition.0,
                    global_position = replica.global_position(),
                    lanes = ?body.position.lanes.iter().map(|l| (l.stream.0, l.next.0)).collect::<Vec<_>>(),
                    "replica restored from its checkpoint"
                );
                restored.push((partition, body.position));
                replica
            }
        };
        crate::edge::prepare_replica(&mut replica, config);
        replicas.insert(partition, replica);
    }
    Ok((replicas, restored))
}

/// One merge group per replica (its partition stream and the global
/// stream, numbered by partition), so each replica's merge state is its
/// own; a node without replicas merges as configured, or every stream it
/// is a member of in group 0.
fn merge_groups<S: StateMachine>(
    config: &HostConfig<S>,
    logs: &[(StreamConfig, Box<dyn AcceptorLog>)],
    map: Option<&PartitionMap>,
    replicas: &BTreeMap<PartitionId, Replica<S>>,
) -> Result<Vec<(GroupId, Vec<StreamId>)>, StartError> {
    let member = |stream: StreamId| logs.iter().any(|(c, _)| c.stream == stream);
    let Some(map) = map.filter(|_| !replicas.is_empty()) else {
        return Ok(config
            .groups
            .clone()
            .unwrap_or_else(|| vec![(GroupId(0), logs.iter().map(|(c, _)| c.stream).collect())]));
    };
    let mut groups = Vec::new();
    for (partition, replica) in replicas {
        let own = replica
            .map()
            .partitions
            .get(partition)
            .map_or_else(|| map.partitions[partition].stream, |info| info.stream);
        // The replica's own map's global stream: a replaced one is a
        // stream created at run time, opened above.
        let streams = vec![replica.map().global_stream, own];
        if let Some(missing) = streams.iter().find(|s| !member(**s)) {
            return Err(StartError::NotAMember {
                partition: partition.0,
                stream: missing.0,
            });
        }
        groups.push((group_of(*partition), streams));
    }
    Ok(groups)
}
