//! SCONEKV §4–§5 on the total order (docs/transactions.md): read versions
//! taken on the global stream with the signal exchange, commits voted by
//! every partition they involve and applied by all or none, conflicts
//! found in the index of recent writes (ranges included: phantoms count),
//! blind writes that never conflict, votes kept for late askers, and
//! reads served from a read version's snapshot while writers go on.
//!
//! Two partitions (nodes 1-3 replicate partition 1 on stream 2, nodes 4-6
//! partition 2 on stream 3; the global stream is 1), map "m" by hash.

use amulet_dmap::{
    KeyBound, KeyRange, MapCommand, MapError, MapReply, PartitionState, ReadConflict, TxnWrite,
};
use amulet_smr::{Body, ClientReply, ClientRequest, Output, Replica, ReplicaMessage};
use amulet_types::{NodeId, PartitionId, StreamId};
use bytes::Bytes;

mod common;
use common::{map_name, replica};

/// One replica of each partition, passing signals between them.
struct Two {
    a: Replica<PartitionState>,
    b: Replica<PartitionState>,
    /// Replies each replica gave its own clients.
    replies_a: Vec<ClientReply<MapReply>>,
    replies_b: Vec<ClientReply<MapReply>>,
    /// Signals dropped on the way (to test asking again).
    drop_signals: bool,
}

impl Two {
    fn new() -> Two {
        Two {
            a: replica(1, 1, 1 << 20),
            b: replica(4, 2, 1 << 20),
            replies_a: Vec::new(),
            replies_b: Vec::new(),
            drop_signals: false,
        }
    }

    fn key_of(&self, partition: u32, nth: usize) -> Bytes {
        (0..=u16::MAX)
            .map(|i| Bytes::from(format!("k{i}")))
            .filter(|k| self.a.map().partition_of("m", k) == Ok(PartitionId(partition)))
            .nth(nth)
            .expect("keys of every partition")
    }

    /// Submits `command` at partition `at`'s replica and delivers what it
    /// proposes to every replica that merges that stream, passing signals
    /// until nothing moves; returns the submitter's reply.
    fn run(&mut self, at: u32, command: MapCommand) -> ClientReply<MapReply> {
        let submitter = if at == 1 { &mut self.a } else { &mut self.b };
        let request = ClientRequest {
            map_version: submitter.map().version,
            session: None,
            body: Body::App(command),
            principal: None,
        };
        submitter.submit(0, request);
        let Output::Propose { stream, value, .. } = submitter.drain().remove(0) else {
            panic!("the command is proposed")
        };
        if stream == StreamId(1) || stream == StreamId(2) {
            self.a.on_deliver(stream, &value);
        }
        if stream == StreamId(1) || stream == StreamId(3) {
            self.b.on_deliver(stream, &value);
        }
        self.pass();
        let replies = if at == 1 {
            &mut self.replies_a
        } else {
            &mut self.replies_b
        };
        replies.pop().expect("the command was answered")
    }

    /// Passes messages between the two replicas until none is left.
    fn pass(&mut self) {
        for _ in 0..100 {
            let (out_a, out_b) = (self.a.drain(), self.b.drain());
            let mut moved = false;
            for (out, replies) in [(out_a, &mut self.replies_a), (out_b, &mut self.replies_b)] {
                for output in out {
                    match output {
                        Output::Reply { reply, .. } => replies.push(reply),
                        Output::Send { to, message } => {
                            if self.drop_signals {
                                continue;
                            }
                            moved = true;
                            match to.0 {
                                1 => self.a.on_message(message),
                                4 => self.b.on_message(message),
                                _ => {}
                            }
                        }
                        Output::Propose { .. } => panic!("nothing else is proposed"),
                    }
                }
            }
            if !moved {
                return;
            }
        }
        panic!("messages kept moving");
    }

    fn begin(&mut self) -> u64 {
        match self.run(
            1,
            MapCommand::BeginTransaction {
                lease_micros: 10_000_000,
                end: vec![],
            },
        ) {
            ClientReply::Done(MapReply::ReadVersion(v)) => v,
            other => panic!("begin answered {other:?}"),
        }
    }

    fn get(&mut self, key: &Bytes) -> Option<Bytes> {
        let at = self.partition_of(key);
        match self.run(
            at,
            MapCommand::Get {
                map: map_name(),
                key: key.clone(),
            },
        ) {
            ClientReply::Done(MapReply::Value(v)) => v,
            other => panic!("get answered {other:?}"),
        }
    }

    fn put(&mut self, key: &Bytes, value: &str) {
        let at = self.partition_of(key);
        let reply = self.run(
            at,
            MapCommand::Put {
                map: map_name(),
                key: key.clone(),
                value: Bytes::from(value.to_string()),
            },
        );
        assert!(matches!(reply, ClientReply::Done(MapReply::Value(_))));
    }

    fn partition_of(&self, key: &Bytes) -> u32 {
        self.a.map().partition_of("m", key).unwrap().0
    }

    /// Commits at the first involved partition's replica (the client's
    /// routing: a single-partition commit goes on its own stream).
    fn commit(
        &mut self,
        read_version: Option<u64>,
        reads: Vec<ReadConflict>,
        writes: Vec<TxnWrite>,
    ) -> ClientReply<MapReply> {
        let command = MapCommand::Commit {
            read_version,
            reads,
            writes,
        };
        let at = self
            .a
            .map()
            .partitions_for(&<PartitionState as amulet_smr::StateMachine>::placement(
                &command,
            ))
            .unwrap()[0]
            .0;
        self.run(at, command)
    }
}

fn read(key: &Bytes) -> ReadConflict {
    ReadConflict {
        map: map_name(),
        range: KeyRange::single(key.clone()),
    }
}

fn write(key: &Bytes, value: &str) -> TxnWrite {
    TxnWrite {
        map: map_name(),
        key: key.clone(),
        value: Some(Bytes::from(value.to_string())),
    }
}

fn conflict_on(reply: &ClientReply<MapReply>, key: &Bytes) -> bool {
    matches!(reply, ClientReply::Done(MapReply::Failed(MapError::Conflict { key: Some(k), .. })) if k == key)
}

#[test]
fn sconekv_4_a_commit_whose_reads_were_not_written_since_applies() {
    let mut two = Two::new();
    let (x, y) = (two.key_of(1, 0), two.key_of(1, 1));
    two.put(&x, "1");
    let version = two.begin();
    let reply = two.commit(Some(version), vec![read(&x)], vec![write(&y, "2")]);
    assert_eq!(reply, ClientReply::Done(MapReply::Done));
    assert_eq!(two.get(&y), Some(Bytes::from("2")));
}

#[test]
fn sconekv_4_a_commit_whose_read_key_was_written_since_aborts_and_changes_nothing() {
    let mut two = Two::new();
    let (x, y) = (two.key_of(1, 0), two.key_of(1, 1));
    let version = two.begin();
    two.put(&x, "by someone else");
    let reply = two.commit(Some(version), vec![read(&x)], vec![write(&y, "2")]);
    assert!(conflict_on(&reply, &x), "{reply:?}");
    assert_eq!(two.get(&y), None, "nothing applied");
}

#[test]
fn sconekv_4_phantoms_count_an_insert_into_a_read_range_conflicts() {
    let mut two = Two::new();
    let x = two.key_of(1, 0);
    let version = two.begin();
    two.put(&x, "a phantom");
    // The transaction read the whole map and found it empty.
    let everything = ReadConflict {
        map: map_name(),
        range: KeyRange {
            from: None,
            to: None,
        },
    };
    let marker = two.key_of(2, 0);
    let reply = two.commit(Some(version), vec![everything], vec![write(&marker, "m")]);
    assert!(conflict_on(&reply, &x), "{reply:?}");
    assert_eq!(two.get(&marker), None);
    // A range that misses the new key does not conflict.
    let version = two.begin();
    two.put(&x, "again");
    let before = ReadConflict {
        map: map_name(),
        range: KeyRange {
            from: None,
            to: Some(KeyBound {
                key: x.clone(),
                inclusive: false,
            }),
        },
    };
    let reply = two.commit(Some(version), vec![before], vec![write(&marker, "m")]);
    assert_eq!(reply, ClientReply::Done(MapReply::Done));
}

#[test]
fn sconekv_4_a_multi_partition_commit_applies_in_every_partition_or_in_none() {
    let mut two = Two::new();
    let (x1, x2) = (two.key_of(1, 0), two.key_of(2, 0));
    // Both partitions vote yes: both apply.
    let version = two.begin();
    let reply = two.commit(
        Some(version),
        vec![read(&x1), read(&x2)],
        vec![write(&x1, "a"), write(&x2, "b")],
    );
    assert_eq!(reply, ClientReply::Done(MapReply::Done));
    assert_eq!(
        (two.get(&x1), two.get(&x2)),
        (Some(Bytes::from("a")), Some(Bytes::from("b")))
    );
    // Partition 2's read was written since: partition 1 must not apply
    // its own write although its own vote is yes.
    let version = two.begin();
    two.put(&x2, "interfering");
    let reply = two.commit(
        Some(version),
        vec![read(&x1), read(&x2)],
        vec![write(&x1, "c"), write(&x2, "d")],
    );
    assert!(conflict_on(&reply, &x2), "{reply:?}");
    assert_eq!(
        (two.get(&x1), two.get(&x2)),
        (Some(Bytes::from("a")), Some(Bytes::from("interfering")))
    );
}

#[test]
fn sconekv_4_blind_writes_never_conflict() {
    let mut two = Two::new();
    let (x1, x2) = (two.key_of(1, 0), two.key_of(2, 0));
    two.put(&x1, "old");
    let reply = two.commit(None, vec![], vec![write(&x1, "new"), write(&x2, "new")]);
    assert_eq!(reply, ClientReply::Done(MapReply::Done));
    assert_eq!(two.get(&x1), Some(Bytes::from("new")));
    assert_eq!(two.get(&x2), Some(Bytes::from("new")));
}

#[test]
fn sconekv_4_a_commit_after_its_read_version_ended_is_too_old() {
    let mut two = Two::new();
    let x = two.key_of(1, 0);
    let version = two.begin();
    let ended = two.run(
        1,
        MapCommand::EndTransaction {
            read_version: version,
        },
    );
    assert_eq!(ended, ClientReply::Done(MapReply::Done));
    let reply = two.commit(Some(version), vec![read(&x)], vec![write(&x, "v")]);
    assert_eq!(
        reply,
        ClientReply::Done(MapReply::Failed(MapError::ReadVersionTooOld(version)))
    );
    assert_eq!(two.get(&x), None);
}

#[test]
fn sconekv_4_a_read_version_from_the_future_is_refused() {
    let mut two = Two::new();
    let x = two.key_of(1, 0);
    let reply = two.commit(Some(1_000), vec![read(&x)], vec![write(&x, "v")]);
    assert_eq!(
        reply,
        ClientReply::Done(MapReply::Failed(MapError::FutureReadVersion(1_000)))
    );
}

#[test]
fn sconekv_5_reads_at_a_read_version_see_its_snapshot_while_writers_go_on() {
    let mut two = Two::new();
    let x = two.key_of(1, 0);
    two.put(&x, "before");
    let version = two.begin();
    two.put(&x, "after");
    let get = MapCommand::Get {
        map: map_name(),
        key: x.clone(),
    };
    let position = two.a.global_position();
    let (reply, written_since) = two.a.state().read_at(version, &get, position).unwrap();
    assert_eq!(reply, MapReply::Value(Some(Bytes::from("before"))));
    assert!(written_since, "the read tells the transaction it is doomed");
    let put = MapCommand::Put {
        map: map_name(),
        key: x.clone(),
        value: Bytes::new(),
    };
    assert!(matches!(
        two.a.state().read_at(version, &put, position),
        Err(MapError::BadTransaction(_))
    ));
    assert_eq!(
        two.a.state().read_at(version + 5, &get, position),
        Err(MapError::FutureReadVersion(version + 5))
    );
}

#[test]
fn sconekv_4_a_vote_pushed_out_of_the_signal_cache_is_still_answered() {
    // Partition 2's replica keeps no partials at all (a 0-byte cache): a
    // replica of partition 1 that asks late still gets its vote.
    let mut two = Two::new();
    two.b = replica(4, 2, 0);
    let (x1, x2) = (two.key_of(1, 0), two.key_of(2, 0));
    let version = two.begin();
    two.drop_signals = true;
    let command = MapCommand::Commit {
        read_version: Some(version),
        reads: vec![read(&x1), read(&x2)],
        writes: vec![write(&x1, "a"), write(&x2, "b")],
    };
    let request = ClientRequest {
        map_version: two.a.map().version,
        session: None,
        body: Body::App(command),
        principal: None,
    };
    two.a.submit(0, request);
    let Output::Propose { value, .. } = two.a.drain().remove(0) else {
        panic!("proposed")
    };
    two.a.on_deliver(StreamId(1), &value);
    two.b.on_deliver(StreamId(1), &value);
    two.pass();
    assert!(
        two.a.is_waiting(),
        "partition 1 never got partition 2's vote"
    );
    // Partition 2 went on (it had partition 1's vote? no: it waits too),
    // so let it finish first with partition 1's vote, then lose its cache.
    two.drop_signals = false;
    two.a.tick(1_000_000);
    two.b.tick(1_000_000);
    two.pass();
    assert!(!two.a.is_waiting() && !two.b.is_waiting());
    assert_eq!(two.replies_a.pop(), Some(ClientReply::Done(MapReply::Done)));
    // A vote asked for after the cache (0 bytes) dropped it: answered
    // from the votes kept.
    let request = ReplicaMessage::SignalRequest {
        global_position: two.b.global_position(),
        from: NodeId(2),
    };
    two.b.on_message(request);
    let answered = two.b.drain().into_iter().any(|o| {
        matches!(
            o,
            Output::Send {
                message: ReplicaMessage::Signal {
                    partial: Some(_),
                    ..
                },
                ..
            }
        )
    });
    assert!(answered, "the vote is answered from the votes kept");
}

#[test]
fn sconekv_4_recent_writes_and_read_versions_survive_a_checkpoint() {
    let mut two = Two::new();
    let (x, y) = (two.key_of(1, 0), two.key_of(1, 1));
    let version = two.begin();
    two.put(&x, "since");
    let checkpoint = two.a.checkpoint().expect("idle");
    let config = amulet_smr::ReplicaConfig::new(NodeId(1), 2, PartitionId(1));
    two.a = Replica::restore(
        config,
        checkpoint,
        PartitionState::new(amulet_dmap::MapLimits::default()),
    )
    .unwrap();
    let reply = two.commit(Some(version), vec![read(&x)], vec![write(&y, "v")]);
    assert!(conflict_on(&reply, &x), "{reply:?}");
    // The restored replica keeps the lease, not the snapshot.
    let get = MapCommand::Get {
        map: map_name(),
        key: x.clone(),
    };
    let position = two.a.global_position();
    assert_eq!(
        two.a.state().read_at(version, &get, position),
        Err(MapError::ReadVersionElsewhere(version))
    );
}
