//! The resend, routing and session rules, driven by hand: a fake clock
//! (times passed in) and seeded generators.

use super::outcome::Outcome;
use super::resend::{Next, Request, Resend, Timing, STALE_MAP_RETRIES_AT_ONCE};
use super::routing;
use super::session::Session;
use crate::Error;
use amulet_smr::{ClientReply, Keys, Layout, PartitionInfo, PartitionMap, Placement};
use amulet_types::{MapVersion, NodeId, PartitionId, SessionId, StreamId, TimeMicros};
use bytes::Bytes;
use rand::rngs::StdRng;
use rand::SeedableRng;
use std::sync::Arc;

/// Answers to attempts given up as unanswered (`Resend::on_late_outcome`).
mod late_outcomes;

const SECOND_MICROS: u64 = 1_000_000;

fn timing() -> Timing {
    Timing {
        attempt_timeout_micros: 2 * SECOND_MICROS,
        operation_timeout_micros: 30 * SECOND_MICROS,
        session_lease_micros: 120 * SECOND_MICROS,
        backoff_min_micros: 10_000,
        backoff_max_micros: 500_000,
    }
}

/// Version 1: partition 1 on nodes 1-3, partition 2 on nodes 4-6, keyspace
/// "m" hashed over both.
fn map_v1() -> Arc<PartitionMap> {
    let partition = |replicas: [u32; 3], stream: u32| PartitionInfo {
        stream: StreamId(stream),
        replicas: replicas.into_iter().map(NodeId).collect(),
    };
    let mut map = PartitionMap::uniform(
        StreamId(0),
        vec![
            (PartitionId(1), partition([1, 2, 3], 1)),
            (PartitionId(2), partition([4, 5, 6], 2)),
        ],
    );
    map.create_keyspace("m", Layout::Hash)
        .expect("new keyspace");
    map.version = MapVersion(1);
    Arc::new(map)
}

/// Version 2: every partition moved to nodes 7-9.
fn map_v2() -> Arc<PartitionMap> {
    let mut map = PartitionMap::clone(&map_v1());
    for info in map.partitions.values_mut() {
        info.replicas = vec![NodeId(7), NodeId(8), NodeId(9)];
    }
    map.version = MapVersion(2);
    Arc::new(map)
}

fn all_nodes() -> Vec<NodeId> {
    (1..=9).map(NodeId).collect()
}

fn key(k: &str) -> Placement {
    Placement {
        keyspace: Some("m".into()),
        keys: Keys::One(Bytes::copy_from_slice(k.as_bytes())),
    }
}

fn open_session(at: TimeMicros) -> Session {
    let mut session = Session::with_id(SessionId(7));
    session.opened(at);
    session
}

/// The next request, which must be a command.
fn command(
    resend: &mut Resend,
    session: &Session,
    now: TimeMicros,
    map: &Arc<PartitionMap>,
    rng: &mut StdRng,
) -> (NodeId, PartitionId, MapVersion, u64) {
    command_suspecting(resend, session, now, map, &[], rng)
}

/// The next request, which must be a command, with `suspects` suspected.
fn command_suspecting(
    resend: &mut Resend,
    session: &Session,
    now: TimeMicros,
    map: &Arc<PartitionMap>,
    suspects: &[NodeId],
    rng: &mut StdRng,
) -> (NodeId, PartitionId, MapVersion, u64) {
    match resend
        .next_request(session, now, map, &key("k"), &all_nodes(), suspects, rng)
        .expect("routable")
    {
        Request::Command {
            to,
            partition,
            map_version,
            sequence,
        } => (to, partition, map_version, sequence),
        other => panic!("expected a command, got {other:?}"),
    }
}

/// The first attempt of an operation by a client preferring by `seed`,
/// with `suspects` suspected: where it goes, its partition, and the
/// operation's attempts.
fn first_attempt(
    seed: u64,
    session: &Session,
    map: &Arc<PartitionMap>,
    suspects: &[NodeId],
    rng: &mut StdRng,
) -> (NodeId, PartitionId, Resend) {
    let mut resend = Resend::new(TimeMicros(0), &timing(), false).preferring(seed);
    let (to, partition, ..) =
        command_suspecting(&mut resend, session, TimeMicros(0), map, suspects, rng);
    (to, partition, resend)
}

#[test]
fn dmap_iii_b_a_resend_keeps_the_map_its_first_attempt_was_routed_by_until_a_replica_answers_stale_map(
) {
    let mut rng = StdRng::seed_from_u64(1);
    let mut session = open_session(TimeMicros(0));
    let mut resend = Resend::new(TimeMicros(0), &timing(), false);
    let (to, _, version, _) = command(&mut resend, &session, TimeMicros(0), &map_v1(), &mut rng);
    assert_eq!(version, MapVersion(1));
    assert!(to.0 <= 6, "routed by version 1");
    // Another task refreshed the cache meanwhile: the resend still goes by
    // the map the sequence was first routed by.
    let next = resend.on_outcome::<()>(
        Outcome::NoAnswer("timeout".into()),
        &mut session,
        TimeMicros(2 * SECOND_MICROS),
    );
    assert_eq!(next, Next::Retry { refresh_map: false });
    resend
        .pause(TimeMicros(2 * SECOND_MICROS))
        .expect("before the deadline");
    let now = TimeMicros(3 * SECOND_MICROS);
    let (to, _, version, _) = command(&mut resend, &session, now, &map_v2(), &mut rng);
    assert_eq!(version, MapVersion(1), "still pinned");
    assert!(to.0 <= 6, "still routed by version 1");
    // A replica says the pinned map is stale: refresh, then route by the
    // newer map.
    let next = resend.on_outcome::<()>(Outcome::StaleMap("stale".into()), &mut session, now);
    assert_eq!(next, Next::Retry { refresh_map: true });
    resend.pause(now).expect("before the deadline");
    let (to, _, version, _) = command(&mut resend, &session, now, &map_v2(), &mut rng);
    assert_eq!(version, MapVersion(2));
    assert!(to.0 >= 7, "routed by version 2");
}

/// Suspects are an input of each attempt: nodes 1 and 2 suspected when
/// the operation started (behind while adopting a partition), node 3, the
/// one replica left, fails; with every replica suspected the resend goes
/// to 1 or 2, not to node 3 again (`dmap_repartitioning.rs` once sent
/// every resend of both writers to a killed node 3 for 60 s).
#[test]
fn dmap_iii_b_a_resend_after_the_one_unsuspected_replica_failed_goes_to_a_suspected_one() {
    for seed in 0..50 {
        let mut rng = StdRng::seed_from_u64(seed);
        let mut session = open_session(TimeMicros(0));
        let map = map_v1();
        let (first, partition, _) = first_attempt(seed, &session, &map, &[], &mut rng);
        let replicas = map.partitions[&partition].replicas.clone();
        // Restart with the other two replicas suspected: the first attempt
        // goes to the one left.
        let others: Vec<NodeId> = replicas.iter().copied().filter(|n| *n != first).collect();
        let (to, _, mut resend) = first_attempt(seed, &session, &map, &others, &mut rng);
        assert_eq!(to, first);
        let now = TimeMicros(2 * SECOND_MICROS);
        let next = resend.on_outcome::<()>(Outcome::NoAnswer("killed".into()), &mut session, now);
        assert_eq!(next, Next::Retry { refresh_map: false });
        resend.pause(now).expect("before the deadline");
        let (to, ..) = command_suspecting(&mut resend, &session, now, &map, &replicas, &mut rng);
        assert!(others.contains(&to), "seed {seed}: resent to {to:?}");
    }
}

#[test]
fn dmap_iii_b_a_resend_carries_the_same_sequence_to_another_replica_than_the_one_that_failed() {
    for seed in 0..200 {
        let mut rng = StdRng::seed_from_u64(seed);
        let mut session = open_session(TimeMicros(0));
        let mut resend = Resend::new(TimeMicros(0), &timing(), false);
        let (first, partition, _, sequence) =
            command(&mut resend, &session, TimeMicros(0), &map_v1(), &mut rng);
        let now = TimeMicros(2 * SECOND_MICROS);
        assert!(resend.unanswered(now), "the attempt timeout passed");
        let next = resend.on_outcome::<()>(Outcome::NoAnswer("timeout".into()), &mut session, now);
        assert_eq!(next, Next::Retry { refresh_map: false });
        assert_eq!(session.failed_at(), Some(first));
        let until = resend.pause(now).expect("before the deadline");
        let (second, again, _, resent) = command(&mut resend, &session, until, &map_v1(), &mut rng);
        assert_ne!(
            second, first,
            "seed {seed}: resent to the replica that failed"
        );
        assert_eq!((again, resent), (partition, sequence));
        assert!(map_v1().partitions[&partition].replicas.contains(&second));
    }
}

#[test]
fn a_partition_with_one_reachable_replica_gets_the_resend_there() {
    let mut rng = StdRng::seed_from_u64(3);
    let map = map_v1();
    for _ in 0..20 {
        let to = routing::replica(
            &map,
            PartitionId(1),
            Some(NodeId(2)),
            &[NodeId(2)],
            &[],
            None,
            &mut rng,
        );
        assert_eq!(to, Some(NodeId(2)));
    }
    assert_eq!(
        routing::replica(
            &map,
            PartitionId(1),
            None,
            &[NodeId(4)],
            &[],
            None,
            &mut rng
        ),
        None
    );
}

#[test]
fn a_keyspace_unknown_to_the_map_goes_to_the_lowest_partition() {
    let placement = Placement {
        keyspace: Some("not-there".into()),
        keys: Keys::One(Bytes::from_static(b"k")),
    };
    assert_eq!(
        routing::partition_for(&map_v1(), &placement),
        Some(PartitionId(1))
    );
}

#[test]
fn dmap_iii_b_a_session_is_renewed_after_half_its_lease() {
    let lease_micros = timing().session_lease_micros;
    let fresh = Session::with_id(SessionId(1));
    assert!(fresh.needs_opening(TimeMicros(0), lease_micros));
    let session = open_session(TimeMicros(10));
    let half = TimeMicros(10 + lease_micros / 2);
    assert!(!session.needs_opening(half, lease_micros));
    assert!(session.needs_opening(TimeMicros(half.0 + 1), lease_micros));
    // The next request of an operation renews it first, and the renewal
    // counts from when it was sent.
    let mut rng = StdRng::seed_from_u64(4);
    let mut session = session;
    let mut resend = Resend::new(half, &timing(), false);
    let later = TimeMicros(half.0 + 1);
    let request = resend
        .next_request(
            &session,
            later,
            &map_v1(),
            &key("k"),
            &all_nodes(),
            &[],
            &mut rng,
        )
        .expect("a node");
    assert!(matches!(request, Request::OpenSession { .. }));
    let answered = TimeMicros(later.0 + 5_000);
    assert_eq!(
        resend.on_outcome::<()>(Outcome::SessionOk, &mut session, answered),
        Next::Continue
    );
    assert!(!session.needs_opening(TimeMicros(later.0 + lease_micros / 2), lease_micros));
    assert!(session.needs_opening(TimeMicros(later.0 + lease_micros / 2 + 1), lease_micros));
    let (_, _, _, sequence) = command(&mut resend, &session, answered, &map_v1(), &mut rng);
    assert_eq!(sequence, 1);
}

#[test]
fn session_ids_come_from_the_generator_and_are_never_zero() {
    let a = Session::fresh(&mut StdRng::seed_from_u64(9));
    let b = Session::fresh(&mut StdRng::seed_from_u64(9));
    assert_eq!(a.id(), b.id());
    assert_ne!(a.id(), SessionId(0));
    struct Zero;
    impl rand::RngCore for Zero {
        fn next_u32(&mut self) -> u32 {
            0
        }
        fn next_u64(&mut self) -> u64 {
            0
        }
        fn fill_bytes(&mut self, dst: &mut [u8]) {
            dst.fill(0);
        }
    }
    assert_eq!(Session::fresh(&mut Zero).id(), SessionId(1));
}

#[test]
fn dmap_iii_b_a_sequence_is_used_up_whatever_happened() {
    let mut session = open_session(TimeMicros(0));
    let mut resend = Resend::new(TimeMicros(0), &timing(), false);
    let mut rng = StdRng::seed_from_u64(5);
    let (_, _, _, sequence) = command(&mut resend, &session, TimeMicros(0), &map_v1(), &mut rng);
    assert_eq!(sequence, 1);
    let next = resend.on_outcome::<()>(
        Outcome::Refused(Error::InvalidArgument("too large".into())),
        &mut session,
        TimeMicros(1),
    );
    assert_eq!(next, Next::Fail(Error::InvalidArgument("too large".into())));
    session.end_operation();
    let mut resend = Resend::new(TimeMicros(2), &timing(), false);
    let (_, _, _, sequence) = command(&mut resend, &session, TimeMicros(2), &map_v1(), &mut rng);
    assert_eq!(sequence, 2);
}

#[test]
fn dmap_iii_b_session_expired_reopens_the_session_then_resends_the_same_sequence() {
    let mut rng = StdRng::seed_from_u64(6);
    let mut session = open_session(TimeMicros(0));
    let mut resend = Resend::new(TimeMicros(0), &timing(), false);
    let (_, _, _, sequence) = command(&mut resend, &session, TimeMicros(0), &map_v1(), &mut rng);
    let now = TimeMicros(1_000);
    let next = resend.on_outcome::<()>(Outcome::SessionExpired("gone".into()), &mut session, now);
    assert_eq!(next, Next::Retry { refresh_map: false });
    assert!(!session.is_open());
    let until = resend.pause(now).expect("before the deadline");
    assert_eq!(until, TimeMicros(now.0 + 10_000), "after the first pause");
    let request = resend
        .next_request(
            &session,
            until,
            &map_v1(),
            &key("k"),
            &all_nodes(),
            &[],
            &mut rng,
        )
        .expect("a node");
    assert!(matches!(request, Request::OpenSession { .. }));
    assert_eq!(
        resend.on_outcome::<()>(Outcome::SessionOk, &mut session, until),
        Next::Continue
    );
    let (_, _, _, resent) = command(&mut resend, &session, until, &map_v1(), &mut rng);
    assert_eq!(resent, sequence);
}

#[test]
fn dmap_iii_b_behind_retries_after_a_pause_at_another_replica_of_the_partition() {
    for seed in 0..100 {
        let mut rng = StdRng::seed_from_u64(seed);
        let mut session = open_session(TimeMicros(0));
        let mut resend = Resend::new(TimeMicros(0), &timing(), false);
        let (first, partition, _, _) =
            command(&mut resend, &session, TimeMicros(0), &map_v1(), &mut rng);
        let now = TimeMicros(100);
        let next = resend.on_outcome::<()>(Outcome::Behind("behind".into()), &mut session, now);
        assert_eq!(next, Next::Retry { refresh_map: false });
        let until = resend.pause(now).expect("before the deadline");
        assert!(until > now, "not at once");
        let (to, _, _, _) = command(&mut resend, &session, until, &map_v1(), &mut rng);
        assert!(
            map_v1().partitions[&partition].replicas.contains(&to),
            "seed {seed}: a resend goes to a replica of its partition"
        );
        assert_ne!(to, first, "seed {seed}: not to the replica that was behind");
    }
}

#[test]
fn a_not_a_replica_answer_refreshes_the_map_and_resends_to_a_replica_by_it() {
    for seed in 0..100 {
        let mut rng = StdRng::seed_from_u64(seed);
        let mut session = open_session(TimeMicros(0));
        let mut resend = Resend::new(TimeMicros(0), &timing(), false);
        let (_, partition, _, _) =
            command(&mut resend, &session, TimeMicros(0), &map_v1(), &mut rng);
        let next = resend.on_outcome::<()>(
            Outcome::NotAReplica("no".into()),
            &mut session,
            TimeMicros(1),
        );
        assert_eq!(next, Next::Retry { refresh_map: true });
        assert!(resend.pinned().is_none(), "the pin ends with a stale map");
        let until = resend.pause(TimeMicros(1)).expect("before the deadline");
        let (to, _, version, _) = command(&mut resend, &session, until, &map_v1(), &mut rng);
        assert_eq!(version, MapVersion(1));
        assert!(map_v1().partitions[&partition].replicas.contains(&to));
    }
}

#[test]
fn pauses_double_up_to_their_limit() {
    let mut rng = StdRng::seed_from_u64(8);
    let mut session = open_session(TimeMicros(0));
    let mut resend = Resend::new(TimeMicros(0), &timing(), true);
    let mut now = TimeMicros(0);
    let mut pauses = Vec::new();
    for _ in 0..8 {
        command(&mut resend, &session, now, &map_v1(), &mut rng);
        resend.on_outcome::<()>(Outcome::Behind("behind".into()), &mut session, now);
        let until = resend.pause(now).expect("before the deadline");
        pauses.push(until.since(now));
        now = until;
    }
    assert_eq!(
        pauses,
        [10_000, 20_000, 40_000, 80_000, 160_000, 320_000, 500_000, 500_000]
    );
}

/// A stale map is news, not a fault: the retry under the fetched map goes
/// at once, for a few answers in a row, then pauses like any failure; an
/// answer of another kind ends the run (simulator seed 2002378 of
/// `--dmap`: with the 500 ms pause a whole-map snapshot opening lost
/// every race against a balancer changing the map twice a second).
#[test]
fn dmap_iii_b_a_stale_map_answer_is_retried_at_once_a_few_times_in_a_row() {
    let mut rng = StdRng::seed_from_u64(9);
    let mut session = open_session(TimeMicros(0));
    let mut resend = Resend::new(TimeMicros(0), &timing(), true);
    let mut now = TimeMicros(0);
    let mut pauses = Vec::new();
    let outcomes = (0..STALE_MAP_RETRIES_AT_ONCE + 2)
        .map(|_| Outcome::StaleMap("stale".into()))
        .chain([
            Outcome::Behind("behind".into()),
            Outcome::StaleMap("stale".into()),
        ]);
    for outcome in outcomes {
        command(&mut resend, &session, now, &map_v2(), &mut rng);
        resend.on_outcome::<()>(outcome, &mut session, now);
        let until = resend.pause(now).expect("before the deadline");
        pauses.push(until.since(now));
        now = until;
    }
    let at_once = STALE_MAP_RETRIES_AT_ONCE as usize;
    assert_eq!(pauses[..at_once], vec![0; at_once], "{pauses:?}");
    assert_eq!(
        pauses[at_once..],
        [10_000, 20_000, 40_000, 0],
        "{pauses:?}: pauses after the run of stale answers, then at once again"
    );
}

/// Feeds `outcome` to every attempt until the rules give up; returns the
/// error and when.
fn until_given_up(
    read_only: bool,
    outcome: impl Fn(&Request) -> Outcome<()>,
    session: &mut Session,
) -> (Error, TimeMicros) {
    let mut rng = StdRng::seed_from_u64(10);
    let timing = timing();
    let mut resend = Resend::new(TimeMicros(0), &timing, read_only);
    let mut now = TimeMicros(0);
    for _ in 0..1_000 {
        let request = resend
            .next_request(
                session,
                now,
                &map_v1(),
                &key("k"),
                &all_nodes(),
                &[],
                &mut rng,
            )
            .expect("a node");
        now = TimeMicros(now.0 + timing.attempt_timeout_micros);
        match resend.on_outcome(outcome(&request), session, now) {
            Next::Retry { .. } => match resend.pause(now) {
                Ok(until) => now = until,
                Err(error) => return (error, now),
            },
            Next::Continue => {}
            other => panic!("unexpected {other:?}"),
        }
    }
    panic!("never gave up");
}

#[test]
fn dmap_iii_b_a_timed_out_write_that_may_have_applied_ends_outcome_unknown_at_the_deadline() {
    let timing = timing();
    let mut session = open_session(TimeMicros(0));
    let no_answer = |_: &Request| Outcome::NoAnswer("no answer".into());
    let (error, at) = until_given_up(false, no_answer, &mut session);
    assert!(matches!(error, Error::OutcomeUnknown(_)), "{error:?}");
    assert!(at.0 + timing.backoff_max_micros >= timing.operation_timeout_micros);
    assert!(
        at.0 <= timing.operation_timeout_micros,
        "gave up by the deadline"
    );
    // A read changes nothing: the cluster was unavailable.
    let (error, _) = until_given_up(true, no_answer, &mut session);
    assert!(matches!(error, Error::Unavailable(_)), "{error:?}");
    // A write answered only "behind" was never ordered.
    let behind = |_: &Request| Outcome::Behind("behind".into());
    let (error, _) = until_given_up(false, behind, &mut session);
    assert!(matches!(error, Error::Unavailable(_)), "{error:?}");
}

#[test]
fn an_unanswered_session_opening_never_makes_a_write_outcome_unknown() {
    let mut session = Session::with_id(SessionId(3));
    let opening_lost = |request: &Request| match request {
        Request::OpenSession { .. } => Outcome::NoAnswer("no answer".into()),
        Request::Command { .. } => panic!("the session never opened"),
    };
    let (error, _) = until_given_up(false, opening_lost, &mut session);
    assert!(matches!(error, Error::Unavailable(_)), "{error:?}");
}

#[test]
fn a_lost_reply_ends_outcome_unknown_and_a_stale_sequence_is_a_protocol_error() {
    let mut rng = StdRng::seed_from_u64(11);
    let mut session = open_session(TimeMicros(0));
    let mut resend = Resend::new(TimeMicros(0), &timing(), false);
    command(&mut resend, &session, TimeMicros(0), &map_v1(), &mut rng);
    let next = resend.on_outcome::<()>(
        Outcome::ReplyLost("lost".into()),
        &mut session,
        TimeMicros(1),
    );
    assert_eq!(next, Next::Fail(Error::OutcomeUnknown("lost".into())));
    let mut resend = Resend::new(TimeMicros(0), &timing(), false);
    command(&mut resend, &session, TimeMicros(0), &map_v1(), &mut rng);
    let next = resend.on_outcome::<()>(
        Outcome::StaleSequence("ahead".into()),
        &mut session,
        TimeMicros(1),
    );
    assert!(matches!(next, Next::Fail(Error::Protocol(_))));
}

/// The class of an outcome, without its message.
fn class<R: std::fmt::Debug>(outcome: &Outcome<R>) -> String {
    match outcome {
        Outcome::Refused(error) => format!(
            "Refused({})",
            format!("{error:?}").split('(').next().unwrap_or("")
        ),
        other => format!("{other:?}")
            .split('(')
            .next()
            .unwrap_or("")
            .to_string(),
    }
}

#[test]
fn the_grpc_path_and_the_simulator_read_a_replica_s_answer_alike() {
    let map = Box::new(PartitionMap::clone(&map_v1()));
    let replies: Vec<ClientReply<amulet_dmap::MapReply>> = vec![
        ClientReply::Done(amulet_dmap::MapReply::Done),
        ClientReply::StaleMap(map.clone()),
        ClientReply::NotAReplica(map),
        ClientReply::UnknownKeyspace("m".into()),
        ClientReply::KeyspaceExists("m".into()),
        ClientReply::Behind,
        ClientReply::SessionExpired,
        ClientReply::StaleSequence,
        ClientReply::Refused(amulet_smr::Refusal::SessionIdMissing),
        ClientReply::Refused(amulet_smr::Refusal::ReconfigurationPending),
        ClientReply::Refused(amulet_smr::Refusal::NoDmap),
        ClientReply::Lost,
    ];
    for reply in replies {
        let direct = Outcome::from(reply.clone());
        let over_grpc = match amulet_api::client_reply_to_response(reply.clone()) {
            Ok(Some(response)) => {
                Outcome::Done(amulet_api::reply_from_response(response).expect("a reply"))
            }
            Ok(None) => Outcome::SessionOk,
            Err(status) => Outcome::from_status(&status),
        };
        assert_eq!(class(&direct), class(&over_grpc), "{reply:?}");
    }
    assert_eq!(
        Outcome::<()>::from(ClientReply::SessionOk),
        Outcome::SessionOk
    );
    for code in [
        tonic::Code::Unavailable,
        tonic::Code::DeadlineExceeded,
        tonic::Code::Cancelled,
        tonic::Code::Unknown,
    ] {
        let outcome = Outcome::<()>::from_status(&tonic::Status::new(code, "broken"));
        assert_eq!(outcome, Outcome::NoAnswer("broken".into()));
    }
}

#[test]
fn dmap_iii_b_a_preferring_client_sends_every_command_of_a_partition_to_one_replica() {
    let mut rng = StdRng::seed_from_u64(5);
    let session = open_session(TimeMicros(0));
    let mut seen = std::collections::BTreeSet::new();
    for _ in 0..50 {
        let mut resend = Resend::new(TimeMicros(0), &timing(), false).preferring(42);
        let (to, _, _, _) = command(&mut resend, &session, TimeMicros(0), &map_v1(), &mut rng);
        seen.insert(to);
    }
    assert_eq!(seen.len(), 1, "one replica for one seed: {seen:?}");
    // Without a preference the same commands spread.
    let mut spread = std::collections::BTreeSet::new();
    for _ in 0..50 {
        let mut resend = Resend::new(TimeMicros(0), &timing(), false);
        let (to, _, _, _) = command(&mut resend, &session, TimeMicros(0), &map_v1(), &mut rng);
        spread.insert(to);
    }
    assert_eq!(spread.len(), 3);
}

#[test]
fn dmap_iii_b_a_preferring_client_resends_elsewhere_and_comes_back() {
    let mut rng = StdRng::seed_from_u64(6);
    for seed in 0..100 {
        let mut session = open_session(TimeMicros(0));
        let mut resend = Resend::new(TimeMicros(0), &timing(), false).preferring(seed);
        let (first, ..) = command(&mut resend, &session, TimeMicros(0), &map_v1(), &mut rng);
        let now = TimeMicros(2 * SECOND_MICROS);
        let next = resend.on_outcome::<()>(Outcome::NoAnswer("timeout".into()), &mut session, now);
        assert_eq!(next, Next::Retry { refresh_map: false });
        let until = resend.pause(now).expect("before the deadline");
        let (second, ..) = command(&mut resend, &session, until, &map_v1(), &mut rng);
        assert_ne!(
            second, first,
            "seed {seed}: resent to the replica that failed"
        );
        let next = resend.on_outcome(Outcome::Done(()), &mut session, until);
        assert_eq!(next, Next::Done(()));
        // The next operation goes to the preferred replica again.
        let mut resend = Resend::new(until, &timing(), false).preferring(seed);
        let (third, ..) = command(&mut resend, &session, until, &map_v1(), &mut rng);
        assert_eq!(third, first, "seed {seed}");
    }
}

#[test]
fn dmap_iii_b_preferred_replicas_spread_over_clients_and_move_apart() {
    let nodes = [NodeId(1), NodeId(2), NodeId(3)];
    let mut count = [0u32; 3];
    let mut moved_to = [0u32; 3];
    for seed in 0..3_000u64 {
        let seed = seed.wrapping_mul(0x2545_F491_4F6C_DD1D);
        let first = routing::preferred(&nodes, seed).expect("a candidate");
        count[first.0 as usize - 1] += 1;
        // Left without node 1, the clients that preferred it split over
        // the other two rather than all moving to one.
        let rest = [NodeId(2), NodeId(3)];
        let next = routing::preferred(&rest, seed).expect("a candidate");
        if first == NodeId(1) {
            moved_to[next.0 as usize - 1] += 1;
        } else {
            assert_eq!(next, first, "a client whose replica stayed keeps it");
        }
    }
    for c in count {
        assert!((850..=1_150).contains(&c), "uneven: {count:?}");
    }
    assert!(moved_to[1] > 350 && moved_to[2] > 350, "{moved_to:?}");
    assert_eq!(routing::preferred(&[], 1), None);
}

#[test]
fn dmap_iii_b_suspects_are_left_out_per_partition_while_it_has_another_replica() {
    let mut rng = StdRng::seed_from_u64(7);
    let map = map_v1();
    let all = all_nodes();
    for seed in 0..200u64 {
        // Node 1 suspected: partition 1 goes to 2 or 3, whatever the seed
        // prefers.
        let to = routing::replica(
            &map,
            PartitionId(1),
            None,
            &all,
            &[NodeId(1)],
            Some(seed),
            &mut rng,
        );
        assert!(matches!(to, Some(NodeId(2)) | Some(NodeId(3))), "{to:?}");
        // Every replica of partition 1 suspected (nodes elsewhere are
        // not): it still gets one of them.
        let suspects = [NodeId(1), NodeId(2), NodeId(3)];
        let to = routing::replica(
            &map,
            PartitionId(1),
            None,
            &all,
            &suspects,
            Some(seed),
            &mut rng,
        );
        assert!(to.is_some_and(|n| n.0 <= 3), "{to:?}");
    }
    // Through the rules: a preferring client whose replica is suspected
    // sends elsewhere, and opens sessions elsewhere too.
    let session = open_session(TimeMicros(0));
    for seed in 0..100u64 {
        let (preferred, ..) = first_attempt(seed, &session, &map, &[], &mut rng);
        let (to, ..) = first_attempt(seed, &session, &map, &[preferred], &mut rng);
        assert_ne!(to, preferred, "seed {seed}");
    }
    let fresh = Session::with_id(SessionId(9));
    let suspects: Vec<NodeId> = all.iter().copied().filter(|n| n.0 != 5).collect();
    let mut resend = Resend::new(TimeMicros(0), &timing(), false);
    let request = resend
        .next_request(
            &fresh,
            TimeMicros(0),
            &map,
            &key("k"),
            &all,
            &suspects,
            &mut rng,
        )
        .expect("routable");
    assert_eq!(
        request,
        Request::OpenSession {
            to: NodeId(5),
            map_version: map.version
        }
    );
}

#[test]
fn dmap_iii_b_a_node_without_answer_is_suspected_for_its_span_and_cleared_by_an_execution() {
    let mut suspects = crate::rules::Suspects::default();
    let t = |us| TimeMicros(us);
    suspects.judge::<()>(NodeId(2), &Outcome::NoAnswer("timeout".into()), t(10), 100);
    suspects.judge::<()>(
        NodeId(3),
        &Outcome::Behind("catching up".into()),
        t(20),
        100,
    );
    suspects.judge::<()>(NodeId(1), &Outcome::StaleMap("stale".into()), t(20), 100);
    assert_eq!(suspects.at(t(109)), vec![NodeId(2), NodeId(3)]);
    assert_eq!(suspects.at(t(110)), vec![NodeId(3)], "node 2's span ended");
    suspects.judge(NodeId(3), &Outcome::Done(()), t(50), 100);
    assert_eq!(suspects.at(t(50)), vec![NodeId(2)], "node 3 executed");
    // A session opened at a node clears it too (as the Java and Python
    // clients judge an opening).
    suspects.judge::<()>(NodeId(2), &Outcome::SessionOk, t(60), 100);
    assert!(suspects.at(t(60)).is_empty(), "node 2 opened a session");
}
