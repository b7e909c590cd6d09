//! The transactional checker: a history of list-append transactions (Elle's
//! workload: each transaction reads some lists and appends unique elements
//! to others) judged by the `adya` crate (Elle's method: version orders
//! from list reads, ww/wr/rw dependencies plus real-time edges, cycles
//! classified G0, G1a/b/c, G-single, G2) against strict serializability.
//!
//! The simulator records events in virtual-time order: an invocation when
//! a transaction starts, its completion (`ok` with the lists read, `fail`
//! when it certainly changed nothing, `info` when its commit's outcome is
//! unknown) when it ends. After an `info` the client continues as a new
//! process, as Jepsen's do.

use adya::history::{Interner, Mop, Op, OpType, ReadValue, Scalar};
use adya::{check, History, Opts, Valid, Workload};

/// A micro-operation of a transaction.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TxnMop {
    /// Read list `key`: `None` until read, then the elements.
    Read {
        /// The key.
        key: u64,
        /// The elements read.
        value: Option<Vec<u64>>,
    },
    /// Append `value` (unique in the run) to list `key`.
    Append {
        /// The key.
        key: u64,
        /// The element.
        value: u64,
    },
}

/// How a transaction ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TxnEnd {
    /// Committed (or read-only and read).
    Ok,
    /// Certainly changed nothing (conflict, ended read version, refused).
    Fail,
    /// The commit may or may not have applied.
    Info,
}

/// The history of a run, events in time order.
#[derive(Default, Debug)]
pub struct TxnHistory {
    events: Vec<(i64, OpType, Vec<TxnMop>)>,
    /// Transactions that ended, by how.
    pub ended: [u64; 3],
}

impl TxnHistory {
    /// Process `process` starts a transaction of `mops`.
    pub fn invoke(&mut self, process: i64, mops: Vec<TxnMop>) {
        self.events.push((process, OpType::Invoke, mops));
    }

    /// Process `process`'s transaction ended: `mops` with what it read.
    pub fn complete(&mut self, process: i64, end: TxnEnd, mops: Vec<TxnMop>) {
        let kind = match end {
            TxnEnd::Ok => OpType::Ok,
            TxnEnd::Fail => OpType::Fail,
            TxnEnd::Info => OpType::Info,
        };
        self.ended[end as usize] += 1;
        self.events.push((process, kind, mops));
    }

    /// Transactions started.
    pub fn started(&self) -> usize {
        self.events
            .iter()
            .filter(|(_, kind, _)| *kind == OpType::Invoke)
            .count()
    }

    fn to_adya(&self) -> History {
        let mut interner = Interner::default();
        let mut int = |n: u64| interner.intern(Scalar::Int(n as i64));
        let ops = self
            .events
            .iter()
            .enumerate()
            .map(|(index, (process, kind, mops))| Op {
                index: index as u64,
                kind: *kind,
                process: Some(*process),
                value: mops
                    .iter()
                    .map(|mop| match mop {
                        TxnMop::Read { key, value } => Mop::Read {
                            key: int(*key),
                            value: match value {
                                None => ReadValue::Nil,
                                Some(list) => {
                                    ReadValue::List(list.iter().map(|v| int(*v)).collect())
                                }
                            },
                        },
                        TxnMop::Append { key, value } => Mop::Append {
                            key: int(*key),
                            value: int(*value),
                        },
                    })
                    .collect(),
                time: None,
            })
            .collect();
        History::from_ops(ops, interner)
    }

    /// `None` if the history is strictly serializable, or what is wrong.
    pub fn check(&self) -> Option<String> {
        let history = self.to_adya();
        let report = check(&history, Workload::ListAppend, &Opts::default());
        match report.valid {
            Valid::True => None,
            // Nothing to infer from (a seed whose transactions all
            // failed, or touched disjoint keys): nothing is wrong.
            Valid::Unknown if report.anomaly_types == ["empty-transaction-graph"] => None,
            _ => Some(format!(
                "not strictly serializable: {:?} ({} transactions)",
                report.anomaly_types,
                self.started()
            )),
        }
    }
}

/// Checks a history in Elle's JSON format (what the real-process fault
/// suite records): `Ok(None)` if strictly serializable, `Ok(Some(what))`
/// with the anomalies (and their explanations) otherwise.
pub fn check_elle_json(text: &str) -> Result<Option<String>, String> {
    let history = History::from_json(text).map_err(|e| e.to_string())?;
    let report = check(&history, Workload::ListAppend, &Opts::default());
    Ok(match report.valid {
        Valid::True => None,
        Valid::Unknown if report.anomaly_types == ["empty-transaction-graph"] => None,
        _ => {
            let explained: Vec<String> = report
                .anomalies
                .values()
                .flatten()
                .take(5)
                .map(|a| format!("{a:?}"))
                .collect();
            Some(format!(
                "{:?}; first anomalies: {}",
                report.anomaly_types,
                explained.join("; ")
            ))
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(key: u64, value: &[u64]) -> TxnMop {
        TxnMop::Read {
            key,
            value: Some(value.to_vec()),
        }
    }

    fn append(key: u64, value: u64) -> TxnMop {
        TxnMop::Append { key, value }
    }

    #[test]
    fn a_serial_history_passes() {
        let mut h = TxnHistory::default();
        h.invoke(0, vec![append(1, 1)]);
        h.complete(0, TxnEnd::Ok, vec![append(1, 1)]);
        h.invoke(1, vec![read(1, &[]), append(2, 2)]);
        h.complete(1, TxnEnd::Ok, vec![read(1, &[1]), append(2, 2)]);
        h.invoke(0, vec![read(1, &[]), read(2, &[])]);
        h.complete(0, TxnEnd::Ok, vec![read(1, &[1]), read(2, &[2])]);
        assert_eq!(h.check(), None);
    }

    #[test]
    fn write_skew_is_caught() {
        // Both read both lists empty, each appends to one: G2.
        let mut h = TxnHistory::default();
        h.invoke(0, vec![]);
        h.invoke(1, vec![]);
        h.complete(
            0,
            TxnEnd::Ok,
            vec![read(1, &[]), read(2, &[]), append(1, 1)],
        );
        h.complete(
            1,
            TxnEnd::Ok,
            vec![read(1, &[]), read(2, &[]), append(2, 2)],
        );
        h.invoke(2, vec![]);
        h.complete(2, TxnEnd::Ok, vec![read(1, &[1]), read(2, &[2])]);
        assert!(
            h.check().is_some_and(|m| m.contains("G2")),
            "{:?}",
            h.check()
        );
    }

    #[test]
    fn a_stale_read_after_a_completed_append_is_caught_by_real_time() {
        // Process 0's append completes; process 1 starts after and reads
        // the list empty: serializable, not strict.
        let mut h = TxnHistory::default();
        h.invoke(0, vec![append(1, 1)]);
        h.complete(0, TxnEnd::Ok, vec![append(1, 1)]);
        h.invoke(1, vec![read(1, &[])]);
        h.complete(1, TxnEnd::Ok, vec![read(1, &[])]);
        h.invoke(2, vec![read(1, &[])]);
        h.complete(2, TxnEnd::Ok, vec![read(1, &[1])]);
        assert!(
            h.check().is_some_and(|m| m.contains("realtime")),
            "{:?}",
            h.check()
        );
    }

    #[test]
    fn elle_json_histories_are_checked() {
        let valid = r#"{"type":"invoke","process":0,"value":[["append","x",1]]}
{"type":"ok","process":0,"value":[["append","x",1]]}
{"type":"invoke","process":1,"value":[["r","x",null]]}
{"type":"ok","process":1,"value":[["r","x",[1]]]}"#;
        assert_eq!(check_elle_json(valid), Ok(None));
        let stale = r#"{"type":"invoke","process":0,"value":[["append","x",1]]}
{"type":"ok","process":0,"value":[["append","x",1]]}
{"type":"invoke","process":1,"value":[["r","x",null]]}
{"type":"ok","process":1,"value":[["r","x",[]]]}
{"type":"invoke","process":2,"value":[["r","x",null]]}
{"type":"ok","process":2,"value":[["r","x",[1]]]}"#;
        assert!(check_elle_json(stale).unwrap().is_some());
        assert!(check_elle_json("not json").is_err());
    }

    #[test]
    fn a_failed_append_that_was_read_is_caught() {
        let mut h = TxnHistory::default();
        h.invoke(0, vec![append(1, 1)]);
        h.complete(0, TxnEnd::Fail, vec![append(1, 1)]);
        h.invoke(1, vec![read(1, &[])]);
        h.complete(1, TxnEnd::Ok, vec![read(1, &[1])]);
        assert!(h.check().is_some(), "G1a: read of an aborted write");
    }
}
