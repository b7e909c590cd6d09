//! Elastic Paxos subscriptions (thesis ch. 4, Algorithm 1).

use super::*;

#[test]
fn thesis_4_4_a_stream_joins_at_the_round_after_the_later_copy() {
    // G (group 0) merges stream 1 and subscribes to stream 2. The copy
    // in stream 1 is merged in round 2; the copy in stream 2 lies in
    // round 4 of stream 2: the merge point is round 5.
    let s1 = vec![
        value(10),
        value(11),
        ctl(ControlOp::Subscribe, 0, 2, 1),
        value(13),
        value(14),
        value(15),
        value(16),
    ];
    let s2 = vec![
        value(20),
        value(21),
        value(22),
        value(23),
        ctl(ControlOp::Subscribe, 0, 2, 1),
        value(25),
        value(26),
    ];
    let mut m = Merger::new(vec![StreamId(1)], 1);
    let got = feed_expected(
        &mut m,
        &[s1, s2],
        &[0, 0, 0, 0, 1, 1, 1, 0, 1, 1, 1, 1, 0, 0, 0],
    );
    assert_eq!(
        got,
        vec![
            (1, 10),
            (1, 11),
            (1, 13),
            (1, 14),
            (1, 15),
            (2, 25),
            (1, 16),
            (2, 26)
        ]
    );
    assert_eq!(
        m.take_events(),
        vec![
            SubscriptionEvent::Waiting {
                stream: StreamId(2),
                request: ValueId {
                    proposer: amulet_types::NodeId(9),
                    incarnation: 1,
                    sequence: 1
                },
                round: 2
            },
            SubscriptionEvent::Joined {
                stream: StreamId(2),
                round: 5
            },
        ]
    );
}

#[test]
fn thesis_4_4_a_copy_in_an_earlier_round_of_the_new_stream_waits_for_the_other() {
    // The new stream's copy (round 0) precedes the merged stream's
    // (round 3): the merge point is round 4 and stream 2's values of
    // rounds 1..3 are not delivered to G.
    let s1 = vec![
        value(10),
        value(11),
        value(12),
        ctl(ControlOp::Subscribe, 0, 2, 1),
        value(14),
        value(15),
    ];
    let s2 = vec![
        ctl(ControlOp::Subscribe, 0, 2, 1),
        value(21),
        value(22),
        value(23),
        value(24),
        value(25),
    ];
    let mut m = Merger::new(vec![StreamId(1)], 1);
    let got = feed_expected(&mut m, &[s1, s2], &[1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0]);
    assert_eq!(
        got,
        vec![
            (1, 10),
            (1, 11),
            (1, 12),
            (1, 14),
            (2, 24),
            (1, 15),
            (2, 25)
        ]
    );
}

#[test]
fn thesis_4_4_unsubscribe_removes_the_stream_after_its_round() {
    let s1 = vec![
        value(10),
        ctl(ControlOp::Unsubscribe, 0, 2, 7),
        value(12),
        value(13),
    ];
    let s2 = vec![value(20), value(21), value(22), value(23)];
    let mut m = Merger::new(vec![StreamId(1), StreamId(2)], 1);
    let got = feed_expected(&mut m, &[s1, s2], &[0, 1, 0, 1, 0, 1, 0, 1]);
    // Round 1 still merges stream 2 (the unsubscribe is merged in it).
    assert_eq!(got, vec![(1, 10), (2, 20), (2, 21), (1, 12), (1, 13)]);
    assert_eq!(m.streams(), &[StreamId(1)]);
    assert_eq!(
        m.take_events(),
        vec![SubscriptionEvent::Left {
            stream: StreamId(2),
            round: 2
        }]
    );
}

#[test]
fn thesis_4_4_the_last_stream_is_never_left_and_a_request_takes_effect_once() {
    let s1 = vec![
        ctl(ControlOp::Unsubscribe, 0, 1, 3),
        ctl(ControlOp::Subscribe, 0, 2, 4),
        value(12),
        ctl(ControlOp::Unsubscribe, 0, 2, 5),
        value(14),
        ctl(ControlOp::Subscribe, 0, 2, 4), // re-broadcast of a request that took effect
        value(16),
        value(17),
    ];
    let s2 = vec![
        ctl(ControlOp::Subscribe, 0, 2, 4),
        value(21),
        value(22),
        value(23),
        value(24),
        value(25),
        value(26),
        value(27),
    ];
    let mut m = Merger::new(vec![StreamId(1)], 1);
    let got = feed_expected(&mut m, &[s1, s2], &[]);
    assert_eq!(
        got,
        vec![(1, 12), (2, 22), (2, 23), (1, 14), (1, 16), (1, 17)]
    );
    assert_eq!(m.streams(), &[StreamId(1)]);
}

#[test]
fn thesis_4_2_cross_subscriptions_keep_one_order() {
    // Fig. 4.2: G1 merges S1 and subscribes to S2 while G2 merges S2
    // and subscribes to S1. Each request's copy in the new stream is
    // ordered three rounds before its copy in the merged stream, so a
    // merge point taken from the new stream alone lets each group
    // merge the new stream three rounds behind: G1 then orders 11
    // before 21 and G2 21 before 11, a cycle.
    let s1 = vec![
        ctl(ControlOp::Subscribe, 2, 1, 2),
        value(11),
        value(12),
        ctl(ControlOp::Subscribe, 1, 2, 1),
        value(14),
        value(15),
        value(16),
        value(17),
        value(18),
        value(19),
    ];
    let s2 = vec![
        ctl(ControlOp::Subscribe, 1, 2, 1),
        value(21),
        value(22),
        ctl(ControlOp::Subscribe, 2, 1, 2),
        value(24),
        value(25),
        value(26),
        value(27),
        value(28),
        value(29),
    ];
    let run = |bug| {
        let mut g1 = Merger::for_group(GroupId(1), vec![StreamId(1)], 1);
        let mut g2 = Merger::for_group(GroupId(2), vec![StreamId(2)], 1);
        g1.set_bug(bug);
        g2.set_bug(bug);
        let streams = [s1.clone(), s2.clone()];
        let a = feed_expected(&mut g1, &streams, &[0, 0, 0, 0, 0, 0, 1, 1, 1, 1]);
        let b = feed_expected(&mut g2, &streams, &[1, 1, 1, 1, 1, 1, 0, 0, 0, 0]);
        (a, b)
    };
    let common = |x: &[(u32, u64)], y: &[(u32, u64)]| -> Vec<(u32, u64)> {
        x.iter().filter(|v| y.contains(v)).copied().collect()
    };
    let (a, b) = run(MergeBug::None);
    assert!(common(&a, &b).len() >= 10, "G1 {a:?} G2 {b:?}");
    assert_eq!(
        common(&a, &b),
        common(&b, &a),
        "G1 {a:?} and G2 {b:?} disagree"
    );
    let (a, b) = run(MergeBug::MergePointFromNewStreamOnly);
    assert_ne!(
        common(&a, &b),
        common(&b, &a),
        "the broken merge point orders alike: {a:?} {b:?}"
    );
}

/// Streams with values and subscription controls for groups 0 and 1
/// naming streams 1..=3, requests from a small set (so duplicates,
/// re-broadcasts and unmatched copies all occur).
fn batches_with_controls() -> impl Strategy<Value = Vec<Batch>> {
    let op = prop_oneof![
        Just(ControlOp::Prepare),
        Just(ControlOp::Subscribe),
        Just(ControlOp::Unsubscribe)
    ];
    prop::collection::vec(
        prop_oneof![
            6 => (0u64..1_000_000).prop_map(value),
            1 => Just(Batch::Null),
            2 => (0u64..12).prop_map(Batch::Skip),
            // A lone copy of group 0's subscribe would stop its merge
            // for good (only a re-broadcast, outside the merge, ends
            // that): group 0 gets lone prepares and unsubscribes here.
            2 => (op, 0u32..2, 1u32..4, 1u64..4).prop_map(|(op, g, s, r)| {
                let op = if g == 0 && op == ControlOp::Subscribe { ControlOp::Prepare } else { op };
                ctl(op, g, s, r)
            }),
        ],
        0..40,
    )
}

/// Three streams as `batches_with_controls`, plus requests of group
/// 0 whose two copies are placed at random positions of the new stream
/// and of another stream, so that subscriptions take effect often.
fn streams_with_subscriptions() -> impl Strategy<Value = Vec<Vec<Batch>>> {
    let placement = (
        1u32..4,
        0usize..6,
        0usize..40,
        0usize..40,
        1u64..6,
        prop::bool::ANY,
    );
    (
        prop::collection::vec(batches_with_controls(), 3..4),
        prop::collection::vec(placement, 0..5),
    )
        .prop_map(|(mut streams, placements)| {
            for (target, other, at_new, at_other, request, leave) in placements {
                // Mostly the stream merged from the start.
                let other = if other >= 3 { 0 } else { other };
                let new = target as usize - 1;
                let len = streams[other].len();
                if leave {
                    let control = ctl(ControlOp::Unsubscribe, 0, target, request + 10);
                    streams[other].insert(at_other.min(len), control);
                } else {
                    let control = ctl(ControlOp::Subscribe, 0, target, request);
                    streams[other].insert(at_other.min(len), control);
                    let len = streams[new].len();
                    let control = ctl(ControlOp::Subscribe, 0, target, request);
                    streams[new].insert(at_new.min(len), control);
                }
            }
            // Tails long enough that merge points far into a stream
            // are reached.
            for (s, stream) in streams.iter_mut().enumerate() {
                for i in 0..3u64 {
                    stream.push(Batch::Skip(40));
                    stream.push(value(2_000_000 + 10 * s as u64 + i));
                }
            }
            streams
        })
}

proptest! {
    #[test]
    fn thesis_4_4_a_merge_with_subscriptions_is_a_function_of_the_streams(
        streams in streams_with_subscriptions(),
        m in 1u64..3,
        first in prop::collection::vec(0usize..8, 0..200),
        second in prop::collection::vec(0usize..8, 0..200),
        cut in 0usize..200,
    ) {
        // Two interleavings give the same merge; so does the second
        // one checkpointed after `cut` steps and restored.
        let mut a = Merger::new(vec![StreamId(1)], m);
        let expected = feed_expected(&mut a, &streams, &first);
        let mut b = Merger::new(vec![StreamId(1)], m);
        let cut = cut.min(second.len());
        let mut got = feed_expected_steps(&mut b, &streams, &second[..cut]);
        if let Some(position) = b.position() {
            let restored = Merger::from_position(GroupId(0), &position, m).expect("valid position");
            prop_assert_eq!(restored.position(), Some(position));
            b = restored;
        }
        got.extend(feed_expected(&mut b, &streams, &second[cut..]));
        let ev = a.take_events();
        if std::env::var("AMULET_COUNT_JOINS").is_ok() {
            let joins = ev.iter().filter(|e| matches!(e, SubscriptionEvent::Joined { .. })).count();
            let leaves = ev.iter().filter(|e| matches!(e, SubscriptionEvent::Left { .. })).count();
            eprintln!("joins={joins} leaves={leaves}");
        }
        prop_assert_eq!(got, expected);
    }
}
