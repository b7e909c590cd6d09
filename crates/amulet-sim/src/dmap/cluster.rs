//! The DMap swarm: 1–3 partitions × 3 replicas on the harness (every node
//! the real host core), the global stream, simulated clients issuing every
//! map operation, an operator reconfiguring the partitions, and the
//! linearizability and progress checkers.

use crate::checker::linearizability::Call;
use crate::checker::transactions::TxnHistory;
use crate::dmap::client::{Phase, Send, SimClient};
use crate::dmap::txn_client::TxnClient;
use crate::dmap::workload;
use crate::dmap::{MapOp, Observed};
use crate::harness::{self, Harness, SimMessage, Workload};
use crate::nemesis::{CrashGroup, FaultEvent, Nemesis};
use crate::network::Network;
use crate::rng::Rng;
use crate::runner::SeedOutcome;
use crate::swarm::SwarmOptions;
use crate::violation::{Property, Violation};
use amulet_dmap::{ExecContext, MapCommand, MapLimits, MapName, MapReply, PartitionState};
use amulet_host::{Host, PageAnswer};
use amulet_smr::{ClientReply, ClientRequest, Layout, PartitionInfo, PartitionMap, TrimQuorum};
use amulet_types::{
    NodeId, PartitionId, SessionId, StorageMode, StreamConfig, StreamId, TimeMicros,
};
use bytes::Bytes;
use std::sync::Arc;

mod access;
mod balancer;
pub use balancer::WithoutLoadSplits;
pub(crate) use pinned::new_draws;
pub use pinned::{Draws, PinnedBefore};
mod bugs;
mod joiner;
mod membership;
mod newest;
use newest::{newest_map, newest_membership};
mod flaky;
mod operator;
use operator::Operator;
mod pauses;
mod pinned;
mod report;
mod tailers;
mod transactions;
mod verdict;

pub use bugs::DmapBug;

/// Replicas per partition.
const REPLICAS: u32 = 3;
/// Client addresses start here (nodes are numbered from 1).
const CLIENT_ENDPOINT_BASE: u32 = 1_000;
/// The operator's address (past the clients').
const OPERATOR_ENDPOINT: NodeId = NodeId(CLIENT_ENDPOINT_BASE + 999);
/// Configurations the linearizability search may explore per seed.
const CHECK_STEP_BUDGET: u64 = 20_000_000;
/// The healed phase stops starting operations this long before the end,
/// so the last ones can complete.
const DRAIN_MICROS: u64 = 3_000_000;

/// What the swarm's clients run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ClientKind {
    /// Map operations, checked for linearizability.
    Map,
    /// Map operations with field records among them (puts of records,
    /// `MergeFields`), checked for linearizability (`amulet-sim --fields`).
    Fields,
    /// Map operations with DLog's log commands among them (appends,
    /// multi-appends, reads, trims, bounds), checked for linearizability
    /// (`amulet-sim --logs`).
    Logs,
    /// List-append transactions, checked for strict serializability.
    Transactions,
    /// Map operations sent as a user whose write permission an
    /// administrator grants and revokes while they run (`amulet-sim
    /// --access`, docs/security.md): denied operations are checked as
    /// taking no effect, and every replica must hold the same access
    /// configuration at the same global position.
    Access,
}

/// How a seed checkpoints (drawn per seed).
#[derive(Clone, Copy, Debug)]
struct CheckpointPolicy {
    /// Virtual micros between checkpoints; 0: never (replicas replay
    /// their streams from the start, which must keep working).
    every_micros: u64,
    /// Longest time a checkpoint write takes; a crash meanwhile loses it.
    write_micros_max: u64,
    /// Who must hold a checkpoint before acceptors trim.
    quorum: TrimQuorum,
    /// Bytes per state transfer chunk: small, so a checkpoint of the
    /// swarm's few keys travels in several.
    chunk_bytes: usize,
}

/// Sends reconfigurations (splits, stream replacements, merges, moves)
/// to the cluster at random times, as an administrator would.
/// The swarm's workload: what the nodes run, the clients and the
/// operator, and what the checkers are given.
struct DmapCluster {
    bug: DmapBug,
    verbose: bool,
    configs: Vec<StreamConfig>,
    initial_map: PartitionMap,
    /// The spare node, in seeds that have one: a member of the view
    /// replicating nothing at the start.
    spare: Option<NodeId>,
    /// In half of the seeds with a spare, the spare is not in the first
    /// view and joins (`joiner.rs`).
    joiner: Option<joiner::Joiner>,
    /// The joiner, when it does not run the global stream at the start.
    outsider: Option<NodeId>,
    initial_state: PartitionState,
    storage: StorageMode,
    checkpoints: CheckpointPolicy,
    clients: Vec<SimClient>,
    /// Transactional clients (`ClientKind::Transactions`).
    txn_clients: Vec<TxnClient>,
    txn_history: TxnHistory,
    /// The last list element appended (elements are unique in a run).
    next_value: u64,
    /// The next history process for a client after an unknown outcome.
    next_process: i64,
    client_rng: Rng,
    /// Reconfigures the cluster now and then (in two seeds of three).
    operator: Option<Operator>,
    /// The balancer (docs/dynatree.md): a range partition holding more
    /// than 2 to 4 entries splits by itself (see `balancer_of`).
    balancer: amulet_host::BalancerConfig,
    /// Grants and revokes the clients' permission (`ClientKind::Access`),
    /// and records every replica's access configuration by position.
    access: Option<access::AccessWorkload>,
    /// Records every replica's membership by position (every mode: the
    /// hosts monitor each other as in production).
    membership: membership::MembershipObserver,
    /// The run stops starting operations at this time.
    issue_until: TimeMicros,
    calls: Vec<Call<MapOp, Observed>>,
    /// The logs the run created (`--logs`), empty in the model at start.
    logs: Vec<MapName>,
    /// Followers of the logs (`--logs`).
    tailers: tailers::Tailers,
    violations: Vec<Violation>,
    healed: bool,
    /// No crash and no partition in this seed's faults: the view may
    /// remove only nodes killed for good (`check_no_false_removal`).
    without_crashes_or_partitions: bool,
    /// The node whose links lose a share of messages until the heal.
    flaky: Option<(NodeId, f64)>,
    /// With a verbose seed and `AMULET_SIM_DUMP_MS`: every node's
    /// replicas, merges and streams are printed this often (virtual µs),
    /// to see where a stuck run stopped.
    dump_every_micros: Option<u64>,
    /// Streams created at run time whose acceptors the nemesis budgets
    /// (see [`balancer::budget_runtime_streams`]).
    budgeted_streams: std::collections::BTreeSet<StreamId>,
}

/// Runs one DMap seed with the fault mix it draws.
pub fn run_dmap_seed(seed: u64, verbose: bool, bug: DmapBug) -> SeedOutcome {
    run_kind_seed(seed, verbose, bug, ClientKind::Map)
}

/// Runs one seed of transactions (`amulet-sim --txn`) with the fault mix
/// it draws.
pub fn run_txn_seed(seed: u64, verbose: bool, bug: DmapBug) -> SeedOutcome {
    run_kind_seed(seed, verbose, bug, ClientKind::Transactions)
}

/// Runs one DMap seed whose clients also put field records and merge
/// fields (`amulet-sim --fields`), with the fault mix it draws.
pub fn run_fields_seed(seed: u64, verbose: bool, bug: DmapBug) -> SeedOutcome {
    run_kind_seed(seed, verbose, bug, ClientKind::Fields)
}

/// Runs one DMap seed whose clients run as a user an administrator grants
/// and revokes write permission to (`amulet-sim --access`), with the
/// fault mix it draws.
pub fn run_access_seed(seed: u64, verbose: bool, bug: DmapBug) -> SeedOutcome {
    run_kind_seed(seed, verbose, bug, ClientKind::Access)
}

/// Runs one DMap seed whose clients also use two logs (`amulet-sim
/// --logs`, docs/logs.md), with the fault mix it draws.
pub fn run_logs_seed(seed: u64, verbose: bool, bug: DmapBug) -> SeedOutcome {
    run_kind_seed(seed, verbose, bug, ClientKind::Logs)
}

/// The fault mix a seed draws, with shorter phases than the multicast
/// swarm (every client operation is checked, and the search grows with
/// the history), run with `kind`'s clients.
fn run_kind_seed(seed: u64, verbose: bool, bug: DmapBug, kind: ClientKind) -> SeedOutcome {
    run_dmap_with(seed, dmap_options(seed), bug, verbose, kind)
}

/// The fault mix a DMap seed draws.
fn dmap_options(seed: u64) -> SwarmOptions {
    let mut rng = Rng::new(seed ^ 0x646D_6170);
    let mut options = SwarmOptions::draw(&mut rng);
    options.safety_phase_micros = options.safety_phase_micros.min(4_000_000);
    options.liveness_phase_micros = 6_000_000;
    options
}

/// Runs one DMap seed without crashes or partitions (`amulet-sim --dmap
/// --pauses-only`): its network, pauses, kills for good and joiner as
/// drawn. With no crash or partition, the view must remove no node but
/// those killed for good (Rapid §4.1: pauses shorter than failure
/// detection are not failures).
pub fn run_dmap_pauses_only_seed(seed: u64, verbose: bool, bug: DmapBug) -> SeedOutcome {
    let mut options = dmap_options(seed);
    options.faults = crate::swarm::FaultOptions::none();
    run_dmap_with(seed, options, bug, verbose, ClientKind::Map)
}

/// Runs one DMap seed with the given fault mix and clients.
pub fn run_dmap_with(
    seed: u64,
    options: SwarmOptions,
    bug: DmapBug,
    verbose: bool,
    kind: ClientKind,
) -> SeedOutcome {
    if verbose {
        println!("dmap seed={seed} bug={bug:?} clients={kind:?} options={options:#?}");
    }
    let end = TimeMicros(options.safety_phase_micros + options.liveness_phase_micros);
    let (mut cluster, mut harness) = DmapCluster::new(seed, options, bug, verbose, end, kind);
    harness.run(&mut cluster, end);
    cluster.outcome(&harness)
}

/// The initial partition map and its keyspace layout for `partitions`.
fn initial_map(rng: &mut Rng, partitions: u32) -> (PartitionMap, Layout) {
    let infos = (1..=partitions)
        .map(|p| {
            let first = (p - 1) * REPLICAS + 1;
            (
                PartitionId(p),
                PartitionInfo {
                    stream: StreamId(p + 1),
                    replicas: (first..first + REPLICAS).map(NodeId).collect(),
                },
            )
        })
        .collect();
    let mut map = PartitionMap::uniform(StreamId(1), infos);
    let layout = if rng.chance(0.5) {
        Layout::Hash
    } else {
        // Split the keys a..f evenly.
        let splits: [&[u8]; 3] = [b"", b"c", b"e"];
        let step = if partitions == 2 { 2 } else { 1 };
        Layout::Range(
            (0..partitions)
                .map(|p| {
                    let split = if p == 0 {
                        b"" as &[u8]
                    } else {
                        splits[(p * step).min(2) as usize]
                    };
                    (Bytes::copy_from_slice(split), PartitionId(p + 1))
                })
                .collect(),
        )
    };
    map.create_keyspace(workload::map_name().as_str(), layout.clone())
        .expect("the initial layout is valid");
    (map, layout)
}

impl DmapCluster {
    fn new(
        seed: u64,
        options: SwarmOptions,
        bug: DmapBug,
        verbose: bool,
        end: TimeMicros,
        kind: ClientKind,
    ) -> (DmapCluster, Harness) {
        let mut rng = Rng::new(seed ^ 0x7265_706C);
        let storage = match rng.below(3) {
            0 => StorageMode::Memory,
            1 => StorageMode::AsyncDurable,
            _ => StorageMode::SyncDurable,
        };
        let partitions = rng.range(1, 3) as u32;
        let (mut initial_map, layout) = initial_map(&mut rng, partitions);
        let logs = if kind == ClientKind::Logs {
            workload::log_names()
        } else {
            Vec::new()
        };
        for log in &logs {
            initial_map
                .create_keyspace(log.as_str(), Layout::Hash)
                .expect("the logs' names are free");
        }
        let mut initial_state = PartitionState::new(MapLimits::default());
        initial_state.set_bugs(bug.txn_bugs());
        // Every replica starts from this state: the map and the logs
        // already created.
        let creates = std::iter::once(MapCommand::CreateMap {
            map: workload::map_name(),
            layout,
        })
        .chain(
            logs.iter()
                .map(|log| MapCommand::CreateLog { log: log.clone() }),
        );
        for create in creates {
            let created = initial_state.execute(
                &create,
                &ExecContext {
                    now_micros: 0,
                    snapshot_id: 0,
                    global_position: 0,
                    owns_key: &|_| true,
                    owns: &|_, _| true,
                    user: None,
                },
            );
            assert_eq!(created, MapReply::Done, "{create:?}");
        }
        let mut nodes: Vec<NodeId> = initial_map
            .partitions
            .values()
            .flat_map(|p| p.replicas.iter().copied())
            .collect();
        // A third of the seeds have a spare node: a member of the view
        // that learns the global stream and replicates nothing, as a node
        // that has just joined. The balancer's moves (and self-healing's
        // repairs) give it partitions. A separate generator, so the rest
        // of the seed draws as before.
        let spare = Rng::new(seed ^ 0x7370_6172)
            .chance(1.0 / 3.0)
            .then_some(NodeId(partitions * REPLICAS + 1));
        nodes.extend(spare);
        let joiner = joiner::Joiner::of_seed(seed, spare);
        let outsider = joiner::Joiner::outsider(joiner.as_ref(), seed, kind);
        if verbose {
            if let Some(node) = outsider {
                println!("joiner {node} does not run the global stream at the start");
            }
        }
        let mut configs = vec![StreamConfig {
            stream: initial_map.global_stream,
            acceptors: initial_map.partitions[&PartitionId(1)].replicas.clone(),
            learners: nodes[REPLICAS as usize..]
                .iter()
                .copied()
                .filter(|n| Some(*n) != outsider)
                .collect(),
            storage,
            limits: crate::order::sim_limits(),
            base_position: 0,
        }];
        for info in initial_map.partitions.values() {
            configs.push(StreamConfig {
                stream: info.stream,
                acceptors: info.replicas.clone(),
                learners: Vec::new(),
                storage,
                limits: crate::order::sim_limits(),
                base_position: 0,
            });
        }
        if verbose {
            println!(
                "storage={storage:?} partitions={partitions} nodes={nodes:?} balancer={:?} map={initial_map:#?}",
                balancer::balancer_of(seed, kind)
            );
        }
        let slots = harness::slots(&nodes, storage, seed);
        let nemesis_config =
            harness::nemesis_config(&nodes, nodes.iter().copied(), &configs, storage);
        let safety_end = TimeMicros(options.safety_phase_micros);
        let mut nemesis = Nemesis::new(
            nemesis_config,
            options.faults.clone(),
            safety_end,
            rng.fork(),
        );
        // A quarter of the seeds kill a node for good (issue 22): the
        // monitors must remove it and self-healing re-home what it held,
        // with every checker running. A separate generator, so the rest
        // of the seed draws as before.
        let mut kill_rng = Rng::new(seed ^ 0x6B69_6C6C);
        if kill_rng.chance(0.25) && safety_end.0 > 3_000_000 && pinned::new_draws() {
            nemesis.kill_for_good_at(TimeMicros(
                kill_rng.range(1_000_000, safety_end.0 - 2_000_000),
            ));
        }
        let pauses = pauses::draw_pauses(seed, &nodes, safety_end);
        let flaky = flaky::draw_flaky(seed, &nodes);
        let without_crashes_or_partitions = !options.faults.crashes_or_partitions();
        let network = Network::new(options.network.clone(), rng.fork());
        let client_count = rng.range(2, 4) as u32;
        let churn = rng.chance(0.5);
        let txn_clients: Vec<TxnClient> = match kind {
            ClientKind::Map | ClientKind::Fields | ClientKind::Logs | ClientKind::Access => {
                Vec::new()
            }
            // More clients than the map mode: real-time order between
            // transactions of different clients is what strictness is
            // about.
            ClientKind::Transactions => (0..client_count + 2)
                .map(|c| {
                    let mut client = TxnClient::new(
                        NodeId(CLIENT_ENDPOINT_BASE + c),
                        SessionId(u64::from(c) + 1),
                        initial_map.clone(),
                        i64::from(c),
                    );
                    client.reuse_read_versions = bug == DmapBug::ReuseReadVersions;
                    client
                })
                .collect(),
        };
        let client_count = if kind != ClientKind::Transactions {
            client_count
        } else {
            0
        };
        let clients = (0..client_count)
            .map(|c| {
                let mut client = SimClient::new(
                    NodeId(CLIENT_ENDPOINT_BASE + c),
                    SessionId(u64::from(c) + 1),
                    initial_map.clone(),
                );
                client.churns_maps = churn && c == 0;
                client.keeps_stale_ranges = bug == DmapBug::ClientKeepsStaleRanges;
                client.merges_fields = kind == ClientKind::Fields;
                client.appends_logs = kind == ClientKind::Logs;
                if kind == ClientKind::Access {
                    client.principal = Some(access::user());
                }
                client
            })
            .collect();
        // A separate generator, so the rest of the seed draws as before.
        let mut checkpoint_rng = Rng::new(seed ^ 0x636B_7074);
        let checkpoints = CheckpointPolicy {
            every_micros: if checkpoint_rng.chance(0.25) {
                0
            } else {
                checkpoint_rng.range(50_000, 1_000_000)
            },
            write_micros_max: checkpoint_rng.range(0, 30_000),
            quorum: if checkpoint_rng.chance(0.5) {
                TrimQuorum::All
            } else {
                TrimQuorum::Majority
            },
            chunk_bytes: checkpoint_rng.range(64, 256) as usize,
        };
        if verbose {
            println!("checkpoints={checkpoints:?}");
        }
        // A separate generator, so the rest of the seed draws as before.
        let mut operator_rng = Rng::new(seed ^ 0x6F70_6572);
        let operator = Operator::of_seed(seed, kind, &mut operator_rng, partitions);
        let client_rng = rng.fork();
        let disk_rng = rng.fork();
        let harness = Harness::new(
            verbose,
            network,
            nemesis,
            slots,
            disk_rng,
            checkpoint_rng.fork(),
            checkpoints.write_micros_max,
        );
        let mut cluster = DmapCluster {
            bug,
            verbose,
            configs,
            initial_map,
            spare,
            joiner,
            outsider,
            initial_state,
            storage,
            checkpoints,
            clients,
            next_process: txn_clients.len() as i64,
            txn_clients,
            txn_history: TxnHistory::default(),
            next_value: 0,
            client_rng,
            operator,
            balancer: balancer::balancer_of(seed, kind),
            access: (kind == ClientKind::Access).then(|| access::AccessWorkload::new(seed)),
            membership: Default::default(),
            issue_until: TimeMicros(end.0 - DRAIN_MICROS),
            calls: Vec::new(),
            tailers: tailers::Tailers::new(&logs, seed),
            logs,
            violations: Vec::new(),
            healed: false,
            without_crashes_or_partitions,
            flaky,
            dump_every_micros: verbose
                .then(|| std::env::var("AMULET_SIM_DUMP_MS").ok())
                .flatten()
                .and_then(|ms| ms.parse::<u64>().ok())
                .filter(|ms| *ms > 0)
                .map(|ms| ms * 1_000),
            budgeted_streams: std::collections::BTreeSet::new(),
        };
        let mut harness = harness;
        for pause in pauses {
            harness.pause_at(pause);
        }
        if let Some((node, share)) = flaky {
            harness.network.set_flaky(node, share);
        }
        for c in 0..cluster.clients.len() {
            let send = cluster.clients[c].start(0, &mut cluster.client_rng);
            cluster.send_request(&mut harness, c, send);
        }
        for c in 0..cluster.txn_clients.len() {
            let send = cluster.txn_clients[c].start(0, &mut cluster.client_rng);
            let from = cluster.txn_clients[c].endpoint;
            harness.request(from, send.to, send.tag, send.partition, send.request);
        }
        (cluster, harness)
    }

    fn send_request(&mut self, harness: &mut Harness, client: usize, send: Send) {
        let from = self.clients[client].endpoint;
        harness.request(from, send.to, send.tag, send.partition, send.request);
    }

    fn client_reply(
        &mut self,
        harness: &mut Harness,
        client: usize,
        tag: u64,
        reply: ClientReply<MapReply>,
    ) {
        let result = self.clients[client].on_reply(
            harness.now.0,
            tag,
            reply,
            self.healed,
            &mut self.client_rng,
            &mut self.calls,
        );
        match result {
            Ok(Some(send)) => self.send_request(harness, client, send),
            Ok(None) => {}
            Err(message) => self.violations.push(Violation::new(
                Property::Linearizability,
                format!("client {client}: {message}"),
            )),
        }
    }

    /// A client reading a snapshot takes every partition's pages from a
    /// live replica that executed the snapshot's opening, through the
    /// host's page reads (what the node's `ReadSnapshot` serves).
    /// Snapshots never change, so the pages are read directly (no
    /// ordering, no network).
    fn read_snapshot(&mut self, harness: &mut Harness, client: usize) {
        let Phase::Reading {
            call,
            snapshot,
            opened_at,
            partitions,
        } = self.clients[client].phase.clone()
        else {
            return;
        };
        let mut entries = Vec::new();
        for partition in partitions {
            let mut held_somewhere = false;
            let mut read = None;
            for (_, host) in harness.hosts() {
                match host.snapshot_page(partition, snapshot, None, 2) {
                    PageAnswer::Page(_) => {
                        read = Some(host);
                        break;
                    }
                    PageAnswer::NotAReplica | PageAnswer::HeldElsewhere => {}
                    PageAnswer::Behind | PageAnswer::CatchingUp => held_somewhere = true,
                    PageAnswer::Failed(error) => {
                        self.violations.push(Violation::new(
                            Property::Linearizability,
                            format!("snapshot {snapshot} unreadable at {partition}: {error}"),
                        ));
                        self.clients[client].phase = Phase::Thinking { until: u64::MAX };
                        return;
                    }
                }
            }
            let Some(host) = read else {
                if !held_somewhere {
                    // Every replica of the partition restored from a
                    // checkpoint taken after the opening: nobody holds
                    // the pages.
                    let now = harness.now.0;
                    self.clients[client].abandon_scan(now, &mut self.client_rng);
                }
                return; // try again next tick
            };
            let mut after: Option<Bytes> = None;
            loop {
                match host.snapshot_page(partition, snapshot, after.as_deref(), 2) {
                    PageAnswer::Page(page) => {
                        after = page.entries.last().map(|(k, _)| k.clone());
                        entries.extend(page.entries);
                        if !page.more {
                            break;
                        }
                    }
                    other => {
                        self.violations.push(Violation::new(
                            Property::Linearizability,
                            format!(
                                "snapshot {snapshot} at {partition} stopped serving: {other:?}"
                            ),
                        ));
                        self.clients[client].phase = Phase::Thinking { until: u64::MAX };
                        return;
                    }
                }
            }
        }
        entries.sort_by(|a, b| a.0.cmp(&b.0));
        let now = harness.now.0;
        let healed = self.healed;
        self.clients[client].scanned(
            now,
            healed,
            &mut self.client_rng,
            &mut self.calls[call],
            entries,
            opened_at,
        );
        // Release it; release is idempotent, so no session is needed.
        let version = self.clients[client].map.version;
        let to = self.initial_map.partitions[&PartitionId(1)].replicas[0];
        let request = ClientRequest {
            map_version: version,
            session: None,
            body: amulet_smr::Body::App(MapCommand::ReleaseSnapshot { snapshot }),
            principal: None,
        };
        let from = self.clients[client].endpoint;
        harness.request(from, to, 0, None, request);
    }
}

impl Workload for DmapCluster {
    fn start(&mut self, harness: &mut Harness, node: NodeId) -> Host<PartitionState> {
        let checkpoints = harness.checkpoints(node);
        let now = harness.now;
        // Every node of the swarm in the first view, as `amulet init`
        // and `amulet dev` configure it ([peers]), but a joiner: its
        // `Join` gives it the view's next id, its own (the greatest).
        let joiner = self.joiner.as_ref().map(|j| j.node);
        let members = harness
            .slots
            .keys()
            .filter(|n| Some(**n) != joiner)
            .map(|n| (*n, joiner::Joiner::address(*n)))
            .collect();
        let first_view = amulet_membership::View::from_members(&members);
        if let Some(joiner) = joiner {
            assert_eq!(first_view.next_id(), joiner, "a joiner takes the next id");
        }
        let slot = harness.slots.get_mut(&node).expect("known node");
        let configs = harness::member_configs(&self.configs, node);
        let logs = slot.storage.open_all(&configs);
        let state = self.initial_state.clone();
        let mut config =
            harness::host_config(node, slot.incarnation, Arc::new(move || state.clone()));
        config.checkpoint_every_micros = self.checkpoints.every_micros;
        config.transfer_chunk_bytes = self.checkpoints.chunk_bytes;
        config.trim_quorum = self.checkpoints.quorum;
        config.report_deliveries = false;
        config.replica_bugs = self.bug.replica_bugs();
        config.fence_keys = self.bug != DmapBug::WholeMapVersions;
        config.balancer = self.balancer;
        config.bugs = self.bug.host_bugs();
        config.membership = Some(first_view);
        // Faster than production (removal within 5 s), so that the
        // nemesis's crashes and partitions of a second or two make view
        // changes in a run of twenty virtual seconds.
        config.monitor = amulet_membership::MonitorConfig {
            probe_interval_micros: 50_000,
            failure_after_micros: if self.bug == DmapBug::HastyFailureDetector {
                // Injected: below the pauses the cluster must ride out.
                150_000
            } else {
                800_000
            },
            reinforce_after_micros: 300_000,
            settle_micros: 100_000,
            resend_after_micros: 300_000,
        };
        if self.verbose {
            println!(
                "t={}us node {node} starts from checkpoints of {:?}",
                now.0,
                checkpoints.keys().collect::<Vec<_>>()
            );
        }
        Host::start(
            config,
            logs,
            Some(self.initial_map.clone()),
            checkpoints,
            &mut slot.storage,
            now,
        )
        .unwrap_or_else(|e| panic!("node {node} does not start: {e}"))
    }

    fn tick(&mut self, harness: &mut Harness) {
        let now = harness.now;
        if let Some(every) = self.dump_every_micros {
            if now.0.is_multiple_of(every) {
                println!("t={}us state:", now.0);
                for (c, client) in self.clients.iter().enumerate() {
                    println!("  client {c}: {:?}", client.phase);
                }
                for (c, client) in self.txn_clients.iter().enumerate() {
                    println!("  transactional client {c}: {:?}", client.phase);
                }
                Self::print_nodes(harness);
            }
        }
        balancer::budget_runtime_streams(harness, &mut self.budgeted_streams);
        let issuing = now < self.issue_until;
        if issuing && self.operator.as_ref().is_some_and(|o| now >= o.next) {
            self.reconfigure(harness);
        }
        if issuing {
            self.ask_to_join(harness);
        }
        if let Some(access) = self.access.as_mut() {
            if issuing {
                access.change(harness, self.verbose);
            }
            access.observe(harness, &mut self.violations);
        }
        self.membership.observe(harness, &mut self.violations);
        for c in 0..self.clients.len() {
            self.read_snapshot(harness, c);
            let send = self.clients[c].tick(now.0, issuing, &mut self.client_rng, &mut self.calls);
            if let Some(send) = send {
                self.send_request(harness, c, send);
            }
        }
        for c in 0..self.txn_clients.len() {
            self.tick_txn_client(harness, c, issuing);
        }
        self.tick_tailers(harness);
    }

    fn at_endpoint(
        &mut self,
        harness: &mut Harness,
        _from: NodeId,
        to: NodeId,
        message: SimMessage,
    ) {
        let client = (to.0 - CLIENT_ENDPOINT_BASE) as usize;
        match message {
            SimMessage::Reply { tag, reply } if client < self.clients.len() => {
                self.client_reply(harness, client, tag, reply);
            }
            SimMessage::Reply { tag, reply } if client < self.txn_clients.len() => {
                self.txn_reply(harness, client, tag, reply);
            }
            SimMessage::Reply { reply, .. } if self.verbose => {
                println!("t={}us operator: {reply:?}", harness.now.0);
            }
            _ => {}
        }
    }

    fn fault(&mut self, _now: TimeMicros, event: &FaultEvent) {
        if matches!(event, FaultEvent::Heal) {
            self.healed = true;
        }
    }
}
