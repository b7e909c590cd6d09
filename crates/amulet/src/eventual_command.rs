//! `amulet get/put/del` on an eventual map (docs/eventual-maps.md): the
//! siblings one per line and the context last (`context: HEX`); a write
//! takes the context back with `--context HEX` and prints the siblings
//! after it and their new context.

use amulet_client::eventual::{Context, Versioned};
use amulet_client::Client;

/// An eventual map's get, put or delete.
pub enum EventualOp<'a> {
    Get {
        key: &'a str,
        r: u32,
    },
    Put {
        key: &'a str,
        value: &'a str,
        context: Option<&'a str>,
        w: u32,
    },
    Del {
        key: &'a str,
        context: Option<&'a str>,
        w: u32,
    },
}

fn show(versioned: &Versioned) {
    for value in &versioned.values {
        println!("{}", String::from_utf8_lossy(value));
    }
    println!("context: {}", versioned.context);
}

fn context(text: Option<&str>) -> anyhow::Result<Context> {
    Ok(match text {
        Some(text) => text.parse()?,
        None => Context::empty(),
    })
}

/// Runs one operation on the eventual map `map`.
pub async fn run(client: &Client, map: &str, op: EventualOp<'_>) -> anyhow::Result<()> {
    let handle = client.eventual_map(map)?;
    match op {
        EventualOp::Get { key, r } => {
            let read = handle.get_with(key.as_bytes(), r).await?;
            if read.values.is_empty() {
                eprintln!("(no values)");
            } else if read.values.len() > 1 {
                eprintln!("({} concurrent values)", read.values.len());
            }
            show(&read);
        }
        EventualOp::Put {
            key,
            value,
            context: c,
            w,
        } => {
            let written = handle
                .put_with(key.as_bytes(), value.as_bytes(), &context(c)?, w)
                .await?;
            eprintln!("OK ({} value(s) now)", written.values.len());
            show(&written);
        }
        EventualOp::Del { key, context: c, w } => {
            let left = handle.delete_with(key.as_bytes(), &context(c)?, w).await?;
            eprintln!("deleted ({} concurrent value(s) stay)", left.values.len());
            show(&left);
        }
    }
    Ok(())
}

/// Every node's eventual virtual nodes as CSV (`amulet status
/// --eventual-csv FILE`, for benchmarks).
pub async fn status_csv(client: &Client, path: &std::path::Path) -> anyhow::Result<()> {
    let mut out = String::from(
        "node,map,replica,keys,tombstones,metadata_bytes,dot_keys,non_stripped,\
watermark_lag,sync_bytes_sent,sync_bytes_received,coordinated\n",
    );
    for (node, address) in client.node_addresses() {
        let status = client.status(&address).await?;
        for e in status.eventual {
            out.push_str(&format!(
                "{},{},{},{},{},{},{},{},{},{},{},{}\n",
                node.0,
                e.map,
                e.replica,
                e.keys,
                e.tombstones,
                e.metadata_bytes,
                e.dot_keys,
                e.non_stripped,
                e.watermark_lag,
                e.sync_bytes_sent,
                e.sync_bytes_received,
                e.coordinated
            ));
        }
    }
    std::fs::write(path, out)?;
    Ok(())
}
