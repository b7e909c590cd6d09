//! A small deterministic harness for the Paxos core: in-memory logs and a
//! lossy network stepped by a seeded generator.
#![allow(dead_code)]

use amulet_paxos::{Input, Output, StreamNode};
use amulet_storage::{AcceptorLog, LogRecord, Recovered, StorageError};
use amulet_types::{
    Ballot, Instance, NodeId, StorageMode, StreamConfig, StreamId, StreamLimits, TimeMicros,
    ValueId,
};
use amulet_wire::{Batch, Envelope};
use bytes::Bytes;
use std::collections::{BTreeMap, VecDeque};

/// A log kept in a map, shared so it survives a restart of its node.
#[derive(Default, Clone)]
pub struct MapLog(pub std::sync::Arc<std::sync::Mutex<MapLogInner>>);

#[derive(Default, Clone)]
pub struct MapLogInner {
    promised: Ballot,
    instance_promises: BTreeMap<Instance, Ballot>,
    records: BTreeMap<Instance, LogRecord>,
    trimmed: Instance,
    intact: bool,
}

impl MapLog {
    pub fn fresh() -> MapLog {
        MapLog(std::sync::Arc::new(std::sync::Mutex::new(MapLogInner {
            intact: true,
            ..MapLogInner::default()
        })))
    }
}

impl AcceptorLog for MapLog {
    fn save_promise(&mut self, ballot: Ballot) -> Result<(), StorageError> {
        self.0.lock().unwrap().save_promise(ballot)
    }
    fn save_instance_promise(&mut self, i: Instance, b: Ballot) -> Result<(), StorageError> {
        self.0.lock().unwrap().save_instance_promise(i, b)
    }
    fn save(&mut self, record: &LogRecord) -> Result<(), StorageError> {
        self.0.lock().unwrap().save(record)
    }
    fn mark_decided(&mut self, i: Instance, b: Ballot) -> Result<(), StorageError> {
        self.0.lock().unwrap().mark_decided(i, b)
    }
    fn read(&self, i: Instance) -> Result<Option<LogRecord>, StorageError> {
        self.0.lock().unwrap().read(i)
    }
    fn trim(&mut self, below: Instance) -> Result<(), StorageError> {
        self.0.lock().unwrap().trim(below)
    }
    fn trimmed_below(&self) -> Instance {
        self.0.lock().unwrap().trimmed_below()
    }
    fn end(&self) -> Instance {
        self.0.lock().unwrap().end()
    }
    fn sync(&mut self) -> Result<(), StorageError> {
        Ok(())
    }
    fn dirty(&self) -> bool {
        false
    }
    fn recovered(&self) -> Recovered {
        self.0.lock().unwrap().recovered()
    }
}

impl MapLogInner {
    pub fn save_promise(&mut self, ballot: Ballot) -> Result<(), StorageError> {
        self.promised = self.promised.max(ballot);
        Ok(())
    }
    pub fn save_instance_promise(&mut self, i: Instance, b: Ballot) -> Result<(), StorageError> {
        self.instance_promises.insert(i, b);
        Ok(())
    }
    pub fn save(&mut self, record: &LogRecord) -> Result<(), StorageError> {
        self.records.insert(record.instance, record.clone());
        Ok(())
    }
    pub fn mark_decided(&mut self, i: Instance, b: Ballot) -> Result<(), StorageError> {
        if let Some(r) = self.records.get_mut(&i) {
            if r.ballot == b {
                r.decided = true;
            }
        }
        Ok(())
    }
    pub fn read(&self, i: Instance) -> Result<Option<LogRecord>, StorageError> {
        Ok(if i < self.trimmed {
            None
        } else {
            self.records.get(&i).cloned()
        })
    }
    pub fn trim(&mut self, below: Instance) -> Result<(), StorageError> {
        self.trimmed = self.trimmed.max(below);
        self.records = self.records.split_off(&self.trimmed);
        Ok(())
    }
    pub fn trimmed_below(&self) -> Instance {
        self.trimmed
    }
    pub fn end(&self) -> Instance {
        self.records
            .keys()
            .next_back()
            .map_or(self.trimmed, |i| i.next())
    }
    pub fn recovered(&self) -> Recovered {
        Recovered {
            promised: self.promised,
            instance_promises: self
                .instance_promises
                .iter()
                .map(|(i, b)| (*i, *b))
                .collect(),
            trimmed_below: self.trimmed,
            end: self.end(),
            intact: self.intact,
        }
    }
}

pub fn config(acceptors: &[u32], learners: &[u32]) -> StreamConfig {
    StreamConfig {
        stream: StreamId(1),
        acceptors: acceptors.iter().map(|&n| NodeId(n)).collect(),
        learners: learners.iter().map(|&n| NodeId(n)).collect(),
        storage: StorageMode::Memory,
        limits: StreamLimits::default(),
        base_position: 0,
    }
}

/// splitmix64.
pub struct Rng(pub u64);
impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    pub fn chance(&mut self, p: f64) -> bool {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64 <= p
    }
}

pub struct Cluster {
    pub config: StreamConfig,
    pub nodes: BTreeMap<NodeId, StreamNode>,
    pub logs: BTreeMap<NodeId, MapLog>,
    pub incarnation: u32,
    pub network: VecDeque<(NodeId, NodeId, Envelope)>,
    pub delivered: BTreeMap<NodeId, Vec<(Instance, Batch)>>,
    pub now: TimeMicros,
    pub rng: Rng,
    pub loss: f64,
    pub down: Vec<NodeId>,
    /// Every decision any learner delivered: instance -> batch.
    pub decisions: BTreeMap<amulet_types::Instance, Batch>,
    /// Agreement violations seen.
    pub violations: Vec<String>,
}

impl Cluster {
    pub fn new(config: StreamConfig, seed: u64) -> Cluster {
        let logs: BTreeMap<NodeId, MapLog> = config
            .members()
            .into_iter()
            .map(|n| (n, MapLog::fresh()))
            .collect();
        let nodes = logs
            .iter()
            .map(|(&n, log)| {
                let node =
                    StreamNode::new(n, config.clone(), Box::new(log.clone()), 1, TimeMicros(0));
                (n, node)
            })
            .collect();
        Cluster {
            config,
            nodes,
            logs,
            incarnation: 1,
            network: VecDeque::new(),
            delivered: BTreeMap::new(),
            now: TimeMicros(0),
            rng: Rng(seed),
            loss: 0.0,
            down: Vec::new(),
            decisions: BTreeMap::new(),
            violations: Vec::new(),
        }
    }

    fn absorb(&mut self, from: NodeId, out: Output) {
        for (to, envelope) in out.sends.into_iter().chain(out.sends_after_sync) {
            self.network.push_back((from, to, envelope));
        }
        let log = self.delivered.entry(from).or_default();
        for d in out.decided {
            match self.decisions.get(&d.instance) {
                Some(known) if *known != d.batch => self.violations.push(format!(
                    "{from} delivered {:?} at {} but {:?} was delivered before",
                    d.batch, d.instance, known
                )),
                Some(_) => {}
                None => {
                    self.decisions.insert(d.instance, d.batch.clone());
                }
            }
            log.push((d.instance, d.batch));
        }
    }

    pub fn propose(&mut self, at: NodeId, bytes: &'static [u8]) -> ValueId {
        let mut out = Output::default();
        let now = self.now;
        let id = self
            .nodes
            .get_mut(&at)
            .unwrap()
            .propose(now, Bytes::from_static(bytes), &mut out)
            .unwrap();
        self.absorb(at, out);
        id
    }

    /// Delivers messages (in a random order, with loss) and ticks, for
    /// `micros` of virtual time.
    pub fn run(&mut self, micros: u64) {
        let end = self.now.plus(micros);
        while self.now < end {
            self.now = self.now.plus(1_000);
            let mut budget = self.network.len();
            while budget > 0 {
                budget -= 1;
                let Some((from, to, envelope)) = self.network.pop_front() else {
                    break;
                };
                if self.down.contains(&to)
                    || self.down.contains(&from)
                    || self.rng.chance(self.loss)
                {
                    continue;
                }
                let mut out = Output::default();
                let now = self.now;
                let node = self.nodes.get_mut(&to).unwrap();
                node.step(
                    now,
                    Input::Message {
                        from,
                        message: envelope.message,
                    },
                    &mut out,
                );
                self.absorb(to, out);
            }
            let ids: Vec<NodeId> = self.nodes.keys().copied().collect();
            for id in ids {
                if self.down.contains(&id) {
                    continue;
                }
                let mut out = Output::default();
                let now = self.now;
                self.nodes
                    .get_mut(&id)
                    .unwrap()
                    .step(now, Input::Tick, &mut out);
                self.absorb(id, out);
            }
        }
    }

    /// Restarts `node` from its log (a durable acceptor after a crash);
    /// its learner starts again from instance 0 under a new history.
    pub fn restart(&mut self, node: NodeId, bugs: amulet_paxos::Bugs) {
        self.incarnation += 1;
        let log = self.logs[&node].clone();
        let mut fresh = StreamNode::new(
            node,
            self.config.clone(),
            Box::new(log),
            self.incarnation,
            self.now,
        );
        fresh.set_bugs(bugs);
        self.nodes.insert(node, fresh);
        self.delivered.insert(node, Vec::new());
        self.network.retain(|(_, to, _)| *to != node);
    }

    pub fn values_delivered(&self, node: NodeId) -> Vec<ValueId> {
        self.delivered
            .get(&node)
            .map(|log| {
                log.iter()
                    .flat_map(|(_, b)| match b {
                        Batch::Values(v) => v.iter().map(|v| v.id).collect(),
                        _ => Vec::new(),
                    })
                    .collect()
            })
            .unwrap_or_default()
    }
}
