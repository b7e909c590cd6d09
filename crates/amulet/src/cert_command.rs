//! `amulet cert`: the files a TLS cluster needs, for real deployments
//! (`amulet dev` makes its own). A CA signs node certificates (naming
//! their node id) and user certificates (naming their user); nodes and
//! clients trust that CA alone. Nothing is overwritten.

use amulet_tls::create::{create_ca, create_node, create_user, Validity, CA_DAYS, LEAF_DAYS};
use amulet_types::NodeId;
use std::path::PathBuf;

/// `amulet cert ...`.
#[derive(clap::Subcommand)]
#[allow(clippy::enum_variant_names)] // the commands' names: create-ca, create-node, create-client
pub enum CertCommand {
    /// Create the cluster CA: DIR/ca.pem (give it to every node and
    /// client) and DIR/ca.key (keep it safe: it signs the others).
    CreateCa {
        /// Directory of the files.
        #[arg(long)]
        dir: PathBuf,
        /// The CA's common name.
        #[arg(long, default_value = "amulet cluster CA")]
        name: String,
        /// Days it is valid for.
        #[arg(long, default_value_t = CA_DAYS)]
        days: u32,
    },
    /// Create node ID's certificate, DIR/node-ID.pem and .key, signed by
    /// DIR's CA: it names the node (peers check it against the id the node
    /// claims) and `amulet-node` (clients check that).
    CreateNode {
        /// Directory of the CA and the new files.
        #[arg(long)]
        dir: PathBuf,
        /// The node id.
        #[arg(long)]
        node: u32,
        /// Further host names or IP addresses the node is reached by
        /// (127.0.0.1, ::1 and localhost are always in).
        #[arg(long, value_delimiter = ',')]
        host: Vec<String>,
        /// Days it is valid for.
        #[arg(long, default_value_t = LEAF_DAYS)]
        days: u32,
    },
    /// Create user USER's client certificate, DIR/USER.pem and .key,
    /// signed by DIR's CA.
    CreateClient {
        /// Directory of the CA and the new files.
        #[arg(long)]
        dir: PathBuf,
        /// The user (1-64 of A-Z a-z 0-9 _ . -).
        #[arg(long)]
        user: String,
        /// Days it is valid for.
        #[arg(long, default_value_t = LEAF_DAYS)]
        days: u32,
    },
}

/// Runs one `amulet cert` command.
pub fn run(command: CertCommand) -> anyhow::Result<()> {
    match command {
        CertCommand::CreateCa { dir, name, days } => {
            let cert = create_ca(&dir, &name, Validity::days(days))?;
            println!(
                "created {} and its key (keep ca.key private)",
                cert.display()
            );
        }
        CertCommand::CreateNode {
            dir,
            node,
            host,
            days,
        } => {
            anyhow::ensure!(node != 0, "node id 0 is reserved");
            let files = create_node(&dir, NodeId(node), &host, Validity::days(days))?;
            println!(
                "created {} and {} for node {node}",
                files.cert.display(),
                files.key.display()
            );
        }
        CertCommand::CreateClient { dir, user, days } => {
            let files = create_user(&dir, &user, Validity::days(days))?;
            println!(
                "created {} and {} for user {user:?}",
                files.cert.display(),
                files.key.display()
            );
        }
    }
    Ok(())
}
