//! Barriers and their fences (thesis §4.7.4–4.7.5).

use super::*;

#[test]
fn thesis_4_7_a_merge_restored_between_a_barrier_and_its_fence_stops_there() {
    // M = 2: the barrier is the first value of round 0, so the merge
    // stops at round 1; a checkpoint taken mid-round (after the
    // barrier was popped) must stop at the same fence after restore.
    let mut m = Merger::new(vec![StreamId(1), StreamId(2)], 2);
    m.push(StreamId(1), Instance(0), barrier(1));
    assert_eq!(drain(&mut m), vec![(1, 1)]);
    let position = m.position().expect("between deliveries");
    assert_eq!(position.fence, Some(1));
    let mut restored = Merger::from_position(GroupId(0), &position, 2).expect("a valid position");
    for merger in [&mut m, &mut restored] {
        merger.push(StreamId(1), Instance(1), value(2));
        merger.push(StreamId(2), Instance(0), value(3));
        merger.push(StreamId(2), Instance(1), value(4));
        merger.push(StreamId(1), Instance(2), value(5));
        merger.push(StreamId(2), Instance(2), value(6));
        // Round 0 completes; round 1 waits at the fence.
        assert_eq!(drain(merger), vec![(1, 2), (2, 3), (2, 4)]);
        assert_eq!(merger.fenced(), Some(1));
        merger.release_fence();
        // Round 1: stream 1's two instances come first.
        assert_eq!(drain(merger), vec![(1, 5)]);
    }
}
