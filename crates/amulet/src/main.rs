//! `amulet`: start a local cluster (`amulet dev`), run one node
//! (`amulet node`), and use a cluster (`amulet get/put/del/scan/...`).

mod access_command;
mod balancer_command;
mod bench_inserts;
mod bench_scan;
mod bulk_load_command;
mod cert_command;
mod client_commands;
mod dev;
mod eventual_command;
mod init_command;
mod join_command;
mod log_command;
mod membership_command;
mod node_command;
mod order_demo;
mod reconfigure_command;
mod txn_command;

// The node keeps many 32 KiB values alive for a while (memory ring,
// pipelines) and frees them in another order; glibc malloc returned and
// re-faulted those pages (clear_page was 4% of a node's CPU).
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

use clap::{Parser, Subcommand};

#[derive(Parser)]
#[command(
    name = "amulet",
    version,
    about = "Amulet: a partitioned, replicated, linearizable ordered map over atomic multicast"
)]
struct Cli {
    #[command(flatten)]
    target: client_commands::Target,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run one node from its configuration file.
    Node(node_command::NodeArgs),
    /// Start a local cluster (3 partitions x 3 replicas on 127.0.0.1, data
    /// in ./amulet-data) and serve it until Ctrl-C.
    Dev(dev::DevArgs),
    /// A new node joins a running cluster: the cluster gives it an id, its
    /// configuration is made from a member's file, and it starts; the
    /// balancer then moves partitions onto it (docs/membership.md).
    Join(join_command::JoinArgs),
    /// Write the files of a cluster of several machines: one configuration
    /// per node, a CA, node and client certificates (deploy/ has the
    /// systemd unit and the container file that run them).
    Init(init_command::InitArgs),
    /// Create TLS certificates: a cluster CA, node and client
    /// certificates signed by it.
    #[command(subcommand)]
    Cert(cert_command::CertCommand),
    /// The ordering layer alone: three nodes multicast to two streams and
    /// show that they deliver the same values in the same order.
    OrderDemo(order_demo::OrderDemoArgs),
    /// Benchmark snapshot iteration against a get loop on a running
    /// cluster.
    BenchScan(bench_scan::BenchScanArgs),
    /// DynaTree's growth on a running cluster: random then sequential
    /// inserts into a range map of one partition, the balancer's splits,
    /// every key read back, the client's map refreshes counted.
    BenchInserts(bench_inserts::BenchInsertsArgs),
    /// YCSB-style closed-loop benchmark (amulet-loadgen): `amulet bench --
    /// --backend amulet --workloads put-only,a ...`.
    Bench {
        /// Arguments of amulet-loadgen (see `amulet bench -- --help`).
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<String>,
    },
    #[command(flatten)]
    Client(client_commands::Op),
}

fn main() -> std::process::ExitCode {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    // AMULET_LOG_FORMAT=json: one JSON object per event (for log
    // collectors); otherwise human-readable lines with key=value fields.
    if std::env::var("AMULET_LOG_FORMAT").is_ok_and(|f| f == "json") {
        tracing_subscriber::fmt()
            .json()
            .with_env_filter(filter)
            .with_writer(std::io::stderr)
            .init();
    } else {
        tracing_subscriber::fmt()
            .with_env_filter(filter)
            .with_writer(std::io::stderr)
            .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
            .init();
    }
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Node(args) => node_command::run(args),
        Command::Dev(args) => dev::run(args),
        Command::Cert(command) => cert_command::run(command),
        Command::Init(args) => init_command::run(args),
        Command::Join(args) => join_command::run(cli.target, args),
        Command::OrderDemo(args) => order_demo::run(args),
        Command::BenchScan(args) => bench_scan::run(args),
        Command::BenchInserts(args) => bench_inserts::run(args),
        Command::Bench { args } => {
            amulet_loadgen::cli::main_from(std::iter::once("amulet bench".to_string()).chain(args))
        }
        Command::Client(op) => client_commands::run(cli.target, op),
    };
    match result {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("amulet: error: {error:#}");
            std::process::ExitCode::FAILURE
        }
    }
}
