//! Local merge catch-up (thesis §3.3, rate leveling): a value multicast to
//! a busy stream is delivered as soon as it is decided, not at the idle
//! stream's next pacing tick (Δ later), when the node coordinates the idle
//! stream itself.

use amulet_multicast::MulticastNode;
use amulet_storage::{AcceptorLog, MemoryRing};
use amulet_types::{NodeId, StorageMode, StreamConfig, StreamId, StreamLimits, TimeMicros};
use bytes::Bytes;

const ME: NodeId = NodeId(1);

fn node(now: TimeMicros) -> MulticastNode {
    let streams = [StreamId(1), StreamId(2)]
        .into_iter()
        .map(|stream| {
            let config = StreamConfig {
                stream,
                acceptors: vec![ME],
                learners: vec![],
                storage: StorageMode::Memory,
                limits: StreamLimits::default(),
                base_position: 0,
            };
            let log: Box<dyn AcceptorLog> = Box::new(MemoryRing::new(1024));
            (config, log)
        })
        .collect();
    MulticastNode::new(ME, streams, 1, now)
}

/// Loops every message back (the node is the whole cluster) until quiet;
/// returns the values delivered meanwhile.
fn pump(node: &mut MulticastNode, now: TimeMicros) -> Vec<Bytes> {
    let mut delivered = Vec::new();
    for _ in 0..10_000 {
        // Every step of every node leaves it in a state a correct one can be in.
        node.check_invariants();
        let effects = node.drain();
        delivered.extend(
            effects
                .delivered
                .into_iter()
                .map(|(_, m)| m.value.bytes.clone()),
        );
        if effects.sends.is_empty() && effects.sends_after_sync.is_empty() {
            return delivered;
        }
        for (_, envelope) in effects.sends.into_iter().chain(effects.sends_after_sync) {
            node.on_message(now, ME, envelope);
        }
    }
    panic!("messages never stopped");
}

#[test]
fn thesis_3_3_a_value_does_not_wait_for_the_idle_streams_next_skip() {
    let limits = StreamLimits::default();
    let delta = limits.skip_interval_micros;
    let mut now = TimeMicros(0);
    let mut n = node(now);
    // Elect, prepare and pace both streams for a while.
    for _ in 0..200 {
        now = now.plus(500);
        n.tick(now);
        pump(&mut n, now);
    }
    assert!(n.coordinates_any());
    for round in 0..50u32 {
        // Right after a tick of both pacers, values on stream 1: no tick
        // follows, so they must be delivered by the messages alone.
        now = now.plus(delta);
        n.tick(now);
        pump(&mut n, now);
        // Three instances, each decided before the next is proposed: the
        // merge takes one instance of each stream per round, and stream
        // 2's last skip covers only the rounds up to now.
        let mut values = Vec::new();
        let mut delivered = Vec::new();
        for i in 0..3 {
            // Local catch-ups are at least Δ/4 apart; all three values
            // still come well before the next pacing tick.
            now = now.plus(delta / 4 + 1);
            let value = Bytes::from(format!("value {round}.{i}"));
            n.multicast(now, StreamId(1), value.clone()).unwrap();
            delivered.extend(pump(&mut n, now));
            values.push(value);
        }
        delivered.retain(|v| values.contains(v));
        assert_eq!(
            delivered, values,
            "round {round}: values waited for stream 2's pacing tick"
        );
    }
}

#[test]
fn thesis_3_3_anticipatory_skip_values_closer_than_the_catch_up_gap_do_not_wait() {
    let delta = StreamLimits::default().skip_interval_micros;
    let mut now = TimeMicros(0);
    let mut n = node(now);
    for _ in 0..200 {
        now = now.plus(500);
        n.tick(now);
        pump(&mut n, now);
    }
    assert!(n.coordinates_any());
    for round in 0..50u32 {
        now = now.plus(delta);
        n.tick(now);
        pump(&mut n, now);
        // Values 1 µs apart, far closer than local catch-ups may be (Δ/4):
        // each is delivered when decided, because stream 2 skipped level
        // with stream 1 in the round its instance was proposed, not after
        // the merge blocked on it.
        for i in 0..5 {
            now = now.plus(1);
            let value = Bytes::from(format!("value {round}.{i}"));
            n.multicast(now, StreamId(1), value.clone()).unwrap();
            let delivered = pump(&mut n, now);
            assert!(
                delivered.contains(&value),
                "round {round}: value {i} waited for stream 2's next skip"
            );
        }
    }
}
