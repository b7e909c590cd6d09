//! State transfer in the DMap swarm (thesis §3.4.2, §3.4.4; DMap §III-C):
//! a replica trimmed past asks peers for a checkpoint, a partition moved
//! here is fetched from its replicas (old and new), a peer serves its own
//! or says where the partition lives now (`NotHeld`), and replicas moved
//! away are dropped once the new group holds the state, as the node
//! runtime does (`runtime/recovery.rs`, `runtime/handoff.rs`).

use super::*;

impl NodeSlot {
    /// Drops the running process's replica of `partition` (moved away)
    /// with its merge group, requests, checkpoint and transfer.
    fn drop_replica(&mut self, partition: PartitionId) {
        if let Some(process) = self.process.as_mut() {
            process.replicas.remove(&partition);
            process.multicast.remove_group(group_of(partition));
            process.pending.retain(|(p, _), _| *p != partition);
        }
        self.checkpoints.remove(&partition);
        self.writing.remove(&partition);
        self.transfers.remove(&partition);
    }
}

impl DmapCluster {
    /// Drops the node's replicas of partitions moved away from it
    /// (`Reconfiguration::Move`) once a majority of the new group holds a
    /// durable checkpoint reflecting an instance of the new stream (the
    /// node runtime's `adopt_and_hand_off`). With `--bug
    /// hand-off-at-fence` a replica goes as soon as the move takes effect,
    /// before anyone else holds the state.
    pub(super) fn hand_off(&mut self, node: NodeId) {
        let bug = self.bug;
        let verbose = self.verbose;
        let now = self.now;
        let slot = self.slots.get_mut(&node).expect("known node");
        let Some(process) = slot.process.as_ref() else {
            return;
        };
        let handed = replicas_to_hand_off(node, &process.replicas, |partition, map| {
            let stream = map.partitions[&partition].stream;
            bug == DmapBug::HandOffAtFence
                || process
                    .multicast
                    .streams()
                    .get(&stream)
                    .is_some_and(|s| handed_off(map, partition, &s.safe_instances()))
        });
        for partition in handed {
            if verbose {
                println!("t={}us node {node} hands {partition} off", now.0);
            }
            slot.drop_replica(partition);
            self.hand_offs += 1;
        }
    }

    /// State transfer, asking side (thesis §3.4.2; DMap §III-C): for each
    /// replica whose streams were trimmed past its learner, and each
    /// partition the node's newest map gives it but it does not run (a
    /// split it skipped by installing a peer's checkpoint), the node asks
    /// the partition's other replicas in turn for their latest checkpoint.
    pub(super) fn request_checkpoint(&mut self, node: NodeId) {
        let now = self.now;
        let slot = self.slots.get_mut(&node).expect("known node");
        let Some(process) = slot.process.as_ref() else {
            return;
        };
        let Some(map) = newest_map(&process.replicas) else {
            return;
        };
        let trimmed: Vec<StreamId> = process
            .multicast
            .streams()
            .iter()
            .filter(|(_, s)| s.learner_trimmed().is_some())
            .map(|(id, _)| *id)
            .collect();
        let mut wanted: Vec<PartitionId> = process
            .replicas
            .keys()
            .filter(|p| {
                process
                    .multicast
                    .merger(group_of(**p))
                    .is_some_and(|m| trimmed.iter().any(|s| m.feeds_on(*s)))
            })
            .copied()
            .collect();
        wanted.extend(
            map.partitions_of(node)
                .into_iter()
                .filter(|p| !process.replicas.contains_key(p)),
        );
        slot.transfers.retain(|p, _| wanted.contains(p));
        for partition in wanted {
            let (asked, at) = slot
                .transfers
                .get(&partition)
                .copied()
                .unwrap_or((0, TimeMicros(0)));
            if slot.transfers.contains_key(&partition) && now.since(at) < TRANSFER_RETRY_MICROS {
                continue;
            }
            // The replica's own map names its peers (the newest map may
            // have merged it away already: it is retired at its fence).
            let info = process
                .replicas
                .get(&partition)
                .and_then(|r| r.map().partitions.get(&partition))
                .or_else(|| map.partitions.get(&partition));
            let Some(info) = info else {
                continue;
            };
            // Moved here: the replicas it moved from hold it too, until a
            // majority of the new group does.
            let adopting = !process.replicas.contains_key(&partition);
            let peers: Vec<NodeId> = if adopting {
                map.transfer_sources(partition, node)
            } else {
                // Its own map: the newest may have merged it away.
                process.replicas[&partition]
                    .map()
                    .recovery_sources(partition, node)
            };
            if peers.is_empty() {
                continue;
            }
            let to = peers[asked % peers.len()];
            if self.verbose {
                println!("t={}us node {node} asks {to} for {partition}", now.0);
            }
            slot.transfers.insert(partition, (asked + 1, now));
            // Non-disruptive recovery (thesis §3.4.4), as the node does:
            // the first new decision the learner holds of each stream it
            // was trimmed past; after every peer was asked twice, any
            // checkpoint covering the trim will do.
            let at_least = if adopting {
                // A checkpoint past the move: it merges the new stream.
                vec![(info.stream, Instance(0))]
            } else if asked < 2 * peers.len() {
                process.multicast.held_decisions(group_of(partition))
            } else {
                Vec::new()
            };
            let message = ReplicaMessage::CheckpointRequest {
                partition,
                from: node,
                offset: 0,
                at_least,
            };
            self.network
                .send(now, node, to, SimMessage::Replica(message));
        }
    }

    /// State transfer, both sides: a peer answers with its whole durable
    /// checkpoint of the partition (one chunk: the sim has no frame
    /// limit); the asker installs it if it covers every stream trimmed
    /// past it.
    pub(super) fn on_transfer(&mut self, node: NodeId, message: ReplicaMessage) {
        let now = self.now;
        match message {
            ReplicaMessage::CheckpointRequest {
                partition,
                from,
                at_least,
                ..
            } => {
                let every_micros = self.checkpoints.every_micros;
                let slot = self.slots.get_mut(&node).expect("known node");
                // A partition merged away here: the one it merged into
                // holds its state (see `merged_into`).
                let serve = slot
                    .process
                    .as_ref()
                    .and_then(|p| newest_map(&p.replicas))
                    .map_or(partition, |map| map.merged_into(partition));
                let recent_enough = |position: &MergePosition| {
                    checkpoint_reaches(position.lanes.iter().map(|l| (l.stream, l.next)), &at_least)
                };
                let older = serve == partition
                    && every_micros > 0
                    && !at_least.is_empty()
                    && !slot
                        .checkpoints
                        .get(&serve)
                        .is_some_and(|(_, position)| recent_enough(position));
                if older {
                    // Ours is older than what the asker holds since: write
                    // one now; the asker asks again (the node instead
                    // answers when it is written).
                    slot.next_checkpoint = slot.next_checkpoint.min(now);
                    return;
                }
                let held = slot
                    .process
                    .as_ref()
                    .is_some_and(|p| p.replicas.contains_key(&serve));
                let map = slot.process.as_ref().and_then(|p| newest_map(&p.replicas));
                if let (false, Some(map)) = (held, map) {
                    // Moved away and handed off here (or never here): the
                    // asker learns where it lives now.
                    let reply = ReplicaMessage::NotHeld {
                        partition,
                        from: node,
                        map,
                    };
                    self.network
                        .send(now, node, from, SimMessage::Replica(reply));
                    return;
                }
                let bytes = slot
                    .checkpoints
                    .get(&serve)
                    .map_or_else(Bytes::new, |(b, _)| Bytes::from(b.clone()));
                let reply = ReplicaMessage::CheckpointChunk {
                    partition,
                    from: node,
                    total: bytes.len() as u64,
                    offset: 0,
                    bytes,
                };
                self.network
                    .send(now, node, from, SimMessage::Replica(reply));
            }
            ReplicaMessage::CheckpointChunk {
                partition, bytes, ..
            } => {
                let bug = self.bug;
                let storage = self.storage;
                let slot = self.slots.get_mut(&node).expect("known node");
                let Some(process) = slot.process.as_mut() else {
                    return;
                };
                if bytes.is_empty() || !slot.transfers.contains_key(&partition) {
                    return;
                }
                let (checkpoint, position): CheckpointBody =
                    postcard::from_bytes(&bytes).expect("a peer's checkpoint decodes");
                let obsolete = process.replicas.get(&partition).is_some_and(|replica| {
                    checkpoint.map.obsoletes(replica.map(), partition, node)
                });
                if obsolete {
                    // Down through a move and its hand-off (or started
                    // afresh after one), or its partition merged into one
                    // elsewhere, as the node runtime does.
                    if self.verbose {
                        println!(
                            "t={}us node {node} drops {partition}: a peer's checkpoint shows it moved away",
                            now.0
                        );
                    }
                    slot.drop_replica(partition);
                    self.hand_offs += 1;
                    return;
                }
                let moved_here_before = !process.replicas.contains_key(&checkpoint.partition)
                    && !checkpoint
                        .map
                        .partitions
                        .get(&checkpoint.partition)
                        .is_some_and(|info| info.replicas.contains(&node));
                if moved_here_before {
                    return; // taken before the move: asked again on retry
                }
                // Asked for a partition merged away at the peer, the peer
                // sent the one it merged into: install that (the merged
                // partition's replica here is dropped as an orphan).
                let asked = partition;
                let partition = checkpoint.partition;
                if partition != asked
                    && process.replicas.get(&partition).is_some_and(|r| {
                        r.global_position() >= checkpoint.global_position
                            && r.map().version >= checkpoint.map.version
                    })
                {
                    return;
                }
                // The partition's run-time streams, before its merge names them.
                let state = self.initial_state.clone();
                let new_state = || state.clone();
                let stream_config = |spec: &StreamSpec| sim_stream_config(spec, storage);
                let stores = &mut slot.stores;
                let node_disk = &slot.node_disk;
                let mut open_log = |config: &StreamConfig| -> Box<dyn amulet_storage::AcceptorLog> {
                    stores
                        .entry(config.stream)
                        .or_insert_with(|| store_for(node_disk, storage, config.stream))
                        .open()
                };
                let mut host = FenceHost {
                    me: node,
                    incarnation: slot.incarnation,
                    new_state: &new_state,
                    stream_config: &stream_config,
                    open_log: &mut open_log,
                    now,
                };
                open_streams(&mut process.multicast, &checkpoint.map, &mut host);
                let covers = position.lanes.iter().all(|lane| {
                    process
                        .multicast
                        .streams()
                        .get(&lane.stream)
                        .is_some_and(|s| s.learner_trimmed().is_none_or(|below| lane.next >= below))
                });
                if !covers {
                    return; // too old: the next peer is asked on retry
                }
                if self.verbose {
                    let lanes: Vec<(u32, u64)> = position
                        .lanes
                        .iter()
                        .map(|l| (l.stream.0, l.next.0))
                        .collect();
                    println!(
                        "t={}us node {node} installs a peer's checkpoint of {partition} at {lanes:?} global={}",
                        now.0, checkpoint.global_position
                    );
                }
                let group = group_of(partition);
                if process.multicast.merger(group).is_some() {
                    process
                        .multicast
                        .restore_group(group, &position)
                        .expect("a peer's checkpoint has the partition's streams");
                } else {
                    process
                        .multicast
                        .add_group(group, &position)
                        .expect("a peer's checkpoint has the partition's streams");
                }
                let config = ReplicaConfig::new(node, slot.incarnation, partition);
                let mut replica = Replica::restore(config, checkpoint, self.initial_state.clone())
                    .expect("a peer's checkpoint is of this partition");
                replica.set_bug_complete_without_signals(bug == DmapBug::CompleteWithoutSignals);
                replica.set_bug_answer_reads_locally(bug == DmapBug::AnswerReadsLocally);
                if let Some(old) = process.replicas.get(&partition) {
                    replica.continue_requests_of(old);
                }
                process.replicas.insert(partition, replica);
                // Requests the replaced replica received are not answered;
                // their clients time out and resend.
                process.pending.retain(|(p, _), _| *p != partition);
                slot.checkpoints
                    .insert(partition, (bytes.to_vec(), position));
                slot.transfers.remove(&partition);
                slot.transfers.remove(&asked);
                self.transfers += 1;
            }
            ReplicaMessage::NotHeld { partition, map, .. } => {
                // Down through a move and its hand-off (the node runtime's
                // `on_transfer_message`): the peers dropped the partition;
                // so does this node.
                let verbose = self.verbose;
                let slot = self.slots.get_mut(&node).expect("known node");
                let Some(process) = slot.process.as_mut() else {
                    return;
                };
                let obsolete = process
                    .replicas
                    .get(&partition)
                    .is_some_and(|replica| map.obsoletes(replica.map(), partition, node));
                if !obsolete {
                    // Ask the next peer at once.
                    if let Some((_, at)) = slot.transfers.get_mut(&partition) {
                        *at = TimeMicros(0);
                    }
                    return;
                }
                if verbose {
                    println!(
                        "t={}us node {node} drops {partition}: moved away by map v{} while it was down",
                        now.0, map.version.0
                    );
                }
                slot.drop_replica(partition);
                self.hand_offs += 1;
            }
            ReplicaMessage::Signal { .. } | ReplicaMessage::SignalRequest { .. } => {}
        }
    }
}
