//! Merge positions for checkpoints (thesis §3.4.2).

use super::*;
use amulet_paxos::Delivered;
use std::collections::BTreeSet;

proptest! {
    #[test]
    fn thesis_3_4_2_a_merge_restored_from_its_position_continues_identically(
        streams in prop::collection::vec(batches(), 1..4),
        m in 1u64..4,
        schedule in prop::collection::vec(0usize..8, 0..200),
        cut in 0usize..200,
    ) {
        let ids: Vec<StreamId> = (1..=streams.len() as u32).map(StreamId).collect();
        let mut whole = Merger::new(ids.clone(), m);
        let expected = feed(&mut whole, &streams, &vec![0; streams.len()], &schedule);

        // The same merge, checkpointed after `cut` scheduling steps.
        let cut = cut.min(schedule.len());
        let mut first = Merger::new(ids, m);
        let mut got = Vec::new();
        let mut next = vec![0u64; streams.len()];
        for &pick in &schedule[..cut] {
            let s = pick % streams.len();
            if let Some(batch) = streams[s].get(next[s] as usize) {
                first.push(StreamId(s as u32 + 1), Instance(next[s]), batch.clone());
                next[s] += 1;
            }
            got.extend(drain(&mut first));
        }
        let position = first.position().expect("everything popped");
        let mut restored = Merger::from_position(GroupId(0), &position, m).expect("valid position");
        prop_assert_eq!(restored.position(), Some(position.clone()));
        // Instances decided but not yet merged are fetched again.
        let from: Vec<u64> = position.lanes.iter().map(|l| l.next.0).collect();
        got.extend(feed(&mut restored, &streams, &from, &schedule[cut..]));
        prop_assert_eq!(got, expected);
    }
}

#[test]
fn thesis_3_4_2_a_value_decided_on_both_sides_of_a_checkpoint_is_delivered_once() {
    // A proposer retried value 7: both copies won an instance, one
    // below the checkpoint and one above it. The restored learner has
    // forgotten the first; the merge position has not.
    let mut m = Merger::new(vec![StreamId(1)], 1);
    m.push(StreamId(1), Instance(0), value(7));
    assert_eq!(drain(&mut m), vec![(1, 7)]);
    let position = m.position().expect("everything popped");
    let mut restored = Merger::from_position(GroupId(0), &position, 1).expect("valid");
    // The learner resumes lower than this lane (another group needed
    // instance 0 again): what the lane reflects is dropped.
    restored.push(StreamId(1), Instance(0), value(7));
    restored.push(StreamId(1), Instance(1), value(7));
    restored.push(StreamId(1), Instance(2), value(8));
    assert_eq!(drain(&mut restored), vec![(1, 8)]);
    assert_eq!(restored.next_instance(StreamId(1)), Some(Instance(3)));
}

#[test]
fn thesis_3_4_2_invalid_positions_are_refused() {
    // Stream 1 took its two instances of round 0; stream 2's turn.
    let lane = |s, consumed| LanePosition {
        stream: StreamId(s),
        next: Instance(consumed),
        carry: 0,
        consumed,
        delivered: Delivered::default(),
        state: LaneState::Active,
        start: 0,
    };
    let good = MergePosition {
        lanes: vec![lane(1, 2), lane(2, 0)],
        turn: 1,
        remaining: 2,
        rounds: 0,
        waiting: None,
        completed: BTreeSet::new(),
        fence: None,
    };
    assert!(Merger::from_position(GroupId(0), &good, 2).is_ok());
    let bad = |f: fn(&mut MergePosition)| {
        let mut p = good.clone();
        f(&mut p);
        Merger::from_position(GroupId(0), &p, 2).err()
    };
    assert_eq!(bad(|p| p.lanes.clear()), Some(PositionError::Streams));
    assert_eq!(bad(|p| p.lanes.swap(0, 1)), Some(PositionError::Streams));
    assert_eq!(bad(|p| p.turn = 2), Some(PositionError::Turn));
    assert_eq!(bad(|p| p.remaining = 0), Some(PositionError::Remaining));
    assert_eq!(bad(|p| p.remaining = 3), Some(PositionError::Remaining));
    // Where no merge can stand: stream 1 a round ahead of stream 2.
    assert_eq!(
        bad(|p| p.lanes[0].consumed = 4),
        Some(PositionError::Streams)
    );
}
