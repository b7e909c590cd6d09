//! Gap repair (thesis A.1.4): a learner fills an outstanding instance by
//! classic single-instance Paxos with a high ballot. Two learners may repair
//! the same instance at once with different ballots; the acceptor must stay
//! safe and keep running through the race.
mod common;

use amulet_paxos::{Input, Output, StreamNode};
use amulet_types::{Ballot, Instance, NodeId, TimeMicros};
use amulet_wire::{Batch, Message};
use common::{config, MapLog};

fn step(node: &mut StreamNode, from: u32, message: Message) -> Output {
    let mut out = Output::default();
    let input = Input::Message {
        from: NodeId(from),
        message,
    };
    node.step(TimeMicros(1_000), input, &mut out);
    out
}

fn acks(out: &Output) -> usize {
    out.sends
        .iter()
        .chain(&out.sends_after_sync)
        .filter(|(_, e)| matches!(e.message, Message::AcceptAck { .. }))
        .count()
}

/// Simulator seed 9023174 of `--dmap`, at one acceptor: it voted a Skip in
/// ballot b1.1, promised b10.3 to a repair that decided the same Skip,
/// learned the decision (and so forgot the single-instance promise), and
/// then a competing repair's Null in the lower ballot b9.2 arrived. It
/// must refuse that vote without stopping: the record's ballot is its own
/// vote, not the deciding ballot, so "a higher ballot proposes another
/// value for a decided instance" is no breach of Paxos here.
#[test]
fn thesis_a_1_4_a_decided_acceptor_refuses_a_lower_competing_repair_and_keeps_running() {
    let mut node = StreamNode::new(
        NodeId(1),
        config(&[1, 2, 3], &[1, 2, 3]),
        Box::new(MapLog::fresh()),
        1,
        TimeMicros(0),
    );
    let instance = Instance(0);
    let skip = Batch::Skip(45);
    let (b1, b9, b10) = (
        Ballot { round: 1, node: 1 },
        Ballot { round: 9, node: 2 },
        Ballot { round: 10, node: 3 },
    );
    let voted = step(
        &mut node,
        1,
        Message::Accept {
            instance,
            ballot: b1,
            batch: skip.clone(),
        },
    );
    assert_eq!(acks(&voted), 1, "votes the Skip in b1.1");
    let promised = step(
        &mut node,
        3,
        Message::Prepare {
            instance,
            ballot: b10,
        },
    );
    let reported = promised.sends.iter().chain(&promised.sends_after_sync).any(|(_, e)| {
        matches!(&e.message, Message::Promise { accepted: Some((b, batch)), .. } if *b == b1 && *batch == skip)
    });
    assert!(reported, "the promise to b10.3 reports the b1.1 vote");
    let decision = Message::Decision {
        instance,
        ballot: b10,
        batch: Some(skip.clone()),
        decided_by: NodeId(3),
        hops: 1,
    };
    let learned = step(&mut node, 3, decision);
    assert_eq!(learned.decided.len(), 1, "learns the Skip");
    let late = step(
        &mut node,
        2,
        Message::Accept {
            instance,
            ballot: b9,
            batch: Batch::Null,
        },
    );
    assert_eq!(
        acks(&late),
        0,
        "no vote for another value in a decided instance"
    );
    let again = step(
        &mut node,
        3,
        Message::Accept {
            instance,
            ballot: b10,
            batch: skip,
        },
    );
    assert_eq!(acks(&again), 1, "the decided value is still acknowledged");
}
