//! Unit tests of the merge, one file per concept, and the helpers they
//! share: decided sequences, feeding a merge in a given interleaving.

mod fences;
mod invariants;
mod positions;
mod rounds;
mod subscriptions;

use super::*;
use crate::control::{Control, ControlOp};
use amulet_types::ValueId;
use amulet_wire::{Batch, ValueKind};
use bytes::Bytes;
use proptest::prelude::*;

fn value(seq: u64) -> Batch {
    Batch::Values(vec![Value {
        kind: Default::default(),
        id: ValueId {
            proposer: amulet_types::NodeId(1),
            incarnation: 0,
            sequence: seq,
        },
        bytes: Bytes::from(seq.to_le_bytes().to_vec()),
    }])
}

fn drain(m: &mut Merger) -> Vec<(u32, u64)> {
    std::iter::from_fn(|| m.pop())
        .map(|v| (v.stream.0, v.value.id.sequence))
        .collect()
}

fn barrier(seq: u64) -> Batch {
    let Batch::Values(mut values) = value(seq) else {
        unreachable!()
    };
    values[0].kind = ValueKind::Barrier;
    Batch::Values(values)
}

/// A stream's decided sequence: values, nulls and skips of any size.
fn batches() -> impl Strategy<Value = Vec<Batch>> {
    prop::collection::vec(
        prop_oneof![
            4 => (0u64..1_000_000).prop_map(value),
            1 => Just(Batch::Null),
            2 => (0u64..12).prop_map(Batch::Skip),
        ],
        0..40,
    )
}

/// Feeds `m` stream by stream in the given interleaving, popping all
/// the time; returns what it popped.
fn feed(
    m: &mut Merger,
    streams: &[Vec<Batch>],
    from: &[u64],
    schedule: &[usize],
) -> Vec<(u32, u64)> {
    let mut next: Vec<u64> = from.to_vec();
    let mut out = Vec::new();
    for &pick in schedule {
        let s = pick % streams.len();
        if let Some(batch) = streams[s].get(next[s] as usize) {
            m.push(StreamId(s as u32 + 1), Instance(next[s]), batch.clone());
            next[s] += 1;
        }
        out.extend(drain(m));
    }
    for (s, stream) in streams.iter().enumerate() {
        while let Some(batch) = stream.get(next[s] as usize) {
            m.push(StreamId(s as u32 + 1), Instance(next[s]), batch.clone());
            next[s] += 1;
        }
    }
    out.extend(drain(m));
    out
}

fn control(op: ControlOp, group: u32, stream: u32, request: u64) -> Value {
    let c = Control {
        op,
        group: GroupId(group),
        stream: StreamId(stream),
        request: ValueId {
            proposer: amulet_types::NodeId(9),
            incarnation: 1,
            sequence: request,
        },
    };
    Value::control(
        ValueId {
            proposer: amulet_types::NodeId(8),
            incarnation: 1,
            sequence: 1_000_000 + request * 10 + op as u64 + 100 * stream as u64,
        },
        c.encode(),
    )
}

fn ctl(op: ControlOp, group: u32, stream: u32, request: u64) -> Batch {
    Batch::Values(vec![control(op, group, stream, request)])
}

/// Feeds every stream from where the merge expects it (going back
/// when a lane recovers a stream from its start), one instance per
/// step in the order `schedule` picks, popping all the time.
fn feed_expected(m: &mut Merger, streams: &[Vec<Batch>], schedule: &[usize]) -> Vec<(u32, u64)> {
    let mut out = Vec::new();
    let push = |m: &mut Merger, s: usize| -> bool {
        let id = StreamId(s as u32 + 1);
        let Some((next, _)) = m.expects(id) else {
            return false;
        };
        match streams[s].get(next.0 as usize) {
            Some(batch) => {
                m.push(id, next, batch.clone());
                true
            }
            None => false,
        }
    };
    for &pick in schedule {
        push(m, pick % streams.len());
        out.extend(drain(m));
    }
    loop {
        let mut any = false;
        for s in 0..streams.len() {
            any |= push(m, s);
            out.extend(drain(m));
        }
        if !any {
            break;
        }
    }
    out
}

/// Like `feed_expected` without feeding everything at the end.
fn feed_expected_steps(
    m: &mut Merger,
    streams: &[Vec<Batch>],
    schedule: &[usize],
) -> Vec<(u32, u64)> {
    let mut out = Vec::new();
    for &pick in schedule {
        let s = pick % streams.len();
        let id = StreamId(s as u32 + 1);
        if let Some((next, _)) = m.expects(id) {
            if let Some(batch) = streams[s].get(next.0 as usize) {
                m.push(id, next, batch.clone());
            }
        }
        out.extend(drain(m));
    }
    out
}
