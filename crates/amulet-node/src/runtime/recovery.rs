//! The event loop's part in recovery (thesis §3.4.2, §3.4.4): trimming
//! the acceptor logs below what a trim quorum of replicas holds in
//! checkpoints, and state transfer both ways: a replica trimmed past
//! fetches a peer's checkpoint (naming the new decisions it holds), a peer
//! serves its own (writing a newer one first if asked), and a fetched one
//! is installed between flushes.

use super::*;

impl EventLoop {
    /// `stream` was trimmed below `below` past this node's learner: every
    /// replica here that merges the stream from below that point fetches
    /// a peer's checkpoint.
    pub(super) fn need_transfer(&mut self, stream: StreamId, below: Instance) {
        let Some(map) = self.current_map().cloned() else {
            return;
        };
        let now = self.now();
        let partitions: Vec<PartitionId> = self.replicas.keys().copied().collect();
        for partition in partitions {
            let behind = self
                .node
                .merger(GroupId(partition.0))
                .and_then(|m| m.next_instance(stream))
                .is_some_and(|next| next < below);
            if !behind {
                continue;
            }
            let peers = map.recovery_sources(partition, self.me);
            let at_least = self.node.held_decisions(GroupId(partition.0));
            if let Some((to, message)) = self.transfer.start(partition, peers, at_least, now) {
                self.send_replica_message(to, message);
            }
        }
    }

    /// State transfer messages (both sides).
    pub(super) fn on_transfer_message(&mut self, now: TimeMicros, message: ReplicaMessage) {
        match message {
            ReplicaMessage::CheckpointRequest {
                partition,
                from,
                offset,
                at_least,
            } => {
                // A partition merged away here: the one it merged into
                // holds its state; the asker installs that instead (and
                // drops its replica of the merged one).
                let serve = self
                    .current_map()
                    .map_or(partition, |map| map.merged_into(partition));
                if offset == 0
                    && serve == partition
                    && self.replicas.contains_key(&serve)
                    && self.checkpointer.write_if_older(serve, &at_least, now)
                {
                    // Ours is older than what the asker holds since: a new
                    // one is being written, and goes to it when written.
                    self.transfer.wait(serve, from, at_least);
                    return;
                }
                if self.replicas.contains_key(&serve) {
                    let mut reply = self.transfer.on_request(serve, offset, now);
                    if let ReplicaMessage::CheckpointChunk {
                        partition: label, ..
                    } = &mut reply
                    {
                        *label = partition;
                    }
                    self.send_replica_message(from, reply);
                } else if let Some(map) = self.current_map().cloned() {
                    // Moved away and handed off here (or never here): the
                    // asker learns where it lives now.
                    let reply = ReplicaMessage::NotHeld {
                        partition,
                        from: self.me,
                        map,
                    };
                    self.send_replica_message(from, reply);
                }
            }
            ReplicaMessage::NotHeld {
                partition,
                from,
                map,
            } => {
                // Down through a move and its hand-off: the peers dropped
                // the partition; so does this node.
                let obsolete = self
                    .replicas
                    .get(&partition)
                    .is_some_and(|replica| map.obsoletes(replica.map(), partition, self.me));
                if obsolete {
                    tracing::info!(
                        partition = partition.0,
                        map_version = map.version.0,
                        "a peer's newer map moved this partition away while this node was down"
                    );
                    self.hand_off(partition);
                } else if let Some((to, message)) = self.transfer.not_held(partition, from, now) {
                    self.send_replica_message(to, message);
                }
            }
            ReplicaMessage::CheckpointChunk {
                partition,
                from,
                total,
                offset,
                bytes,
            } => match self
                .transfer
                .on_chunk(partition, from, total, offset, bytes, now)
            {
                ChunkOutcome::Ask(to, message) => self.send_replica_message(to, message),
                ChunkOutcome::Complete(body, file) => {
                    let obsolete = self.replicas.get(&partition).is_some_and(|replica| {
                        body.replica
                            .map
                            .obsoletes(replica.map(), partition, self.me)
                    });
                    if obsolete {
                        // Down through a move and its hand-off (or started
                        // afresh after one): the peer's state is no longer
                        // this node's to hold.
                        tracing::info!(
                            partition = partition.0,
                            "a peer's checkpoint shows this partition moved away"
                        );
                        self.hand_off(partition);
                        return;
                    }
                    // Only a checkpoint at or past every point the streams
                    // were trimmed below is of use.
                    let covers = body.position.lanes.iter().all(|lane| {
                        self.node
                            .streams()
                            .get(&lane.stream)
                            .and_then(|s| s.learner_trimmed())
                            .is_none_or(|below| lane.next >= below)
                    });
                    if covers {
                        self.installs.push((partition, body, file));
                    } else if let Some((to, message)) = self.transfer.too_old(partition, now) {
                        self.send_replica_message(to, message);
                    }
                }
                ChunkOutcome::Nothing => {}
            },
            ReplicaMessage::Signal { .. } | ReplicaMessage::SignalRequest { .. } => {}
        }
    }

    /// Sends the first chunk of `partition`'s checkpoint just written to
    /// the peers that waited for a newer one (non-disruptive recovery).
    pub(super) fn serve_waiting(&mut self, partition: PartitionId) {
        let now = self.now();
        for (asker, at_least) in self.transfer.take_waiting(partition) {
            if self.checkpointer.write_if_older(partition, &at_least, now) {
                // Written from a state taken before the request (or the
                // write failed): the next one.
                self.transfer.wait(partition, asker, at_least);
                continue;
            }
            let reply = self.transfer.on_request(partition, 0, now);
            self.send_replica_message(asker, reply);
        }
    }

    /// Installs fetched peer checkpoints: the file becomes this replica's
    /// checkpoint, the replica and its merge restart from it.
    pub(super) fn install_checkpoints(&mut self) {
        for (asked, body, file) in std::mem::take(&mut self.installs) {
            // The peer may have sent the partition `asked` merged into.
            let partition = body.replica.partition;
            if partition != asked {
                self.transfer.cancel(asked);
                let ahead = self.replicas.get(&partition).is_some_and(|r| {
                    r.global_position() >= body.replica.global_position
                        && r.map().version >= body.replica.map.version
                });
                if ahead {
                    continue;
                }
            }
            let adopting = self.adopting(partition);
            if adopting && !self.adoptable(partition, &body) {
                // Taken before the move reached that peer: ask again at
                // the next tick.
                self.transfer.cancel(partition);
                continue;
            }
            if !adopting && !self.replicas.contains_key(&partition) {
                self.transfer.cancel(partition);
                continue;
            }
            if let Err(error) = self.store.write_bytes(partition, &file) {
                tracing::error!(%error, "cannot store a peer's checkpoint; fetching again");
                self.transfer.cancel(partition);
                continue;
            }
            let old = self.replicas.remove(&partition);
            let config = ReplicaConfig::new(self.me, self.incarnation, partition);
            let state = PartitionState::new(MapLimits::default());
            let body = *body;
            let lanes = lanes_of(&body.position);
            let mut replica = match Replica::restore(config, body.replica, state) {
                Ok(replica) => replica,
                Err(error) => {
                    tracing::error!(%error, "a peer's checkpoint does not restore");
                    if let Some(old) = old {
                        self.replicas.insert(partition, old);
                    }
                    self.transfer.cancel(partition);
                    continue;
                }
            };
            crate::injected_bug::apply(&mut replica);
            // Streams the checkpoint's merge names that were created at run
            // time after this node's own state (a split, a replacement).
            for lane in &body.position.lanes {
                if self.node.streams().contains_key(&lane.stream) {
                    continue;
                }
                if let Some(spec) = replica.map().streams.get(&lane.stream).cloned() {
                    if let Err(error) = self.open_runtime_stream(&spec) {
                        tracing::error!(%error, "cannot open a stream a peer's checkpoint merges");
                    }
                }
            }
            let group = GroupId(partition.0);
            let restored = match old {
                Some(_) => self.node.restore_group(group, &body.position),
                // Moved here: the merge group starts at the checkpoint.
                None => self.node.add_group(group, &body.position),
            };
            if let Err(error) = restored {
                tracing::error!(
                    ?error,
                    "a peer's checkpoint does not fit this node's streams"
                );
                if let Some(old) = old {
                    self.replicas.insert(partition, old);
                }
                self.transfer.cancel(partition);
                continue;
            }
            if let Some(old) = &old {
                replica.continue_requests_of(old);
            }
            let global = replica.global_position();
            tracing::info!(
                partition = partition.0,
                global_position = global,
                lanes = ?lanes.iter().map(|(s, i)| (s.0, i.0)).collect::<Vec<_>>(),
                bytes = file.len(),
                "replica restored from a peer's checkpoint"
            );
            self.replicas.insert(partition, replica);
            // The replaced replica's waiting clients resend (to it or
            // another replica) when their waiter is dropped.
            self.pending.retain(|(p, _), _| *p != partition);
            self.checkpointer.installed(partition, global, lanes);
            self.transfer.installed(partition);
        }
    }

    /// Publishes this node's safe instances (its replicas' durable
    /// checkpoints) in the streams' heartbeats, and trims each acceptor log
    /// below what a majority of each subscribing partition's replicas
    /// holds (thesis §3.4.2; a replica left behind fetches a peer's
    /// checkpoint, `need_transfer`). Also retries stalled transfers.
    pub(super) fn trim_logs(&mut self) {
        let Some(map) = self.current_map().cloned() else {
            return;
        };
        self.adopt_and_hand_off(&map);
        for (to, message) in self.transfer.tick(self.now()) {
            self.send_replica_message(to, message);
        }
        let behind: Vec<(StreamId, Instance)> = self
            .node
            .streams()
            .iter()
            .filter_map(|(id, s)| Some((*id, s.learner_trimmed()?)))
            .collect();
        for (stream, below) in behind {
            self.need_transfer(stream, below);
        }
        let streams: Vec<StreamId> = self.node.streams().keys().copied().collect();
        for stream in streams {
            let safe = self.checkpointer.safe_instance(stream);
            let Some(node) = self.node.stream_mut(stream) else {
                continue;
            };
            if let Some(safe) = safe {
                node.set_safe_instance(safe);
            }
            let before = node.trimmed_below();
            let reports = node.safe_instances();
            if let Some(point) = trim_point(&map, stream, &reports, TrimQuorum::Majority) {
                self.node.trim_stream(stream, point);
                let after = self.node.streams()[&stream].trimmed_below();
                if after > before {
                    tracing::debug!(%stream, below = after.0, "acceptor log trimmed");
                }
            }
        }
    }
}
