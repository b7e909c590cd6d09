//! The Rust runner of the shared client scenarios
//! (`spec/conformance/scenarios.json`; the format is
//! `spec/conformance/README.md`).
//!
//! It starts its own `amulet dev` cluster (the binary at `$AMULET_BIN`, by
//! default `<repo>/target/release/amulet`: build it first with `cargo build
//! --release -p amulet`) in a fresh temp dir with memory storage and base
//! ports in 22000-22990, runs every scenario in file order through the
//! `amulet-client` crate, and stops the cluster at the end, also on
//! failure. Each op is one request of the byte-level API (`DMap`), except
//! `snapshot_read`, which streams an open snapshot again with raw
//! ReadSnapshot calls (the crate's `Snapshot` is read once).
//!
//! Error classes: `Error::InvalidArgument` is `invalid_argument`,
//! `NotFound` `not_found`, `AlreadyExists` `already_exists`,
//! `ResourceExhausted` `resource_exhausted`, `FailedPrecondition`
//! `failed_precondition`; any other error fails the
//! step (and so does a raw status other than those five codes).

// A process test: the wall clock bounds its waits and seeds its run id.
#![allow(clippy::disallowed_methods)]

use amulet_api::pb::{self, amulet_client::AmuletClient};
use amulet_client::{
    Bytes, Client, Context, DLog, DMap, Error, KeyBound, Nearest, Snapshot, Transaction,
};
use amulet_smr::{Keys, Layout, Placement};
use amulet_types::PartitionId;
use std::collections::{BTreeMap, HashMap};

#[path = "conformance/dev_cluster.rs"]
mod dev_cluster;
use dev_cluster::{repo_root, DevCluster};
use std::time::Duration;

// ---------------------------------------------------------------- JSON

type Json = serde_json::Value;

/// The accessors the runner needs; a step of the wrong shape is a broken
/// scenario file, so they panic with the value.
trait JsonExt {
    fn keys(&self) -> Vec<&str>;
    fn str(&self) -> &str;
    fn array(&self) -> &[Json];
    fn bool(&self) -> bool;
    fn int(&self) -> i64;
    /// Compact text, for failure messages (cut at `width` characters).
    fn show(&self, width: usize) -> String;
}

impl JsonExt for Json {
    fn keys(&self) -> Vec<&str> {
        self.as_object()
            .map_or_else(Vec::new, |o| o.keys().map(String::as_str).collect())
    }
    fn str(&self) -> &str {
        self.as_str()
            .unwrap_or_else(|| panic!("not a string: {self}"))
    }
    fn array(&self) -> &[Json] {
        self.as_array()
            .unwrap_or_else(|| panic!("not an array: {self}"))
    }
    fn bool(&self) -> bool {
        self.as_bool()
            .unwrap_or_else(|| panic!("not a bool: {self}"))
    }
    fn int(&self) -> i64 {
        self.as_i64()
            .unwrap_or_else(|| panic!("not an integer: {self}"))
    }
    fn show(&self, width: usize) -> String {
        let out = self.to_string();
        if out.len() > width {
            let mut cut = width;
            while !out.is_char_boundary(cut) {
                cut -= 1;
            }
            format!("{}... ({} chars)", &out[..cut], out.len())
        } else {
            out
        }
    }
}

// ---------------------------------------------------------------- the runner

/// What a step came to: its result, or the class of its error.
#[derive(Debug, PartialEq)]
enum Outcome {
    Expect(Json),
    Error(String),
}

fn class_of(error: &Error) -> String {
    match error {
        Error::InvalidArgument(_) => "invalid_argument".into(),
        Error::NotFound(_) => "not_found".into(),
        Error::AlreadyExists(_) => "already_exists".into(),
        Error::ResourceExhausted(_) => "resource_exhausted".into(),
        Error::FailedPrecondition(_) => "failed_precondition".into(),
        Error::OutOfRange(_) => "out_of_range".into(),
        Error::Conflict { .. } => "conflict".into(),
        Error::ReadVersionTooOld(_) => "read_version_too_old".into(),
        other => format!("{other:?}"),
    }
}

fn class_of_status(status: &tonic::Status) -> String {
    match status.code() {
        tonic::Code::InvalidArgument => "invalid_argument".into(),
        tonic::Code::NotFound => "not_found".into(),
        tonic::Code::AlreadyExists => "already_exists".into(),
        tonic::Code::ResourceExhausted => "resource_exhausted".into(),
        _ => format!("{status:?}"),
    }
}

/// BYTES: lowercase hex, or `{"repeat": hex, "times": n}`.
fn data(value: &Json) -> Bytes {
    fn unhex(text: &str) -> Vec<u8> {
        assert!(text.len().is_multiple_of(2), "odd hex {text:?}");
        (0..text.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&text[i..i + 2], 16).expect("hex"))
            .collect()
    }
    match value {
        Json::String(text) => Bytes::from(unhex(text)),
        Json::Object(_) => {
            let mut keys = value.keys();
            keys.sort();
            assert_eq!(keys, ["repeat", "times"], "not BYTES: {value:?}");
            let times = value.get("times").unwrap().int();
            Bytes::from(unhex(value.get("repeat").unwrap().str()).repeat(times as usize))
        }
        other => panic!("not BYTES: {other:?}"),
    }
}

fn hex(bytes: &[u8]) -> Json {
    Json::String(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

fn value_json(value: Option<Bytes>) -> Json {
    value.map_or(Json::Null, |v| hex(&v))
}

fn entry_json(entry: &(Bytes, Bytes)) -> Json {
    Json::Array(vec![hex(&entry.0), hex(&entry.1)])
}

fn entries_json(entries: &[(Bytes, Bytes)]) -> Json {
    Json::Array(entries.iter().map(entry_json).collect())
}

fn bound(value: Option<&Json>) -> Option<KeyBound> {
    let value = value?;
    let mut keys = value.keys();
    keys.sort();
    assert_eq!(keys, ["inclusive", "key"], "not a bound: {value:?}");
    Some(KeyBound {
        key: data(value.get("key").unwrap()),
        inclusive: value.get("inclusive").unwrap().bool(),
    })
}

/// The arguments each op takes: required, then optional.
fn arguments(op: &str) -> Option<(&'static [&'static str], &'static [&'static str])> {
    Some(match op {
        "create_map" => (&["map"], &["layout"]),
        "drop_map" | "size" | "is_empty" | "clear" | "first_entry" | "last_entry" | "snapshot" => {
            (&["map"], &[])
        }
        "get" | "contains_key" | "remove" => (&["map", "key"], &[]),
        "put" | "put_if_absent" | "replace" => (&["map", "key", "value"], &[]),
        "replace_if_equals" => (&["map", "key", "expected", "value"], &[]),
        "remove_if_equals" => (&["map", "key", "expected"], &[]),
        "put_all" => (&["map", "entries"], &[]),
        "merge_fields" => (&["map", "key", "fields"], &[]),
        "contains_value" => (&["map", "value"], &[]),
        "nearest_entry" => (&["map", "key", "nearest"], &[]),
        "range" => (&["map", "limit"], &["from", "to", "reverse"]),
        "snapshot_open" => (&["map", "name"], &[]),
        "snapshot_read" | "snapshot_release" => (&["name"], &[]),
        "txn_get" | "txn_delete" => (&["txn", "map", "key"], &[]),
        "txn_put" => (&["txn", "map", "key", "value"], &[]),
        "txn_range" => (&["txn", "map", "limit"], &["from", "to", "reverse"]),
        "txn_commit" | "txn_abandon" => (&["txn"], &[]),
        "leave" => (&["node"], &[]),
        "join" => (&["peer_address", "client_address"], &[]),
        "create_log" | "drop_log" | "log_bounds" => (&["log"], &[]),
        "append" => (&["log", "value"], &[]),
        "multi_append" => (&["entries"], &[]),
        "read_log" => (&["log", "from", "max_entries"], &[]),
        "trim_log" => (&["log", "below"], &[]),
        "tail_log" => (&["log", "from", "count"], &[]),
        "eventual_get" => (&["map", "key"], &["r", "save"]),
        "eventual_put" => (&["map", "key", "value"], &["context", "w", "save"]),
        "eventual_delete" => (&["map", "key"], &["context", "w", "save"]),
        _ => return None,
    })
}

/// A snapshot opened by `snapshot_open`.
struct Held {
    snapshot: Option<Snapshot>,
    id: u64,
    partitions: Vec<PartitionId>,
}

struct Runner {
    client: Client,
    prefix: String,
    snapshots: HashMap<String, Held>,
    /// Transactions by name, each begun at its first op.
    txns: HashMap<String, Transaction>,
    /// Eventual maps' contexts saved by `save`.
    contexts: HashMap<String, Context>,
    /// The cluster's TLS files, for raw gRPC calls.
    tls: amulet_client::TlsFiles,
}

impl Runner {
    /// The prefixed name of the step's map.
    fn map_name(&self, step: &Json) -> String {
        format!("{}{}", self.prefix, step.get("map").unwrap().str())
    }

    /// The step's transaction, begun if new.
    fn txn(&mut self, step: &Json) -> Transaction {
        let name = step.get("txn").unwrap().str().to_string();
        let client = self.client.clone();
        self.txns
            .entry(name)
            .or_insert_with(|| client.transaction())
            .clone()
    }

    fn map(&self, step: &Json) -> Result<DMap, Error> {
        self.client.map(&format!(
            "{}{}",
            self.prefix,
            step.get("map").unwrap().str()
        ))
    }

    fn log(&self, step: &Json) -> Result<DLog, Error> {
        self.client.log(&format!(
            "{}{}",
            self.prefix,
            step.get("log").unwrap().str()
        ))
    }

    async fn run(&mut self, step: &Json) -> Outcome {
        match self.step(step).await {
            Ok(Ok(value)) => Outcome::Expect(value),
            Ok(Err(class)) => Outcome::Error(class),
            Err(e) => Outcome::Error(class_of(&e)),
        }
    }

    /// `Ok(Ok(result))`, `Ok(Err(class))` for a raw status, or the client's
    /// error.
    async fn step(&mut self, step: &Json) -> Result<Result<Json, String>, Error> {
        let op = step.get("op").expect("a step has an op").str();
        let (required, optional) = arguments(op).unwrap_or_else(|| panic!("unknown op {op:?}"));
        let given: Vec<&str> = step
            .keys()
            .into_iter()
            .filter(|k| !matches!(*k, "op" | "expect" | "error"))
            .collect();
        for k in required {
            assert!(given.contains(k), "{op} needs {k:?}: {step:?}");
        }
        for k in &given {
            assert!(
                required.contains(k) || optional.contains(k),
                "{op} does not take {k:?}"
            );
        }
        assert!(
            step.get("expect").is_some() != step.get("error").is_some(),
            "a step has exactly one of expect and error"
        );
        let arg = |name: &str| step.get(name).unwrap();
        let ok = |v: Json| Ok(Ok(v));
        match op {
            "create_map" => {
                let name = format!("{}{}", self.prefix, arg("map").str());
                let layout = match step.get("layout") {
                    None => Layout::Hash,
                    Some(layout) if layout.keys() == ["hash"] => Layout::Hash,
                    Some(layout) if layout.keys() == ["range"] => {
                        let ids: Vec<PartitionId> = self
                            .client
                            .partition_map()
                            .partitions
                            .keys()
                            .copied()
                            .collect();
                        Layout::Range(
                            layout
                                .get("range")
                                .unwrap()
                                .array()
                                .iter()
                                .map(|split| {
                                    let i = split.get("partition").unwrap().int();
                                    (data(split.get("start").unwrap()), ids[i as usize])
                                })
                                .collect(),
                        )
                    }
                    Some(layout) if layout.keys() == ["eventual"] => {
                        let e = layout.get("eventual").unwrap();
                        let count = |k: &str| e.get(k).map_or(0, |v| v.int() as u32);
                        Layout::Eventual(amulet_smr::EventualLayout {
                            replicas: count("replicas"),
                            vnodes: count("vnodes"),
                            placement: None,
                            merkle: false,
                        })
                    }
                    Some(other) => panic!("unknown layout {other:?}"),
                };
                self.client.create_map_with(&name, layout).await?;
                ok(Json::Null)
            }
            "drop_map" => {
                let name = format!("{}{}", self.prefix, arg("map").str());
                self.client.drop_map(&name).await?;
                ok(Json::Null)
            }
            "eventual_get" | "eventual_put" | "eventual_delete" => {
                let map = self.client.eventual_map(&self.map_name(step))?;
                let key = data(arg("key"));
                let quorum = |k: &str| step.get(k).map_or(0, |v| v.int() as u32);
                let context = match step.get("context") {
                    None => Context::empty(),
                    Some(raw) if raw.get("raw").is_some() => {
                        Context::from_bytes(data(raw.get("raw").unwrap()))
                    }
                    Some(label) => self.contexts[label.str()].clone(),
                };
                let versioned = match op {
                    "eventual_get" => map.get_with(&key, quorum("r")).await?,
                    "eventual_put" => {
                        let value = data(arg("value"));
                        map.put_with(&key, &value, &context, quorum("w")).await?
                    }
                    _ => map.delete_with(&key, &context, quorum("w")).await?,
                };
                if let Some(label) = step.get("save") {
                    self.contexts
                        .insert(label.str().to_string(), versioned.context.clone());
                }
                let mut values = versioned.values;
                values.sort();
                ok(Json::Array(values.iter().map(|v| hex(v)).collect()))
            }
            "get" => ok(value_json(self.map(step)?.get(data(arg("key"))).await?)),
            "contains_key" => ok(Json::Bool(
                self.map(step)?.contains_key(data(arg("key"))).await?,
            )),
            "put" => ok(value_json(
                self.map(step)?
                    .put(data(arg("key")), data(arg("value")))
                    .await?,
            )),
            "remove" => ok(value_json(self.map(step)?.remove(data(arg("key"))).await?)),
            "put_if_absent" => ok(value_json(
                self.map(step)?
                    .put_if_absent(data(arg("key")), data(arg("value")))
                    .await?,
            )),
            "replace" => ok(value_json(
                self.map(step)?
                    .replace(data(arg("key")), data(arg("value")))
                    .await?,
            )),
            "replace_if_equals" => ok(Json::Bool(
                self.map(step)?
                    .compare_and_set(data(arg("key")), data(arg("expected")), data(arg("value")))
                    .await?,
            )),
            "remove_if_equals" => ok(Json::Bool(
                self.map(step)?
                    .remove_if_equals(data(arg("key")), data(arg("expected")))
                    .await?,
            )),
            "put_all" => {
                let entries: Vec<(Bytes, Bytes)> = arg("entries")
                    .array()
                    .iter()
                    .map(|e| {
                        let pair = e.array();
                        assert_eq!(pair.len(), 2, "not an ENTRY: {e:?}");
                        (data(&pair[0]), data(&pair[1]))
                    })
                    .collect();
                self.map(step)?.put_all(entries).await?;
                ok(Json::Null)
            }
            "merge_fields" => {
                let fields: Vec<(Bytes, Option<Bytes>)> = arg("fields")
                    .array()
                    .iter()
                    .map(|f| {
                        let pair = f.array();
                        assert_eq!(pair.len(), 2, "not a [NAME, VALUE or null]: {f:?}");
                        let value = (!matches!(pair[1], Json::Null)).then(|| data(&pair[1]));
                        (data(&pair[0]), value)
                    })
                    .collect();
                ok(Json::Bool(
                    self.map(step)?
                        .merge_fields(data(arg("key")), fields)
                        .await?,
                ))
            }
            "contains_value" => ok(Json::Bool(
                self.map(step)?.contains_value(data(arg("value"))).await?,
            )),
            "leave" => {
                let node = u32::try_from(arg("node").int()).expect("a node id");
                self.client.leave(node).await?;
                ok(Json::Null)
            }
            "join" => {
                let (peer, client) = (arg("peer_address"), arg("client_address"));
                let node = self.client.join(peer.str(), client.str()).await?;
                assert!(node > 0, "a join's id");
                ok(Json::Null)
            }
            "create_log" => {
                self.client
                    .create_log(&format!("{}{}", self.prefix, arg("log").str()))
                    .await?;
                ok(Json::Null)
            }
            "drop_log" => {
                self.client
                    .drop_log(&format!("{}{}", self.prefix, arg("log").str()))
                    .await?;
                ok(Json::Null)
            }
            "append" => ok(Json::from(
                self.log(step)?.append(data(arg("value"))).await?,
            )),
            "multi_append" => {
                let entries: Vec<(String, Bytes)> = arg("entries")
                    .array()
                    .iter()
                    .map(|e| {
                        let pair = e.array();
                        assert_eq!(pair.len(), 2, "not a [LOG, BYTES]: {e:?}");
                        (format!("{}{}", self.prefix, pair[0].str()), data(&pair[1]))
                    })
                    .collect();
                let positions = self.client.multi_append(entries).await?;
                ok(Json::Array(positions.into_iter().map(Json::from).collect()))
            }
            "read_log" => {
                let read = self
                    .log(step)?
                    .read(arg("from").int() as u64, arg("max_entries").int() as u32)
                    .await?;
                ok(serde_json::json!({
                    "from": read.from,
                    "entries": read.entries.iter().map(|e| hex(e)).collect::<Vec<_>>(),
                    "first": read.first,
                    "end": read.end,
                }))
            }
            "tail_log" => {
                let mut tail = self
                    .log(step)?
                    .tail(arg("from").int() as u64, Duration::from_millis(50));
                let mut got = Vec::new();
                for _ in 0..arg("count").int() {
                    let (position, entry) =
                        tokio::time::timeout(Duration::from_secs(10), tail.next())
                            .await
                            .expect("a tail entry within 10 s")?;
                    got.push(serde_json::json!([position, hex(&entry)]));
                }
                ok(Json::Array(got))
            }
            "trim_log" => {
                let b = self.log(step)?.trim(arg("below").int() as u64).await?;
                ok(serde_json::json!({"first": b.first, "end": b.end}))
            }
            "log_bounds" => {
                let b = self.log(step)?.bounds().await?;
                ok(serde_json::json!({"first": b.first, "end": b.end}))
            }
            "size" => ok(Json::from(self.map(step)?.size().await?)),
            "is_empty" => ok(Json::Bool(self.map(step)?.is_empty().await?)),
            "clear" => {
                self.map(step)?.clear().await?;
                ok(Json::Null)
            }
            "first_entry" => ok(self
                .map(step)?
                .first_entry()
                .await?
                .as_ref()
                .map_or(Json::Null, entry_json)),
            "last_entry" => ok(self
                .map(step)?
                .last_entry()
                .await?
                .as_ref()
                .map_or(Json::Null, entry_json)),
            "nearest_entry" => {
                let nearest = match arg("nearest").str() {
                    "floor" => Nearest::Floor,
                    "ceiling" => Nearest::Ceiling,
                    "higher" => Nearest::Higher,
                    "lower" => Nearest::Lower,
                    other => panic!("unknown nearest {other:?}"),
                };
                ok(self
                    .map(step)?
                    .nearest(data(arg("key")), nearest)
                    .await?
                    .as_ref()
                    .map_or(Json::Null, entry_json))
            }
            "range" => {
                let limit = arg("limit").int();
                let reverse = step.get("reverse").is_some_and(Json::bool);
                let (entries, more) = self
                    .map(step)?
                    .range(
                        bound(step.get("from")),
                        bound(step.get("to")),
                        u32::try_from(limit).expect("limit fits u32"),
                        reverse,
                    )
                    .await?;
                ok(serde_json::json!({"entries": entries_json(&entries), "more": more}))
            }
            "snapshot" => {
                let mut snapshot = self.map(step)?.snapshot().await?;
                let mut entries = Vec::new();
                while let Some(entry) = snapshot.next().await? {
                    entries.push(entry);
                }
                snapshot.close().await?;
                ok(entries_json(&entries))
            }
            "snapshot_open" => {
                let name = arg("name").str().to_string();
                assert!(
                    !self.snapshots.contains_key(&name),
                    "snapshot {name:?} opened twice"
                );
                let map = self.map(step)?;
                let snapshot = map.snapshot().await?;
                let placement = Placement {
                    keyspace: Some(map.name().to_string()),
                    keys: Keys::All,
                };
                let partitions = self
                    .client
                    .partition_map()
                    .partitions_for(&placement)
                    .expect("the map is in the client's partition map after opening");
                self.snapshots.insert(
                    name,
                    Held {
                        id: snapshot.id(),
                        snapshot: Some(snapshot),
                        partitions,
                    },
                );
                ok(Json::Null)
            }
            "snapshot_read" => {
                let name = arg("name").str();
                let held = self
                    .snapshots
                    .get(name)
                    .unwrap_or_else(|| panic!("no snapshot named {name:?}"));
                match self.read_snapshot(held.id, &held.partitions).await {
                    Ok(entries) => ok(entries_json(&entries)),
                    Err(status) => Ok(Err(class_of_status(&status))),
                }
            }
            "snapshot_release" => {
                let name = arg("name").str();
                let held = self
                    .snapshots
                    .get_mut(name)
                    .unwrap_or_else(|| panic!("no snapshot named {name:?}"));
                let snapshot = held
                    .snapshot
                    .take()
                    .unwrap_or_else(|| panic!("snapshot {name:?} released twice"));
                snapshot.close().await?;
                ok(Json::Null)
            }
            "txn_get" => {
                let tx = self.txn(step);
                ok(value_json(
                    tx.get(&self.map_name(step), data(arg("key"))).await?,
                ))
            }
            "txn_put" => {
                let tx = self.txn(step);
                tx.put(&self.map_name(step), data(arg("key")), data(arg("value")));
                ok(Json::Null)
            }
            "txn_delete" => {
                let tx = self.txn(step);
                tx.delete(&self.map_name(step), data(arg("key")));
                ok(Json::Null)
            }
            "txn_range" => {
                let tx = self.txn(step);
                let limit = u32::try_from(arg("limit").int()).expect("limit fits u32");
                let reverse = step.get("reverse").is_some_and(Json::bool);
                let (entries, more) = tx
                    .range(
                        &self.map_name(step),
                        bound(step.get("from")),
                        bound(step.get("to")),
                        limit,
                        reverse,
                    )
                    .await?;
                ok(serde_json::json!({"entries": entries_json(&entries), "more": more}))
            }
            "txn_commit" => {
                let tx = self.txn(step);
                tx.commit().await?;
                ok(Json::Null)
            }
            "txn_abandon" => {
                self.txn(step).abandon();
                ok(Json::Null)
            }
            _ => unreachable!("checked above"),
        }
    }

    /// Every entry of snapshot `id`, read again from the start with raw
    /// ReadSnapshot streams (one per partition, from its first replica that
    /// has an address) and merged in key order.
    async fn read_snapshot(
        &self,
        id: u64,
        partitions: &[PartitionId],
    ) -> Result<Vec<(Bytes, Bytes)>, tonic::Status> {
        let map = self.client.partition_map();
        let addresses = self.client.node_addresses();
        let mut all = BTreeMap::new();
        for partition in partitions {
            let address = map.partitions[partition]
                .replicas
                .iter()
                .find_map(|n| addresses.get(n))
                .expect("a replica with an address");
            let read = |p: &std::path::Path| std::fs::read(p).expect("TLS file");
            let tls = tonic::transport::ClientTlsConfig::new()
                .ca_certificate(tonic::transport::Certificate::from_pem(read(&self.tls.ca)))
                .identity(tonic::transport::Identity::from_pem(
                    read(&self.tls.cert),
                    read(&self.tls.key),
                ))
                .domain_name(amulet_tls::NODE_SERVER_NAME);
            let channel = tonic::transport::Endpoint::from_shared(format!("https://{address}"))
                .map_err(|e| tonic::Status::invalid_argument(e.to_string()))?
                .tls_config(tls)
                .map_err(|e| tonic::Status::invalid_argument(e.to_string()))?
                .connect()
                .await
                .map_err(|e| tonic::Status::unavailable(e.to_string()))?;
            let mut raw = AmuletClient::new(channel);
            let mut stream = raw
                .read_snapshot(pb::ReadSnapshotRequest {
                    partition: partition.0,
                    snapshot: id,
                    after: None,
                    page_size: 1000,
                })
                .await?
                .into_inner();
            loop {
                let page = tokio::time::timeout(Duration::from_secs(30), stream.message())
                    .await
                    .map_err(|_| tonic::Status::deadline_exceeded("no page in 30 s"))??
                    .ok_or_else(|| tonic::Status::unavailable("the stream ended early"))?;
                for entry in page.entries {
                    all.insert(entry.key, entry.value);
                }
                if page.last {
                    break;
                }
            }
        }
        Ok(all.into_iter().collect())
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scenarios() {
    // The map scenarios, then the transaction scenarios, on one cluster.
    let mut scenarios = Vec::new();
    for file in [
        "scenarios.json",
        "transactions.json",
        "logs.json",
        "eventual.json",
    ] {
        let path = repo_root().join("spec/conformance").join(file);
        let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("read {file}: {e}"));
        let doc: Json = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{file}: {e}"));
        let those = doc.get("scenarios").expect("scenarios").array();
        assert!(!those.is_empty(), "{file} has scenarios");
        scenarios.extend(those.iter().cloned());
    }

    let cluster = DevCluster::start();
    // `amulet dev` turns TLS on: the conformance scenarios run over it.
    let config = amulet_client::ClientConfig {
        tls: Some(cluster.tls()),
        ..Default::default()
    };
    let client = Client::connect_with(cluster.addresses.clone(), config)
        .await
        .expect("connect to the cluster");
    let run_id = format!(
        "{:08x}",
        (std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos() as u32)
            ^ std::process::id()
    );
    let mut failures = Vec::new();
    for (index, scenario) in scenarios.iter().enumerate() {
        let name = scenario.get("name").expect("name").str();
        let mut runner = Runner {
            client: client.clone(),
            prefix: format!("c{run_id}-{index}-"),
            snapshots: HashMap::new(),
            txns: HashMap::new(),
            contexts: HashMap::new(),
            tls: cluster.tls(),
        };
        for (i, step) in scenario
            .get("steps")
            .expect("steps")
            .array()
            .iter()
            .enumerate()
        {
            let wanted = match (step.get("expect"), step.get("error")) {
                (Some(expect), None) => Outcome::Expect(expect.clone()),
                (None, Some(error)) => Outcome::Error(error.str().to_string()),
                _ => panic!("scenario {name:?} step {i}: exactly one of expect and error"),
            };
            let got = tokio::time::timeout(Duration::from_secs(60), runner.run(step))
                .await
                .unwrap_or_else(|_| Outcome::Error("the step took over 60 s".into()));
            if got != wanted {
                let show = |o: &Outcome| match o {
                    Outcome::Expect(v) => format!("expect {}", v.show(300)),
                    Outcome::Error(e) => format!("error {e}"),
                };
                failures.push(format!(
                    "scenario {name:?} step {i} ({}): wanted {}, got {}",
                    step.get("op").unwrap().str(),
                    show(&wanted),
                    show(&got)
                ));
                break;
            }
        }
        for (_, held) in runner.snapshots.drain() {
            if let Some(snapshot) = held.snapshot {
                let _ = snapshot.close().await;
            }
        }
    }
    client.close().await;
    drop(cluster);
    assert!(
        failures.is_empty(),
        "{} of {} scenarios failed:\n{}",
        failures.len(),
        scenarios.len(),
        failures.join("\n")
    );
}
