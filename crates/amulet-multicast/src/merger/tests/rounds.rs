//! The round-robin, skips and their carry (thesis §2.6, §3.3).

use super::*;

#[test]
fn thesis_2_6_round_robin_in_stream_id_order() {
    let mut m = Merger::new(vec![StreamId(2), StreamId(1)], 1);
    m.push(StreamId(2), Instance(0), value(20));
    assert!(drain(&mut m).is_empty(), "stream 1 goes first");
    assert_eq!(m.waiting_on(), Some(StreamId(1)));
    m.push(StreamId(1), Instance(0), value(10));
    m.push(StreamId(1), Instance(1), value(11));
    assert_eq!(drain(&mut m), vec![(1, 10), (2, 20), (1, 11)]);
    assert_eq!(m.waiting_on(), Some(StreamId(2)));
}

#[test]
fn thesis_3_3_skip_counts_carry_across_rounds() {
    let mut m = Merger::new(vec![StreamId(1), StreamId(2)], 2);
    m.push(StreamId(2), Instance(0), Batch::Skip(5));
    for i in 0..6 {
        m.push(StreamId(1), Instance(i), value(i));
    }
    // Round 1: s1 0,1; s2 skip 2 of 5. Round 2: s1 2,3; s2 skip 2 of 3.
    // Round 3: s1 4,5; s2 skip 1 then blocks on its next instance.
    assert_eq!(
        drain(&mut m),
        vec![(1, 0), (1, 1), (1, 2), (1, 3), (1, 4), (1, 5)]
    );
    assert_eq!(m.waiting_on(), Some(StreamId(2)));
    m.push(StreamId(2), Instance(1), value(99));
    m.push(StreamId(1), Instance(6), value(6));
    assert_eq!(drain(&mut m), vec![(2, 99), (1, 6)]);
}

#[test]
fn null_counts_as_one_instance() {
    let mut m = Merger::new(vec![StreamId(1), StreamId(2)], 1);
    m.push(StreamId(1), Instance(0), Batch::Null);
    m.push(StreamId(2), Instance(0), value(1));
    assert_eq!(drain(&mut m), vec![(2, 1)]);
}

#[test]
fn broken_merge_ignoring_skip_counts_changes_the_order() {
    let run = |bug| {
        let mut m = Merger::new(vec![StreamId(1), StreamId(2)], 1);
        m.set_bug(bug);
        m.push(StreamId(2), Instance(0), Batch::Skip(3));
        m.push(StreamId(2), Instance(1), value(20));
        for i in 0..4 {
            m.push(StreamId(1), Instance(i), value(i));
        }
        drain(&mut m)
    };
    assert_ne!(run(MergeBug::None), run(MergeBug::IgnoreSkipCounts));
}

#[test]
fn thesis_3_3_blocked_merge_states_the_position_it_needs() {
    let mut m = Merger::new(vec![StreamId(1), StreamId(2)], 1);
    m.push(StreamId(1), Instance(0), Batch::Skip(3));
    m.push(StreamId(2), Instance(0), Batch::Skip(1_000));
    assert!(drain(&mut m).is_empty());
    // Stream 1 is at position 3 and stream 2 holds 997 more than it
    // consumed: stream 1 must reach 3 + 997.
    assert_eq!(m.waiting_on(), Some(StreamId(1)));
    assert_eq!(m.need(StreamId(1), 10), 1_000);
    assert_eq!(m.need(StreamId(2), 10), 0, "not blocked on stream 2");
    assert_eq!(m.need(StreamId(1), 2_000), 0, "below the threshold");
    m.push(StreamId(1), Instance(1), Batch::Skip(997));
    m.push(StreamId(1), Instance(2), value(7));
    m.push(StreamId(2), Instance(1), value(8));
    assert_eq!(drain(&mut m), vec![(1, 7), (2, 8)]);
}

#[test]
fn huge_skips_on_every_stream_merge_in_one_step() {
    let mut m = Merger::new(vec![StreamId(1), StreamId(2)], 1);
    m.push(StreamId(1), Instance(0), Batch::Skip(1 << 50));
    m.push(StreamId(2), Instance(0), Batch::Skip(1 << 50));
    m.push(StreamId(1), Instance(1), value(1));
    m.push(StreamId(2), Instance(1), value(2));
    // Would take 2^51 loop turns one round at a time.
    assert_eq!(drain(&mut m), vec![(1, 1), (2, 2)]);
    assert_eq!(m.rounds(), (1 << 50) + 1);
}
