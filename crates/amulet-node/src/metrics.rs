//! Prometheus metrics of a node, served as `GET /metrics` on its client
//! API port: client requests by operation and outcome with their latency
//! (counted as they finish), and the node's stream and replica state
//! (read from the event loop at each scrape).

use crate::node_handle::NodeStats;
use amulet_api::pb;
use prometheus_client::encoding::text::encode;
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{exponential_buckets, Histogram};
use prometheus_client::registry::Registry;
use std::sync::atomic::AtomicU64;
use std::sync::Mutex;
use std::time::Duration;

type G = Gauge<u64, AtomicU64>;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RequestLabels {
    op: &'static str,
    outcome: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct OpLabels {
    op: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct StreamLabels {
    stream: u32,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct PartitionLabels {
    partition: u32,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct LogLabels {
    log: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ReasonLabels {
    reason: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct StateLabels {
    partition: u32,
    name: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct EventualLabels {
    map: String,
    replica: u64,
    name: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct NameLabels {
    name: &'static str,
}

/// The node's metrics.
pub(crate) struct Metrics {
    registry: Mutex<Registry>,
    requests: Family<RequestLabels, Counter>,
    latency: Family<OpLabels, Histogram>,
    decided_below: Family<StreamLabels, G>,
    learner_lag: Family<StreamLabels, G>,
    instances_proposed: Family<StreamLabels, G>,
    skips_proposed: Family<StreamLabels, G>,
    values_delivered: Family<StreamLabels, G>,
    trimmed_below: Family<StreamLabels, G>,
    coordinator: Family<StreamLabels, G>,
    global_position: Family<PartitionLabels, G>,
    queued: Family<PartitionLabels, G>,
    sessions: Family<PartitionLabels, G>,
    checkpoint_position: Family<PartitionLabels, G>,
    checkpoints_written: Family<PartitionLabels, G>,
    checkpoint_failures: Family<PartitionLabels, G>,
    checkpoint_bytes: Family<PartitionLabels, G>,
    waiting: Family<PartitionLabels, G>,
    state: Family<StateLabels, G>,
    delivered: G,
    map_version: G,
    log_first: Family<LogLabels, G>,
    log_end: Family<LogLabels, G>,
    log_bytes: Family<LogLabels, G>,
    tails_open: Gauge,
    log_segments: Family<NameLabels, G>,
    tail_entries: Family<LogLabels, Counter>,
    eventual: Family<EventualLabels, G>,
    membership: Family<NameLabels, G>,
    balancer: Family<NameLabels, G>,
    auth_refused: Family<ReasonLabels, Counter>,
    limited: Family<ReasonLabels, Counter>,
    access_version: G,
    access_users: G,
    access_tokens: G,
}

impl Metrics {
    pub(crate) fn new() -> Metrics {
        let mut registry = Registry::with_prefix("amulet");
        let requests = Family::<RequestLabels, Counter>::default();
        registry.register(
            "requests",
            "Client requests answered, by operation and outcome (ok or the gRPC status code)",
            requests.clone(),
        );
        let latency = Family::<OpLabels, Histogram>::new_with_constructor(|| {
            // 50 µs .. ~52 s.
            Histogram::new(exponential_buckets(0.000_05, 2.0, 21))
        });
        registry.register(
            "request_duration_seconds",
            "Time from receiving a client request to answering it (ordering, execution and signals included)",
            latency.clone(),
        );
        let mut gauge = |name: &str, help: &str| {
            let family = Family::<StreamLabels, G>::default();
            registry.register(name, help, family.clone());
            family
        };
        let decided_below = gauge(
            "stream_decided_below",
            "Every instance below this was decided and delivered here",
        );
        let learner_lag = gauge(
            "stream_learner_lag",
            "Instances known decided elsewhere and not yet delivered here (a restarted node catching up; its replicas send clients elsewhere above 2048)",
        );
        let instances_proposed = gauge(
            "stream_instances_proposed",
            "Instances this node proposed as coordinator (cumulative)",
        );
        let skips_proposed = gauge(
            "stream_skips_proposed",
            "Skip weight this node proposed as coordinator (cumulative)",
        );
        let values_delivered = gauge(
            "stream_values_delivered",
            "Values the stream delivered here (cumulative)",
        );
        let trimmed_below = gauge(
            "stream_trimmed_below",
            "This node's acceptor log holds nothing below this instance",
        );
        let coordinator = gauge(
            "stream_coordinator",
            "1 if this node coordinates the stream",
        );
        let mut partition_gauge = |name: &str, help: &str| {
            let family = Family::<PartitionLabels, G>::default();
            registry.register(name, help, family.clone());
            family
        };
        let global_position = partition_gauge(
            "replica_global_position",
            "Global-stream commands the replica executed",
        );
        let queued = partition_gauge(
            "replica_queued",
            "Commands waiting at the replica for signals or their turn",
        );
        let sessions = partition_gauge("replica_sessions", "Open client sessions at the replica");
        let checkpoint_position = partition_gauge(
            "replica_checkpoint_global_position",
            "Global position of the replica's last checkpoint written or restored",
        );
        let checkpoints_written = partition_gauge(
            "replica_checkpoints_written",
            "Checkpoints the replica wrote since the node started (cumulative)",
        );
        let checkpoint_failures = partition_gauge(
            "replica_checkpoint_failures",
            "Checkpoint writes that failed since the node started (cumulative)",
        );
        let checkpoint_bytes = partition_gauge(
            "replica_checkpoint_bytes",
            "Size of the replica's last checkpoint written",
        );
        let waiting = partition_gauge(
            "replica_waiting",
            "1 while the replica waits for a multi-partition command's signals (a commit's votes)",
        );
        let state = Family::<StateLabels, G>::default();
        registry.register(
            "replica_state",
            "Sizes of the replica's state by name: entries of its maps and the bytes of their keys and values (entries, payload_bytes; the balancer's split_entries and split_bytes bound them per map), open snapshots, open read versions, keys in the index of recent writes, begins executed without all their signals (unsignalled_commands) and the replies held behind them (held_replies), entries and bytes held in the partition's logs (log_entries, log_bytes), and requests routed by a client's older map that the replica took by fence keys (fence_key_taken_requests) or refused as stale (stale_map_refused_requests), counted since it started; with splits by load, commands per second over the balancer's last load window (ops_per_second)",
            state.clone(),
        );
        let delivered = G::default();
        registry.register(
            "delivered_values",
            "Values delivered by the merge (cumulative)",
            delivered.clone(),
        );
        let map_version = G::default();
        registry.register(
            "partition_map_version",
            "Version of the partition map",
            map_version.clone(),
        );
        let log_gauge = |registry: &mut Registry, name: &str, help: &str| {
            let family = Family::<LogLabels, G>::default();
            registry.register(name, help, family.clone());
            family
        };
        let log_first = log_gauge(
            &mut registry,
            "log_first_position",
            "A log's first position held (entries below were trimmed), by log, at the replica of its partition on this node",
        );
        let log_end = log_gauge(
            &mut registry,
            "log_end_position",
            "A log's end (the position of its next append; its rate is appends per second), by log",
        );
        let log_bytes = log_gauge(
            &mut registry,
            "log_bytes",
            "Bytes of a log's entries held, by log",
        );
        let auth_refused = Family::<ReasonLabels, Counter>::default();
        registry.register(
            "auth_refused",
            "Client requests refused UNAUTHENTICATED by this node, by reason (node-certificate, no-identity, no-credential, bad-token); never a secret",
            auth_refused.clone(),
        );
        let limited = Family::<ReasonLabels, Counter>::default();
        registry.register(
            "client_limited",
            "Client requests refused RESOURCE_EXHAUSTED by a per-client limit, by limit (connections, in-flight)",
            limited.clone(),
        );
        let access_version = G::default();
        registry.register(
            "access_version",
            "Access changes executed (the access configuration's version, docs/security.md)",
            access_version.clone(),
        );
        let access_users = G::default();
        registry.register(
            "access_users",
            "Users holding a role in the access configuration",
            access_users.clone(),
        );
        let access_tokens = G::default();
        registry.register(
            "access_tokens",
            "Bearer tokens in the access configuration (unrevoked, not yet forgotten)",
            access_tokens.clone(),
        );
        let log_segments = Family::<NameLabels, G>::default();
        registry.register(
            "log_segments",
            "This node's log segment files (docs/logs.md \"Segment files\"), by figure: files in place, bytes of the entries in them, removed since start (no checkpoint referred to them any more: trimmed or moved away)",
            log_segments.clone(),
        );
        let tails_open = Gauge::default();
        registry.register(
            "log_tails_open",
            "TailLog streams this node is serving",
            tails_open.clone(),
        );
        let tail_entries = Family::<LogLabels, Counter>::default();
        registry.register(
            "log_tail_entries_sent",
            "Entries this node's TailLog streams delivered, by log",
            tail_entries.clone(),
        );
        let eventual = Family::<EventualLabels, G>::default();
        registry.register(
            "eventual_replica",
            "Eventual maps' replicas here, by map, replica id and figure: keys stored, clock_bitmap_bits, dot_keys (dot-key map entries), non_stripped_keys, watermark_lag (own dots the least caught-up peer has not acknowledged), coordinated writes, anti-entropy sync_bytes_sent/received",
            eventual.clone(),
        );
        let membership = Family::<NameLabels, G>::default();
        registry.register(
            "membership",
            "Membership (docs/membership.md) as this node executed it, by figure: view (its number), members, removed (ids removed for good), unstable and stable subjects, view_changes remembered; and this node's monitor: probes_sent, probes_answered, alerts_proposed, cuts_proposed, proposals_failed, repairs_proposed (self-healing moves), maps_sent (to a peer whose probe or reply carried an older map version), maps_learned (from a peer, by this node while it runs no replica), views_sent and views_learned (the same for views: how a node without replicas, or one the view removed that came back, learns the current view), rehoming_partitions (partitions with a replica on a removed or leaving node: self-healing's work left)",
            membership.clone(),
        );
        let balancer = Family::<NameLabels, G>::default();
        registry.register(
            "balancer",
            "The balancer (docs/dynatree.md), by figure: splits_proposed (load_splits_proposed of them because the partition was hot, not large; tail_splits_proposed of them at the map's tail written in key order), merges_proposed and moves_proposed (weight_moves_proposed of them to even out the nodes' bytes and load, not their partition counts) by this node since it started, partitions in the newest map it holds, enabled (1: proposing; 0: paused by `amulet balancer pause` or the file)",
            balancer.clone(),
        );
        Metrics {
            registry: Mutex::new(registry),
            requests,
            latency,
            decided_below,
            learner_lag,
            instances_proposed,
            skips_proposed,
            values_delivered,
            trimmed_below,
            coordinator,
            global_position,
            queued,
            sessions,
            checkpoint_position,
            checkpoints_written,
            checkpoint_failures,
            checkpoint_bytes,
            waiting,
            state,
            delivered,
            map_version,
            log_first,
            log_end,
            log_bytes,
            tails_open,
            log_segments,
            tail_entries,
            eventual,
            membership,
            balancer,
            auth_refused,
            limited,
            access_version,
            access_users,
            access_tokens,
        }
    }

    /// A request refused UNAUTHENTICATED, by reason.
    pub(crate) fn auth_refused(&self, reason: &'static str) {
        self.auth_refused
            .get_or_create(&ReasonLabels { reason })
            .inc();
    }

    /// A request refused by a per-client limit.
    pub(crate) fn limited(&self, reason: &'static str) {
        self.limited.get_or_create(&ReasonLabels { reason }).inc();
    }

    /// The access configuration's size, for the next render.
    pub(crate) fn set_access(&self, access: &amulet_smr::AccessControl) {
        self.access_version.set(access.version());
        self.access_users.set(access.users().len() as u64);
        self.access_tokens.set(access.tokens().count() as u64);
    }

    /// A tail stream opened (+1) or ended (-1).
    pub(crate) fn tail_opened(&self, delta: i64) {
        self.tails_open.inc_by(delta);
    }

    /// A tail delivered `entries` entries of `log`.
    pub(crate) fn tail_sent(&self, log: &str, entries: usize) {
        if entries > 0 {
            self.tail_entries
                .get_or_create(&LogLabels {
                    log: log.to_string(),
                })
                .inc_by(entries as u64);
        }
    }

    /// Counts one answered request.
    pub(crate) fn request(
        &self,
        op: &'static str,
        outcome: &Result<(), tonic::Code>,
        took: Duration,
    ) {
        let outcome = match outcome {
            Ok(()) => "ok".to_string(),
            Err(code) => format!("{code:?}"),
        };
        self.requests
            .get_or_create(&RequestLabels { op, outcome })
            .inc();
        self.latency
            .get_or_create(&OpLabels { op })
            .observe(took.as_secs_f64());
    }

    /// The text exposition, with the node's state as of `stats`.
    pub(crate) fn render(&self, stats: Option<&NodeStats>) -> String {
        if let Some(stats) = stats {
            self.delivered.set(stats.delivered.count);
            self.map_version.set(stats.map_version);
            for s in &stats.streams {
                let l = StreamLabels { stream: s.stream };
                self.decided_below.get_or_create(&l).set(s.decided_below);
                self.learner_lag.get_or_create(&l).set(s.learner_lag);
                self.instances_proposed
                    .get_or_create(&l)
                    .set(s.instances_proposed);
                self.skips_proposed.get_or_create(&l).set(s.skips_proposed);
                self.values_delivered
                    .get_or_create(&l)
                    .set(s.values_delivered);
                self.trimmed_below.get_or_create(&l).set(s.trimmed_below);
                self.coordinator
                    .get_or_create(&l)
                    .set(u64::from(s.coordinator));
            }
            for r in &stats.replicas {
                let l = PartitionLabels {
                    partition: r.partition,
                };
                self.global_position
                    .get_or_create(&l)
                    .set(r.global_position);
                self.queued.get_or_create(&l).set(r.queued);
                self.sessions.get_or_create(&l).set(r.sessions);
                let c = &r.checkpoint;
                self.checkpoint_position
                    .get_or_create(&l)
                    .set(c.global_position);
                self.checkpoints_written.get_or_create(&l).set(c.written);
                self.checkpoint_failures.get_or_create(&l).set(c.failed);
                self.checkpoint_bytes.get_or_create(&l).set(c.bytes);
                self.waiting.get_or_create(&l).set(u64::from(r.waiting));
                for (name, value) in &r.state {
                    let labels = StateLabels {
                        partition: r.partition,
                        name,
                    };
                    self.state.get_or_create(&labels).set(*value);
                }
            }
            // Dropped maps' replicas leave the gauges.
            self.eventual.clear();
            for e in &stats.eventual {
                for (name, value) in [
                    ("keys", e.keys),
                    ("clock_bitmap_bits", e.clock_bitmap_bits),
                    ("dot_keys", e.dot_keys),
                    ("non_stripped_keys", e.non_stripped),
                    ("watermark_lag", e.watermark_lag),
                    ("coordinated", e.coordinated),
                    ("sync_bytes_sent", e.sync_bytes_sent),
                    ("sync_bytes_received", e.sync_bytes_received),
                    ("tombstones", e.tombstones),
                    ("metadata_bytes", e.metadata_bytes),
                ] {
                    let labels = EventualLabels {
                        map: e.map.clone(),
                        replica: e.replica.0,
                        name,
                    };
                    self.eventual.get_or_create(&labels).set(value);
                }
            }
            let counters = &stats.membership_counters;
            let mut figures = vec![
                ("probes_sent", counters.probes_sent),
                ("probes_answered", counters.probes_answered),
                ("alerts_proposed", counters.alerts_proposed),
                ("cuts_proposed", counters.cuts_proposed),
                ("proposals_failed", counters.proposals_failed),
                ("repairs_proposed", counters.repairs_proposed),
                ("maps_sent", counters.maps_sent),
                ("maps_learned", counters.maps_learned),
                ("views_sent", counters.views_sent),
                ("views_learned", counters.views_learned),
                ("rehoming_partitions", stats.rehoming),
            ];
            if let Some(membership) = &stats.membership {
                let evaluation = membership.evaluate();
                figures.extend([
                    ("view", membership.view().id().0),
                    ("members", membership.view().members().len() as u64),
                    ("removed", membership.view().removed().len() as u64),
                    ("unstable", evaluation.unstable.len() as u64),
                    ("stable", evaluation.stable.len() as u64),
                    ("view_changes", membership.history().len() as u64),
                ]);
            }
            for (name, value) in figures {
                self.membership
                    .get_or_create(&NameLabels { name })
                    .set(value);
            }
            for (name, value) in [
                ("splits_proposed", stats.splits_proposed),
                ("load_splits_proposed", stats.load_splits_proposed),
                ("tail_splits_proposed", stats.tail_splits_proposed),
                ("merges_proposed", stats.merges_proposed),
                ("moves_proposed", stats.moves_proposed),
                ("weight_moves_proposed", stats.weight_moves_proposed),
                ("partitions", stats.partitions),
                ("enabled", u64::from(stats.balancer_enabled)),
            ] {
                self.balancer.get_or_create(&NameLabels { name }).set(value);
            }
            for (name, value) in [
                ("files", stats.log_segments.files),
                ("bytes", stats.log_segments.bytes),
                ("removed", stats.log_segments.removed),
            ] {
                self.log_segments
                    .get_or_create(&NameLabels { name })
                    .set(value);
            }
            // Dropped and moved-away logs leave the gauges.
            self.log_first.clear();
            self.log_end.clear();
            self.log_bytes.clear();
            for log in &stats.logs {
                let l = LogLabels {
                    log: log.log.clone(),
                };
                self.log_first.get_or_create(&l).set(log.first);
                self.log_end.get_or_create(&l).set(log.end);
                self.log_bytes.get_or_create(&l).set(log.bytes);
            }
        }
        let mut out = String::new();
        let registry = self.registry.lock().expect("metrics lock");
        encode(&mut out, &registry).expect("encoding to a string cannot fail");
        out
    }
}

/// The metric label of a map operation.
pub(crate) fn op_name(op: &Option<pb::map_request::Op>) -> &'static str {
    use pb::map_request::Op::*;
    match op {
        None => "none",
        Some(CreateMap(_)) => "create_map",
        Some(DropMap(_)) => "drop_map",
        Some(Get(_)) => "get",
        Some(ContainsKey(_)) => "contains_key",
        Some(Put(_)) => "put",
        Some(Remove(_)) => "remove",
        Some(PutIfAbsent(_)) => "put_if_absent",
        Some(Replace(_)) => "replace",
        Some(ReplaceIfEquals(_)) => "replace_if_equals",
        Some(RemoveIfEquals(_)) => "remove_if_equals",
        Some(PutAll(_)) => "put_all",
        Some(ContainsValue(_)) => "contains_value",
        Some(Size(_)) => "size",
        Some(IsEmpty(_)) => "is_empty",
        Some(Clear(_)) => "clear",
        Some(FirstEntry(_)) => "first_entry",
        Some(LastEntry(_)) => "last_entry",
        Some(NearestEntry(_)) => "nearest_entry",
        Some(Range(_)) => "range",
        Some(OpenSnapshot(_)) => "open_snapshot",
        Some(ReleaseSnapshot(_)) => "release_snapshot",
        Some(BeginTransaction(_)) => "begin_transaction",
        Some(EndTransaction(_)) => "end_transaction",
        Some(Commit(_)) => "commit",
        Some(MergeFields(_)) => "merge_fields",
        Some(CreateLog(_)) => "create_log",
        Some(DropLog(_)) => "drop_log",
        Some(Append(_)) => "append",
        Some(MultiAppend(_)) => "multi_append",
        Some(ReadLog(_)) => "read_log",
        Some(TrimLog(_)) => "trim_log",
        Some(LogBounds(_)) => "log_bounds",
    }
}
