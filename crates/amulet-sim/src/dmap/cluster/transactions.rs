//! The swarm's transactional mode (`amulet-sim --txn`): list-append
//! transactions across partitions (docs/transactions.md) on the same
//! cluster, faults and operator, judged by the transactional checker.

use super::DmapCluster;
use crate::dmap::txn_client::{all_keys, list_key, scan_range};
use crate::dmap::workload;
use crate::harness::Harness;
use crate::violation::{Property, Violation};
use amulet_dmap::{combine, MapCommand, MapError, MapReply, PartitionState, RangeQuery};
use amulet_host::ReadAtAnswer;
use amulet_smr::ClientReply;
use amulet_smr::StateMachine;
use std::sync::Arc;

impl DmapCluster {
    /// Serves the reads of transactional client `c` at its read version
    /// from a live replica of each key's partition, as the node's
    /// `ReadAt` does; sends the commit once all are read.
    pub(super) fn serve_txn_reads(&mut self, harness: &mut Harness, c: usize) {
        let Some((version, keys, scan)) = self.txn_clients[c].to_read() else {
            return;
        };
        let now = harness.now.0;
        let healed = self.healed;
        if self.txn_clients[c].reading_too_long(now) {
            let client = &mut self.txn_clients[c];
            client.give_up_reading(now, healed, &mut self.client_rng, &mut self.txn_history);
            return;
        }
        if scan && !keys.is_empty() {
            return self.serve_txn_scan(harness, c, version);
        }
        for key in keys {
            let map = self.txn_clients[c].map.clone();
            let Ok(partition) = map.partition_of(workload::map_name().as_str(), &list_key(key))
            else {
                return;
            };
            let command = MapCommand::Get {
                map: workload::map_name(),
                key: list_key(key),
            };
            let mut served = false;
            for (_, host) in harness.hosts() {
                match host.read_at(partition, map.version, version, &command) {
                    ReadAtAnswer::Read {
                        reply: MapReply::Value(value),
                        ..
                    } => {
                        if let Err(e) = self.txn_clients[c].read_one(key, value.as_ref()) {
                            self.violations.push(Violation::new(
                                Property::StrictSerializability,
                                format!("list {key} does not decode: {e}"),
                            ));
                        }
                        served = true;
                        break;
                    }
                    ReadAtAnswer::Read { reply, .. } => {
                        self.violations.push(Violation::new(
                            Property::StrictSerializability,
                            format!("a get at read version {version} answered {reply:?}"),
                        ));
                        return;
                    }
                    ReadAtAnswer::StaleMap(newer) => {
                        if newer.version > self.txn_clients[c].map.version {
                            self.txn_clients[c].map = Arc::new(*newer);
                        }
                        return; // again next tick, by the newer map
                    }
                    ReadAtAnswer::NotAReplica(Some(newer)) => {
                        if newer.version > self.txn_clients[c].map.version {
                            self.txn_clients[c].map = Arc::new(*newer);
                        }
                    }
                    ReadAtAnswer::Failed(MapError::ReadVersionTooOld(_)) => {
                        let client = &mut self.txn_clients[c];
                        client.give_up_reading(
                            now,
                            healed,
                            &mut self.client_rng,
                            &mut self.txn_history,
                        );
                        return;
                    }
                    ReadAtAnswer::Failed(MapError::ReadVersionElsewhere(_))
                    | ReadAtAnswer::NotAReplica(None)
                    | ReadAtAnswer::Behind
                    | ReadAtAnswer::CatchingUp => {}
                    ReadAtAnswer::Failed(error) => {
                        self.violations.push(Violation::new(
                            Property::StrictSerializability,
                            format!("a get at read version {version} failed: {error}"),
                        ));
                        return;
                    }
                }
            }
            if !served {
                return; // again next tick
            }
        }
        let client = &mut self.txn_clients[c];
        if let Some(send) =
            client.read_all(now, healed, &mut self.client_rng, &mut self.txn_history)
        {
            let from = client.endpoint;
            harness.request(from, send.to, send.tag, send.partition, send.request);
        }
    }

    /// The range read of every list at `version`: each partition's part
    /// from a live replica, combined as the client combines them.
    fn serve_txn_scan(&mut self, harness: &mut Harness, c: usize, version: u64) {
        let map = self.txn_clients[c].map.clone();
        let range = scan_range();
        let command = MapCommand::Range {
            map: workload::map_name(),
            range: RangeQuery {
                from: range.from,
                to: range.to,
                limit: 100,
                reverse: false,
            },
        };
        let Ok(partitions) = map.partitions_for(&PartitionState::placement(&command)) else {
            return;
        };
        let mut partials = Vec::new();
        for partition in partitions {
            let mut served = false;
            for (_, host) in harness.hosts() {
                match host.read_at(partition, map.version, version, &command) {
                    ReadAtAnswer::Read { reply, .. } => {
                        partials.push(reply);
                        served = true;
                        break;
                    }
                    ReadAtAnswer::StaleMap(newer) | ReadAtAnswer::NotAReplica(Some(newer))
                        if newer.version > self.txn_clients[c].map.version =>
                    {
                        self.txn_clients[c].map = Arc::new(*newer);
                        return;
                    }
                    ReadAtAnswer::Failed(MapError::ReadVersionTooOld(_)) => {
                        let (now, healed) = (harness.now.0, self.healed);
                        let client = &mut self.txn_clients[c];
                        client.give_up_reading(
                            now,
                            healed,
                            &mut self.client_rng,
                            &mut self.txn_history,
                        );
                        return;
                    }
                    _ => {}
                }
            }
            if !served {
                return;
            }
        }
        let MapReply::Entries { entries, more } = combine(&command, &partials) else {
            self.violations.push(Violation::new(
                Property::StrictSerializability,
                format!("a range read at {version} answered {partials:?}"),
            ));
            return;
        };
        if more {
            self.violations.push(Violation::new(
                Property::StrictSerializability,
                "a range read of six lists was cut short".to_string(),
            ));
            return;
        }
        for key in all_keys() {
            let value = entries
                .iter()
                .find(|(k, _)| *k == list_key(key))
                .map(|(_, v)| v);
            if let Err(e) = self.txn_clients[c].read_one(key, value) {
                self.violations.push(Violation::new(
                    Property::StrictSerializability,
                    format!("list {key} does not decode: {e}"),
                ));
                return;
            }
        }
        let (now, healed) = (harness.now.0, self.healed);
        let client = &mut self.txn_clients[c];
        if let Some(send) =
            client.read_all(now, healed, &mut self.client_rng, &mut self.txn_history)
        {
            let from = client.endpoint;
            harness.request(from, send.to, send.tag, send.partition, send.request);
        }
    }

    /// Time passes for transactional client `c`.
    pub(super) fn tick_txn_client(&mut self, harness: &mut Harness, c: usize, issuing: bool) {
        self.serve_txn_reads(harness, c);
        let now = harness.now.0;
        let send = self.txn_clients[c].tick(
            now,
            issuing,
            &mut self.client_rng,
            &mut self.txn_history,
            &mut self.next_value,
        );
        if let Some(send) = send {
            let from = self.txn_clients[c].endpoint;
            harness.request(from, send.to, send.tag, send.partition, send.request);
        }
    }

    /// A reply for transactional client `c`.
    pub(super) fn txn_reply(
        &mut self,
        harness: &mut Harness,
        c: usize,
        tag: u64,
        reply: ClientReply<MapReply>,
    ) {
        let result = self.txn_clients[c].on_reply(
            harness.now.0,
            tag,
            reply,
            self.healed,
            &mut self.client_rng,
            &mut self.txn_history,
            &mut self.next_process,
        );
        match result {
            Ok(Some(send)) => {
                let from = self.txn_clients[c].endpoint;
                harness.request(from, send.to, send.tag, send.partition, send.request);
            }
            Ok(None) => {}
            Err(message) => self.violations.push(Violation::new(
                Property::StrictSerializability,
                format!("transactional client {c}: {message}"),
            )),
        }
    }

    /// The transactional checker, and progress: after healing every
    /// transactional client ended transactions and is idle at the end.
    pub(super) fn check_transactions(&mut self) {
        if let Some(message) = self.txn_history.check() {
            self.violations
                .push(Violation::new(Property::StrictSerializability, message));
        }
        for (c, client) in self.txn_clients.iter().enumerate() {
            let idle = matches!(
                client.phase,
                crate::dmap::txn_client::TxnPhase::Thinking { .. }
            );
            if client.completed_after_heal == 0 || !idle {
                self.violations.push(Violation::new(
                    Property::Progress,
                    format!(
                        "transactional client {c} ended {} transactions after healing and ends in {:?}",
                        client.completed_after_heal, client.phase
                    ),
                ));
            }
        }
    }
}
