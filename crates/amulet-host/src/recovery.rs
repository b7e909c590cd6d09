//! Recovery from a peer (thesis §3.4.2, §3.4.4; DMap §III-C), the host's
//! side: a replica trimmed past asks its peers for a checkpoint (naming
//! the new decisions it holds), a peer serves its own (writing a newer one
//! first if asked), or says where the partition lives now (`NotHeld`); a
//! fetched checkpoint is checked and installed between flush rounds. The
//! chunking itself is `state_transfer.rs`.

use crate::checkpoint_codec::{decode_checkpoint, CheckpointBody};
use crate::checkpointer::{lanes_of, Purpose};
use crate::command::{CheckpointFile, Command, Durability, WriteId, WriteOutcome};
use crate::edge::prepare_replica;
use crate::host::{Fetched, Host, HostError};
use crate::state_transfer::{ChunkOutcome, Serve, Waiter, WAITED_WRITES_MAX};
use crate::storage::{with_fence_host, LogOpener};
use amulet_smr::{
    group_of, open_streams, Reconfiguration, Replica, ReplicaConfig, ReplicaMessage, StateMachine,
};
use amulet_types::{Instance, NodeId, PartitionId, StreamId, TimeMicros};
use bytes::Bytes;

impl<S: StateMachine> Host<S> {
    /// `stream` was trimmed below `below` past this node's learner: every
    /// replica here that merges the stream from below that point fetches
    /// a peer's checkpoint.
    pub(crate) fn need_transfer(&mut self, stream: StreamId, below: Instance, now: TimeMicros) {
        let me = self.config.me;
        let partitions: Vec<PartitionId> = self.replicas.keys().copied().collect();
        for partition in partitions {
            let group = group_of(partition);
            let behind = self
                .node
                .merger(group)
                .and_then(|m| m.next_instance(stream))
                .is_some_and(|next| next < below);
            if !behind {
                continue;
            }
            // The replica's own map names its peers: the newest map may
            // have merged it away already (it retires at its fence).
            let peers = self.replicas[&partition]
                .map()
                .recovery_sources(partition, me);
            let at_least = self.node.held_decisions(group);
            if let Some((to, message)) = self.transfer.start(partition, peers, at_least, now) {
                self.out.push(Command::SendReplica {
                    to,
                    message: Box::new(message),
                });
            }
        }
    }

    /// A replica stopped at a merge's fence waits there for the merged
    /// partition's replica here to reach the same fence. When there is
    /// none and none is being fetched (the node was down through the
    /// split that gave it the source, and through the merge: its fetch of
    /// the source was abandoned once a newer map showed it merged away),
    /// it never will: the replica fetches a peer's checkpoint of its own
    /// partition, past the merge (simulator seed 2001683 of `--dmap`).
    pub(crate) fn fetch_past_stranded_merges(&mut self, now: TimeMicros) {
        let me = self.config.me;
        let stranded: Vec<PartitionId> = self
            .replicas
            .iter()
            .filter(|(partition, replica)| {
                self.node.fenced(group_of(**partition)).is_some()
                    && replica.is_idle()
                    && matches!(
                        replica.pending_reconfiguration(),
                        Some(Reconfiguration::Merge { source, into })
                            if into == *partition
                                && !self.replicas.contains_key(source)
                                && !self.transfer.fetching(*source)
                    )
            })
            .map(|(partition, _)| *partition)
            .collect();
        for partition in stranded {
            let peers = self.replicas[&partition]
                .map()
                .recovery_sources(partition, me);
            let at_least = self.node.held_decisions(group_of(partition));
            if let Some((to, message)) = self.transfer.start(partition, peers, at_least, now) {
                tracing::warn!(
                    partition = partition.0,
                    "waiting at a merge's fence for a partition not here: fetching past it"
                );
                self.out.push(Command::SendReplica {
                    to,
                    message: Box::new(message),
                });
            }
        }
    }

    /// State transfer messages (both sides).
    pub(crate) fn on_transfer_message(&mut self, now: TimeMicros, message: ReplicaMessage) {
        let me = self.config.me;
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
                // Streams retired here are past their last fence for every
                // checkpoint we write: what the asker holds of them needs
                // no newer one (an asker cut off through a move that kept
                // it in the group names the partition's old stream, which
                // no checkpoint here merges any more; waiting for one
                // would never end: simulator seed 10736, txn mode).
                let at_least: Vec<(StreamId, Instance)> = match self.current_map() {
                    Some(map) => at_least
                        .into_iter()
                        .filter(|(stream, _)| !map.retired_streams.contains(stream))
                        .collect(),
                    None => at_least,
                };
                if offset == 0
                    && serve == partition
                    && self.replicas.contains_key(&serve)
                    && !self.checkpointer.reaches(serve, &at_least)
                {
                    // Ours is older than what the asker holds since: a new
                    // one goes to it when written (now, if this merge
                    // already merges every stream named; else once it
                    // passes the fence that adds them, `write_for_waiters`).
                    if self.merges_all(serve, &at_least) {
                        self.checkpointer.write_soon(serve, now);
                    }
                    let waiter = Waiter {
                        at_least,
                        writes: 0,
                    };
                    self.transfer.wait(serve, from, waiter);
                    return;
                }
                if self.replicas.contains_key(&serve) {
                    self.serve(serve, partition, from, offset, now);
                } else if let Some(map) = self.current_map().cloned() {
                    // Moved away and handed off here (or never here): the
                    // asker learns where it lives now.
                    let message = ReplicaMessage::NotHeld {
                        partition,
                        from: me,
                        map: Box::new(map),
                    };
                    self.out.push(Command::SendReplica {
                        to: from,
                        message: Box::new(message),
                    });
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
                    .is_some_and(|replica| map.obsoletes(replica.map(), partition, me));
                if obsolete {
                    tracing::info!(
                        partition = partition.0,
                        map_version = map.version.0,
                        "a peer's newer map moved this partition away while this node was down"
                    );
                    self.hand_off(partition);
                    // With no replica left, the peer's map is the newest
                    // this node knows: adopting by the older one would
                    // fetch the partition just dropped.
                    self.learn_map(*map);
                } else if let Some((to, message)) = self.transfer.not_held(partition, from, now) {
                    self.out.push(Command::SendReplica {
                        to,
                        message: Box::new(message),
                    });
                }
            }
            ReplicaMessage::CheckpointChunk {
                partition,
                from,
                total,
                offset,
                bytes,
            } => {
                self.counters.transfer_chunks += 1;
                self.on_chunk(partition, from, total, offset, bytes, now);
            }
            ReplicaMessage::Signal { .. }
            | ReplicaMessage::SignalRequest { .. }
            | ReplicaMessage::Probe { .. }
            | ReplicaMessage::ProbeReply { .. }
            | ReplicaMessage::Map { .. }
            | ReplicaMessage::View { .. }
            | ReplicaMessage::Weights { .. } => {}
        }
    }

    /// A chunk of the checkpoint this node fetches.
    fn on_chunk(
        &mut self,
        partition: PartitionId,
        from: NodeId,
        total: u64,
        offset: u64,
        bytes: Bytes,
        now: TimeMicros,
    ) {
        match self
            .transfer
            .on_chunk(partition, from, total, offset, bytes, now)
        {
            ChunkOutcome::Ask(to, message) => self.out.push(Command::SendReplica {
                to,
                message: Box::new(message),
            }),
            // Another partition's checkpoint comes when the peer merged
            // the one asked for into it (installed as that).
            ChunkOutcome::Complete(file) => match decode_checkpoint(&file) {
                Ok(body) => self.fetched.push(Fetched {
                    asked: partition,
                    body: Box::new(body),
                    file,
                }),
                Err(error) => {
                    tracing::error!(
                        partition = partition.0,
                        peer = %from,
                        %error,
                        "a peer's checkpoint does not decode; asking another"
                    );
                    if let Some((to, message)) = self.transfer.next_peer(partition, now) {
                        self.out.push(Command::SendReplica {
                            to,
                            message: Box::new(message),
                        });
                    }
                }
            },
            ChunkOutcome::Nothing => {}
        }
    }

    /// Answers `asker`'s request for the chunk at `offset` of `serve`'s
    /// checkpoint (labelled `label`), reading the file first if needed.
    fn serve(
        &mut self,
        serve: PartitionId,
        label: PartitionId,
        asker: NodeId,
        offset: u64,
        now: TimeMicros,
    ) {
        match self.transfer.on_request(serve, label, asker, offset, now) {
            Serve::Chunk(to, message) => self.out.push(Command::SendReplica {
                to,
                message: Box::new(message),
            }),
            Serve::Read => self.out.push(Command::ReadCheckpoint { partition: serve }),
            Serve::Queued => {}
        }
    }

    /// The runtime read `partition`'s checkpoint file ([`Command::ReadCheckpoint`]):
    /// its bytes (`None`: there is none; an error is logged and served as
    /// none, so the asker turns to its next peer).
    pub fn checkpoint_read(
        &mut self,
        partition: PartitionId,
        file: Result<Option<Bytes>, String>,
        now: TimeMicros,
    ) {
        let file = file.unwrap_or_else(|error| {
            tracing::error!(partition = partition.0, %error, "cannot read a checkpoint a peer asked for");
            None
        });
        for (to, message) in self
            .transfer
            .on_read(partition, file.unwrap_or_default(), now)
        {
            self.out.push(Command::SendReplica {
                to,
                message: Box::new(message),
            });
        }
    }

    /// The runtime finished the checkpoint write `write` of `partition`
    /// ([`Command::WriteCheckpoint`]). A failed write a restart depends on
    /// stops the node.
    pub fn checkpoint_written(
        &mut self,
        partition: PartitionId,
        write: WriteId,
        outcome: WriteOutcome,
        now: TimeMicros,
    ) -> Result<(), HostError> {
        let Some(done) = self.checkpointer.finished(write, outcome) else {
            return Ok(());
        };
        debug_assert_eq!(
            done.partition, partition,
            "a write reported for its partition"
        );
        match (&done.outcome, done.purpose) {
            (WriteOutcome::Failed(error), Purpose::Fork | Purpose::Absorb) => {
                return Err(HostError::FenceCheckpoint {
                    partition: partition.0,
                    error: error.clone(),
                })
            }
            (WriteOutcome::Failed(error), purpose) => {
                tracing::error!(partition = partition.0, ?purpose, %error, "checkpoint write failed");
            }
            (WriteOutcome::Written(bytes), purpose) => {
                tracing::info!(
                    partition = partition.0,
                    ?purpose,
                    global_position = self.checkpointer.stats(partition).global_position,
                    bytes,
                    "checkpoint written"
                );
            }
            (WriteOutcome::Superseded, _) => {}
        }
        self.serve_waiting(partition, now);
        self.check_after_step();
        Ok(())
    }

    /// Sends the first chunk of `partition`'s checkpoint just written to
    /// the peers that waited for a newer one (non-disruptive recovery):
    /// to each whose `at_least` it reaches, and to each that has waited
    /// for [`WAITED_WRITES_MAX`] writes merging every stream it names.
    /// The last write began after the request and still falls short, so
    /// this replica is behind the asker, and waiting longer may wait for
    /// the asker itself (a new stream it is an acceptor of); it installs
    /// this one and fetches the gap from the acceptors.
    fn serve_waiting(&mut self, partition: PartitionId, now: TimeMicros) {
        for (asker, mut waiter) in self.transfer.take_waiting(partition) {
            if !self.checkpointer.reaches(partition, &waiter.at_least) {
                if self.checkpointer.merges_all(partition, &waiter.at_least) {
                    waiter.writes += 1;
                }
                if waiter.writes < WAITED_WRITES_MAX {
                    // Written from a state taken before the request, or
                    // before the fence that adds a stream named, or the
                    // write failed: a later one.
                    self.transfer.wait(partition, asker, waiter);
                    continue;
                }
            }
            self.serve(partition, partition, asker, 0, now);
        }
    }

    /// Makes a checkpoint due now for every partition whose waiting
    /// askers name only streams its merge now merges (a peer passed the
    /// fence that adds them after they asked). Every trim tick.
    pub(crate) fn write_for_waiters(&mut self, now: TimeMicros) {
        let due: Vec<PartitionId> = self
            .transfer
            .waiting()
            .filter(|(partition, at_least)| {
                !self.checkpointer.reaches(*partition, at_least)
                    && self.merges_all(*partition, at_least)
            })
            .map(|(partition, _)| partition)
            .collect();
        for partition in due {
            self.checkpointer.write_soon(partition, now);
        }
    }

    /// Whether `partition`'s merge here merges every stream `at_least`
    /// names.
    fn merges_all(&self, partition: PartitionId, at_least: &[(StreamId, Instance)]) -> bool {
        self.node
            .merger(group_of(partition))
            .is_some_and(|merger| at_least.iter().all(|(stream, _)| merger.feeds_on(*stream)))
    }

    /// Checks and installs the peer checkpoints fetched (between flush
    /// rounds).
    pub(crate) fn install_fetched(
        &mut self,
        now: TimeMicros,
        storage: &mut dyn LogOpener,
    ) -> Result<(), HostError> {
        let me = self.config.me;
        for Fetched { asked, body, file } in std::mem::take(&mut self.fetched) {
            let obsolete = self
                .replicas
                .get(&asked)
                .is_some_and(|replica| body.replica.map.obsoletes(replica.map(), asked, me));
            if obsolete {
                // Down through a move and its hand-off (or started afresh
                // after one), or merged into a partition elsewhere: the
                // peer's state is no longer this node's to hold.
                tracing::info!(
                    partition = asked.0,
                    "a peer's checkpoint shows this partition moved away"
                );
                self.hand_off(asked);
                self.learn_map(body.replica.map.clone());
                continue;
            }
            // The run-time streams the checkpoint's map names, before its
            // merge needs them.
            self.open_streams_of(&body.replica.map, storage, now)?;
            // Only a checkpoint at or past every point its streams were
            // trimmed below is of use.
            let covers = body.position.lanes.iter().all(|lane| {
                self.node
                    .streams()
                    .get(&lane.stream)
                    .and_then(|s| s.learner_trimmed())
                    .is_none_or(|below| lane.next >= below)
            });
            if !covers {
                if let Some((to, message)) = self.transfer.next_peer(asked, now) {
                    self.out.push(Command::SendReplica {
                        to,
                        message: Box::new(message),
                    });
                }
                continue;
            }
            self.install(asked, *body, file, now);
        }
        Ok(())
    }

    /// Drops group 0, which a node started without replicas merges its
    /// streams in (`start.rs`, `merge_groups`), once a replica's group
    /// takes over. Nothing executes what group 0 merges, yet its lanes
    /// hold the learners back (a learner is fed from the lowest instance
    /// any group expects): a node down while the global stream was trimmed
    /// kept its learner at group 0's position, below the trim point, and
    /// the replica moved here never saw the global order again
    /// (simulator seed 10 of `--dmap`, a spare node given a partition by
    /// the balancer).
    fn drop_placeholder_group(&mut self) {
        let placeholder = amulet_multicast::GroupId(0);
        if self.config.groups.is_none() && self.node.merger(placeholder).is_some() {
            self.node.remove_group(placeholder);
        }
    }

    /// Opens every stream of `map` this node is a member of and lacks.
    fn open_streams_of(
        &mut self,
        map: &amulet_smr::PartitionMap,
        storage: &mut dyn LogOpener,
        now: TimeMicros,
    ) -> Result<(), HostError> {
        let limits = self.runtime_stream_limits();
        let node = &mut self.node;
        with_fence_host(
            self.config.me,
            self.config.incarnation,
            &*self.config.new_state,
            &limits,
            storage,
            false,
            now,
            |host| open_streams(node, map, host),
        )
        .map(|_| ())
    }

    /// Whether the replica of `partition` here has executed everything
    /// `body` reflects: further along the global stream, or as far with
    /// every lane of the checkpoint's merge merged as far here.
    fn is_behind_replica_here(
        &self,
        partition: PartitionId,
        body: &CheckpointBody<S::Checkpoint, S::Reply>,
    ) -> bool {
        let Some(here) = self.replicas.get(&partition) else {
            return false;
        };
        let theirs = body.replica.global_position;
        if here.global_position() != theirs {
            return here.global_position() > theirs;
        }
        if here.map().version < body.replica.map.version {
            // As far along the order, but the peer took effect of the
            // reconfiguration at this fence and the replica here waits at
            // it: for a merge, for the source's state, which may never
            // come (simulator seed 2001683 of `--dmap`: P3 merged into P1
            // while this node was down; P3 came here by a split it missed
            // and its fetch was answered with P1's checkpoint at the
            // merge's fence, found "not newer", and P1 waited for good).
            return false;
        }
        let Some(merged_here) = self.node.group_position(group_of(partition)) else {
            return false;
        };
        let merged_here = lanes_of(&merged_here);
        lanes_of(&body.position)
            .iter()
            .all(|(stream, next)| merged_here.iter().any(|(s, n)| s == stream && n >= next))
    }

    /// Installs a fetched peer checkpoint: the replica and its merge
    /// restart from it, and the file becomes this replica's checkpoint.
    fn install(
        &mut self,
        asked: PartitionId,
        body: CheckpointBody<S::Checkpoint, S::Reply>,
        file: Bytes,
        now: TimeMicros,
    ) {
        let me = self.config.me;
        // The peer may have sent the partition `asked` merged into.
        let partition = body.replica.partition;
        // Then the checkpoint holds `asked`'s state: its replica here,
        // behind the trim point, could never reach the merge's fence (a
        // chain of merges, P4 into P3 into P1, while this node was down:
        // P3's replica retires at P1's fence, P4's waited for P3 for
        // good and asked for it again every 100 ms; simulator seed
        // 2001595 of `--dmap`).
        let merged_away = partition != asked
            && body.replica.map.merged_into(asked) == partition
            && !body.replica.map.partitions.contains_key(&asked);
        if partition != asked {
            self.transfer.cancel(asked);
            let ahead = self.replicas.get(&partition).is_some_and(|r| {
                r.global_position() >= body.replica.global_position
                    && r.map().version >= body.replica.map.version
            });
            if ahead {
                if merged_away {
                    self.drop_merged_away(asked, partition);
                }
                return;
            }
        }
        let adopting = self.adopting(partition);
        let adoptable = body
            .replica
            .map
            .partitions
            .get(&partition)
            .is_some_and(|info| info.replicas.contains(&me));
        if adopting && !adoptable {
            // Taken before the move reached that peer: asked again at the
            // next trim tick.
            self.transfer.cancel(partition);
            return;
        }
        // A replica of `asked` behind the trim point may be this node's
        // only way to learn that the partition it merged into is now its
        // own too: moved here while this node was down, by maps it never
        // executed (simulator seed 2000664 of `--dmap`: p1 moved onto
        // nodes 4-6 and p2 merged into it while node 4, back from p2's
        // checkpoint at an old map, fetched p2 and was sent p1's
        // checkpoint every 100 ms, and dropped it each time for a
        // partition it did not know it held).
        let adopted_by_merge = merged_away && adoptable && self.replicas.contains_key(&asked);
        if !adopting && !adopted_by_merge && !self.replicas.contains_key(&partition) {
            self.transfer.cancel(partition);
            return;
        }
        if self.is_behind_replica_here(partition, &body) {
            // Never back: installing it would rewind the replica below
            // what the acceptors may have trimmed already (simulator seed
            // 2002022: a fetch begun before this node forked the partition
            // at a split's fence installed a checkpoint two global
            // positions behind the forked replica on two of its three
            // nodes, after the stream was trimmed past it; no replica
            // could catch up).
            self.transfer.cancel(partition);
            return;
        }
        let CheckpointBody {
            replica: checkpoint,
            position,
        } = body;
        let old = self.replicas.remove(&partition);
        let config = ReplicaConfig::new(me, self.config.incarnation, partition);
        let mut replica = match Replica::restore(config, checkpoint, (self.config.new_state)()) {
            Ok(replica) => replica,
            Err(error) => {
                tracing::error!(%error, "a peer's checkpoint does not restore");
                if let Some(old) = old {
                    self.replicas.insert(partition, old);
                }
                self.transfer.cancel(partition);
                return;
            }
        };
        prepare_replica(&mut replica, &self.config);
        let group = group_of(partition);
        let restored = if self.node.merger(group).is_some() {
            self.node.restore_group(group, &position)
        } else {
            // Moved here: the merge group starts at the checkpoint.
            self.node.add_group(group, &position)
        };
        if restored.is_ok() {
            self.drop_placeholder_group();
        }
        if let Err(error) = restored {
            tracing::error!(
                ?error,
                "a peer's checkpoint does not fit this node's streams"
            );
            if let Some(old) = old {
                self.replicas.insert(partition, old);
            }
            self.transfer.cancel(partition);
            return;
        }
        if let Some(old) = &old {
            // Commands the old replica proposed may still be decided and
            // are answered by number.
            replica.continue_requests_of(old);
        }
        let global = replica.global_position();
        tracing::info!(
            partition = partition.0,
            global_position = global,
            lanes = ?lanes_of(&position).iter().map(|(s, i)| (s.0, i.0)).collect::<Vec<_>>(),
            bytes = file.len(),
            "replica restored from a peer's checkpoint"
        );
        self.replicas.insert(partition, replica);
        // The replaced replica's waiting clients resend (to it or another
        // replica) when their waiter is dropped.
        self.abandon_requests(partition);
        self.checkpointer.track(partition, now);
        let write = self
            .checkpointer
            .begin(partition, global, &position, Purpose::Install, now);
        self.out.push(Command::WriteCheckpoint {
            partition,
            write,
            file: CheckpointFile::Bytes(file),
            durability: Durability::Now,
        });
        self.transfer.installed(partition);
        self.counters.transfers += 1;
        if merged_away {
            self.drop_merged_away(asked, partition);
        }
    }

    /// Drops this node's replica of `asked`, which a peer's checkpoint of
    /// `into` (installed here, or older than the replica here) shows
    /// merged into `into`.
    fn drop_merged_away(&mut self, asked: PartitionId, into: PartitionId) {
        if !self.replicas.contains_key(&asked) {
            return;
        }
        tracing::info!(
            partition = asked.0,
            into = into.0,
            "replica dropped: merged away while this node was behind"
        );
        self.hand_off(asked);
    }
}
