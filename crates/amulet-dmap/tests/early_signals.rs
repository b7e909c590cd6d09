//! S-SMR signals (DMap §III-B c) arriving before their commands: a replica
//! that lags behind the other replicas of its partition (a restarted node
//! replaying its streams) receives the other partitions' signals for up to
//! thousands of multi-partition commands before it executes them. When the
//! one it waits on completes, it must run all of those in a loop: it used
//! to recurse once per command (run -> execute -> try_complete -> run),
//! and nodes of the fault suite aborted with "stack overflow" during
//! catch-up.

use amulet_dmap::{MapCommand, PartitionState};
use amulet_smr::{Body, ClientRequest, Output, Replica, ReplicaMessage};
use amulet_types::{MapVersion, NodeId};

mod common;
use common::{map_name, replica};

const COMMANDS: usize = 3_000;

/// Moves signals between the two replicas that are ahead until quiet;
/// keeps what is sent to node 3 (the lagging replica of partition 1).
fn exchange(
    ahead1: &mut Replica<PartitionState>,
    ahead2: &mut Replica<PartitionState>,
    to_lagging: &mut Vec<ReplicaMessage>,
) {
    for _ in 0..1_000 {
        let mut moved = false;
        let outputs: Vec<Output<_>> = ahead1.drain().into_iter().chain(ahead2.drain()).collect();
        for output in outputs {
            if let Output::Send { to, message } = output {
                moved = true;
                match to {
                    NodeId(1) => ahead1.on_message(message),
                    NodeId(4) => ahead2.on_message(message),
                    NodeId(3) => to_lagging.push(message),
                    _ => {}
                }
            }
        }
        if !moved {
            return;
        }
    }
    panic!("the signal exchange never went quiet");
}

#[test]
fn dmap_iii_b_c_a_lagging_replica_runs_thousands_of_early_signalled_commands_in_a_loop() {
    // A small stack: the old recursion needed a frame chain per command.
    let run = std::thread::Builder::new()
        .stack_size(256 * 1024)
        .spawn(|| {
            let mut ahead1 = replica(1, 1, 64 << 20);
            let mut ahead2 = replica(4, 2, 64 << 20);
            let mut lagging = replica(3, 1, 64 << 20);
            let size = ClientRequest {
                map_version: MapVersion(ahead1.map().version.0),
                session: None,
                body: Body::App(MapCommand::Size { map: map_name() }),
                principal: None,
            };
            ahead1.submit(0, size);
            let Some(Output::Propose { stream, value, .. }) = ahead1.drain().into_iter().next()
            else {
                panic!("a size is proposed on the global stream");
            };
            // The replicas that are ahead execute every command, signalling
            // each other and the lagging replica.
            let mut to_lagging = Vec::new();
            for _ in 0..COMMANDS {
                ahead1.on_deliver(stream, &value);
                ahead2.on_deliver(stream, &value);
                exchange(&mut ahead1, &mut ahead2, &mut to_lagging);
            }
            assert!(!ahead1.is_waiting() && !ahead2.is_waiting());
            assert!(to_lagging.len() >= COMMANDS, "partition 2 signalled node 3");
            // The lagging replica gets every command: it executes the first
            // and waits for its signal; the rest queue behind it.
            for _ in 0..COMMANDS {
                lagging.on_deliver(stream, &value);
            }
            assert!(lagging.is_waiting());
            assert_eq!(lagging.queued(), COMMANDS - 1);
            // Signals arrive newest first: all but the awaited one are early;
            // the last completes the first command and everything runs.
            for message in to_lagging.into_iter().rev() {
                lagging.on_message(message);
            }
            assert!(!lagging.is_waiting(), "every command completed");
            assert_eq!(lagging.queued(), 0);
            assert_eq!(lagging.global_position(), ahead1.global_position());
        })
        .expect("spawn");
    run.join().expect("the lagging replica ran every command");
}
