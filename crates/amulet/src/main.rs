//! `amulet`: run a node (`amulet node`), or start a local three-node
//! cluster and use it (`amulet dev`).

mod dev;
mod node_command;

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
    about = "Amulet: ordered multicast over Ring Paxos streams"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run one node from its configuration file.
    Node(node_command::NodeArgs),
    /// Start a local cluster of three nodes, load it, and show that every
    /// node delivers the same values in the same order.
    Dev(dev::DevArgs),
}

fn main() -> std::process::ExitCode {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info")),
        )
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .init();
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Node(args) => node_command::run(args),
        Command::Dev(args) => dev::run(args),
    };
    match result {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("amulet: error: {error:#}");
            std::process::ExitCode::FAILURE
        }
    }
}
