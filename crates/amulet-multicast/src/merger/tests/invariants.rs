//! `Merger::check_invariants`: a merge whose state was broken on purpose
//! is caught, naming the invariant; healthy merges of every kind pass.

use super::*;

/// Two streams, M = 2, stopped mid-round: stream 1 has merged both of
/// its instances of round 0 and stream 2 one of its two.
fn mid_round() -> Merger {
    let mut m = Merger::new(vec![StreamId(1), StreamId(2)], 2);
    m.push(StreamId(1), Instance(0), value(10));
    m.push(StreamId(1), Instance(1), value(11));
    m.push(StreamId(2), Instance(0), value(20));
    assert_eq!(drain(&mut m), vec![(1, 10), (1, 11), (2, 20)]);
    m.check_invariants();
    m
}

impl Merger {
    /// Test-only access for breaking a merge on purpose from outside the
    /// merger module (the node's tests).
    pub(crate) fn break_turn_for_test(&mut self, turn: usize) {
        self.turn = turn;
    }
}

#[test]
fn healthy_merges_hold_their_invariants_at_every_step() {
    let mut m = mid_round();
    m.push(StreamId(2), Instance(1), Batch::Skip(7));
    m.check_invariants();
    for i in 2..8 {
        m.push(StreamId(1), Instance(i), value(10 + i));
        drain(&mut m);
        m.check_invariants();
    }
    let position = m.position().expect("between deliveries");
    Merger::from_position(GroupId(0), &position, 2)
        .expect("a merge's own position is valid")
        .check_invariants();
    m.fork(GroupId(1)).check_invariants();
}

#[test]
#[should_panic(
    expected = "merge invariant `the turn lies within the rounds` broken: turn 2, 2 streams"
)]
fn a_turn_past_the_streams_in_the_rounds_is_caught() {
    let mut m = mid_round();
    m.turn = 2;
    m.check_invariants();
}

#[test]
#[should_panic(
    expected = "merge invariant `the turn's remaining weight is in 1..=M` broken: remaining 0"
)]
fn a_turn_with_nothing_left_is_caught() {
    let mut m = mid_round();
    m.remaining = 0;
    m.check_invariants();
}

#[test]
#[should_panic(
    expected = "merge invariant `the streams in the rounds are the lanes in the rounds` broken"
)]
fn a_stream_in_the_rounds_without_a_lane_is_caught() {
    let mut m = mid_round();
    m.order.push(StreamId(9));
    m.check_invariants();
}

#[test]
#[should_panic(
    expected = "merge invariant `a lane's queue runs on from its next instance without gaps` broken: StreamId(1)"
)]
fn a_gap_before_a_lanes_queue_is_caught() {
    let mut m = Merger::new(vec![StreamId(1), StreamId(2)], 1);
    m.push(StreamId(1), Instance(0), value(10));
    m.push(StreamId(1), Instance(1), value(11));
    m.lanes.get_mut(&StreamId(1)).expect("lane").next = Instance(1);
    m.check_invariants();
}

#[test]
#[should_panic(
    expected = "merge invariant `a lane consumed and carries no more than was pushed` broken: StreamId(2): consumed 1 + carry 100 > pushed 1"
)]
fn carry_that_was_never_pushed_is_caught() {
    let mut m = mid_round();
    m.lanes.get_mut(&StreamId(2)).expect("lane").carry = 100;
    m.check_invariants();
}

#[test]
#[should_panic(
    expected = "merge invariant `a lane holds nothing below its merge point` broken: StreamId(2)"
)]
fn a_lane_holding_instances_below_its_merge_point_is_caught() {
    let mut m = mid_round();
    m.push(StreamId(2), Instance(1), value(21));
    // Not popped yet: queued. A merge point above it would mean the lane
    // skipped dropping what lies below.
    let lane = m.lanes.get_mut(&StreamId(2)).expect("lane");
    lane.start = 10;
    m.check_invariants();
}

#[test]
#[should_panic(
    expected = "merge invariant `every stream in the rounds stands where the round says` broken: StreamId(2) at position 2 (merge point 0), expected 1"
)]
fn a_stream_ahead_of_its_round_is_caught() {
    let mut m = mid_round();
    let lane = m.lanes.get_mut(&StreamId(2)).expect("lane");
    lane.consumed += 1;
    lane.pushed += 1;
    m.check_invariants();
}

#[test]
#[should_panic(expected = "every stream in the rounds stands where the round says")]
fn a_misaligned_stream_is_caught_at_the_next_round_even_in_release_builds() {
    // The check at every round's start stays on in production; in debug
    // builds the check after the push catches it first.
    let mut m = mid_round();
    let lane = m.lanes.get_mut(&StreamId(1)).expect("lane");
    lane.consumed += 1;
    lane.pushed += 1;
    m.push(StreamId(2), Instance(1), value(21));
    drain(&mut m);
}

#[test]
#[should_panic(
    expected = "merge invariant `a fence lies at the start of this round or the next` broken: fence 5, round 0"
)]
fn a_fence_no_barrier_set_is_caught() {
    let mut m = mid_round();
    m.fence = Some(5);
    m.check_invariants();
}

#[test]
#[should_panic(
    expected = "merge invariant `a fence lies at the start of this round or the next` broken: fence 0, round 0, turn 1"
)]
fn a_merge_past_its_fence_is_caught() {
    let mut m = mid_round();
    m.fence = Some(0);
    m.check_invariants();
}

#[test]
#[should_panic(
    expected = "merge invariant `a waiting subscription's lane looks for its copy` broken"
)]
fn a_subscription_waiting_for_a_merged_stream_is_caught() {
    let mut m = mid_round();
    m.waiting = Some(PendingJoin {
        request: ValueId {
            proposer: amulet_types::NodeId(9),
            incarnation: 1,
            sequence: 1,
        },
        stream: StreamId(2),
        round: 0,
    });
    m.check_invariants();
}

#[test]
#[should_panic(
    expected = "merge invariant `a joining lane waits at its merge point, ahead of the merge` broken: StreamId(3): joins at round 0"
)]
fn a_stream_joining_behind_the_merge_is_caught() {
    let mut m = mid_round();
    m.lanes.insert(
        StreamId(3),
        crate::lane::Lane::at(
            Instance(0),
            0,
            Default::default(),
            LaneState::Joining { round: 0 },
            0,
        ),
    );
    m.check_invariants();
}

#[test]
#[should_panic(expected = "merge invariant `a scanning lane merges nothing` broken: StreamId(2)")]
fn a_scanning_lane_with_a_merge_point_is_caught() {
    let mut m = mid_round();
    let request = ValueId {
        proposer: amulet_types::NodeId(9),
        incarnation: 1,
        sequence: 1,
    };
    let lane = m.lanes.get_mut(&StreamId(2)).expect("lane");
    lane.state = LaneState::Leaving { last_round: 0 };
    m.check_invariants();
    let lane = m.lanes.get_mut(&StreamId(2)).expect("lane");
    lane.state = LaneState::Scanning { request };
    m.order.retain(|s| *s != StreamId(2));
    m.turn = 0;
    m.remaining = 2;
    m.check_invariants();
}

#[cfg(debug_assertions)]
#[test]
#[should_panic(expected = "merge invariant `the turn lies within the rounds` broken")]
fn debug_builds_check_after_every_push() {
    let mut m = mid_round();
    m.turn = 7;
    m.push(StreamId(2), Instance(1), value(21));
}

#[cfg(not(debug_assertions))]
#[test]
#[should_panic(expected = "merges instance Instance(2) (expected Instance(1))")]
fn merging_an_instance_out_of_turn_panics_in_release_builds() {
    let mut m = mid_round();
    m.push(StreamId(2), Instance(1), value(21));
    let lane = m.lanes.get_mut(&StreamId(2)).expect("lane");
    lane.queue[0].0 = Instance(2);
    drain(&mut m);
}

#[test]
fn a_position_no_merge_can_stand_at_is_refused() {
    let mut position = mid_round().position().expect("between deliveries");
    position.lanes[1].consumed += 1;
    assert_eq!(
        Merger::from_position(GroupId(0), &position, 2).err(),
        Some(PositionError::Streams)
    );
}

#[test]
fn a_lane_added_at_a_fence_must_stand_at_the_fence() {
    let mut m = Merger::new(vec![StreamId(1)], 1);
    m.push(StreamId(1), Instance(0), barrier(1));
    assert_eq!(drain(&mut m), vec![(1, 1)]);
    assert_eq!(m.fenced(), Some(1));
    let at = |consumed: u64| LanePosition {
        stream: StreamId(2),
        next: Instance(0),
        carry: 0,
        consumed,
        delivered: Default::default(),
        state: LaneState::Active,
        start: 1,
    };
    assert_eq!(
        m.reconfigure(&[], vec![at(2)]),
        Err(PositionError::Streams),
        "ahead of the fence"
    );
    assert_eq!(m.streams(), &[StreamId(1)], "nothing changed");
    m.reconfigure(&[], vec![at(0)])
        .expect("below its merge point: the stream's start is dropped");
    m.check_invariants();
    assert_eq!(m.streams(), &[StreamId(1), StreamId(2)]);
}
