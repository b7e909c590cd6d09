//! The model of an acceptor log shared by the recovery tests: random
//! operations, what a log should hold after them, and what a reopened log
//! shows.
#![allow(dead_code)]

use amulet_storage::{AcceptorLog, LogRecord};
use amulet_types::{Ballot, Instance, NodeId, ValueId};
use amulet_wire::{Batch, Value};
use bytes::Bytes;
use proptest::prelude::*;
use std::collections::BTreeMap;

pub const INSTANCES: u64 = 24;
/// Small segments so that sequences roll over and trims delete files.
pub const SEGMENT_BYTES: u64 = 512;

#[derive(Clone, Debug)]
pub enum Op {
    Promise(u32),
    InstancePromise(u64, u32),
    Vote(u64, u32, usize),
    Decide(u64),
    Trim(u64),
    Sync,
}

pub fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        1 => (1..6u32).prop_map(Op::Promise),
        1 => (0..INSTANCES, 1..6u32).prop_map(|(i, r)| Op::InstancePromise(i, r)),
        6 => (0..INSTANCES, 1..6u32, 0..200usize).prop_map(|(i, r, n)| Op::Vote(i, r, n)),
        2 => (0..INSTANCES).prop_map(Op::Decide),
        1 => (0..INSTANCES).prop_map(Op::Trim),
        2 => Just(Op::Sync),
    ]
}

pub fn ballot(round: u32) -> Ballot {
    Ballot { round, node: 1 }
}

pub fn batch(instance: u64, round: u32, bytes: usize) -> Batch {
    if bytes.is_multiple_of(7) {
        return Batch::Skip(bytes as u64 + 1);
    }
    Batch::Values(vec![Value {
        kind: Default::default(),
        id: ValueId {
            proposer: NodeId(2),
            incarnation: round,
            sequence: instance,
        },
        bytes: Bytes::from(vec![instance as u8; bytes]),
    }])
}

/// What the acceptor should find: the model of a log.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Model {
    pub promised: Ballot,
    pub instance_promises: BTreeMap<Instance, Ballot>,
    pub records: BTreeMap<Instance, LogRecord>,
    pub trimmed_below: Instance,
}

/// Applies `op` to the log and the model alike, and writes it out, as the
/// host does before any message leaves (see [`apply_buffered`]).
pub fn apply(log: &mut dyn AcceptorLog, model: &mut Model, op: &Op) {
    apply_buffered(log, model, op);
    log.write_out().unwrap();
}

/// Applies `op` without writing it out: it may stay in the log's buffer.
pub fn apply_buffered(log: &mut dyn AcceptorLog, model: &mut Model, op: &Op) {
    match *op {
        Op::Promise(round) => {
            log.save_promise(ballot(round)).unwrap();
            model.promised = model.promised.max(ballot(round));
        }
        Op::InstancePromise(i, round) => {
            log.save_instance_promise(Instance(i), ballot(round))
                .unwrap();
            if Instance(i) >= model.trimmed_below {
                let e = model
                    .instance_promises
                    .entry(Instance(i))
                    .or_insert(ballot(round));
                *e = (*e).max(ballot(round));
            }
        }
        Op::Vote(i, round, bytes) => {
            let record = LogRecord {
                instance: Instance(i),
                ballot: ballot(round),
                batch: batch(i, round, bytes),
                decided: false,
            };
            log.save(&record).unwrap();
            if Instance(i) >= model.trimmed_below {
                model.records.insert(Instance(i), record);
            }
        }
        Op::Decide(i) => {
            if let Some(record) = model.records.get_mut(&Instance(i)) {
                log.mark_decided(Instance(i), record.ballot).unwrap();
                record.decided = true;
            }
        }
        Op::Trim(below) => {
            log.trim(Instance(below)).unwrap();
            if Instance(below) > model.trimmed_below {
                model.trimmed_below = Instance(below);
                model.records = model.records.split_off(&Instance(below));
                model.instance_promises = model.instance_promises.split_off(&Instance(below));
            }
        }
        Op::Sync => log.sync().unwrap(),
    }
}

/// The state a reopened log shows, in the model's terms.
pub fn observe(log: &dyn AcceptorLog) -> Model {
    let recovered = log.recovered();
    let mut records = BTreeMap::new();
    for i in 0..INSTANCES {
        let record = log.read(Instance(i)).unwrap();
        // The index's answer (the acceptor's fast path for decisions)
        // agrees with the record itself, whenever the log gives one.
        if let Some(vote) = log.vote(Instance(i)) {
            assert_eq!(
                Some(vote),
                record.as_ref().map(|r| (r.ballot, r.decided)),
                "the index disagrees with the record of instance {i}"
            );
        }
        if let Some(record) = record {
            records.insert(Instance(i), record);
        }
    }
    Model {
        promised: recovered.promised,
        instance_promises: recovered.instance_promises.into_iter().collect(),
        records,
        trimmed_below: recovered.trimmed_below,
    }
}

/// A steady stream's vote: a decided vote of ~150 bytes in `instance`,
/// and every 100 instances a trim 50 behind it (what a log holding a
/// bounded window sees).
pub fn steady_vote(log: &mut dyn AcceptorLog, instance: u64) {
    let record = LogRecord {
        instance: Instance(instance),
        ballot: ballot(1),
        batch: batch(instance, 1, 100),
        decided: true,
    };
    log.save(&record).unwrap();
    if instance % 100 == 99 {
        log.trim(Instance(instance - 50)).unwrap();
    }
}

/// Flips the bits `mask` of one byte of one file of a disk image (both
/// picked by proptest indices); an empty file is left alone.
pub fn damage_byte(
    image: &mut BTreeMap<String, Vec<u8>>,
    file: prop::sample::Index,
    at: prop::sample::Index,
    mask: u8,
) {
    let names: Vec<String> = image.keys().cloned().collect();
    let name = &names[file.index(names.len())];
    let data = image.get_mut(name).expect("named from the image");
    if !data.is_empty() {
        let i = at.index(data.len());
        data[i] ^= mask;
    }
}
