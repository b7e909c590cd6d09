//! `amulet bulk-load`: load sorted input into a map (docs/dynatree.md,
//! "Bulk load"), pre-splitting a range map as it goes:
//!
//! ```text
//! amulet create-map events --range
//! sort -t$'\t' -k1,1 events.tsv | amulet bulk-load --map events -
//! ```
//!
//! One entry per line: the key, a tab, the value (a line without a tab is
//! a key with an empty value). Keys must be strictly increasing by their
//! bytes (`LC_ALL=C sort` orders them so); the load stops at the first
//! that is not, reporting it, with what came before loaded.

use amulet_client::{BulkLoad, Bytes, Client};
use std::io::BufRead;

/// Arguments of `amulet bulk-load`.
#[derive(clap::Args, Clone)]
pub struct BulkLoadArgs {
    /// The input file (`-`: stdin).
    file: String,
    /// Entries per partition the map is pre-split into (0: no pre-split).
    #[arg(long, default_value_t = BulkLoad::default().partition_entries)]
    partition_entries: u64,
    /// Most entries in one putAll.
    #[arg(long, default_value_t = BulkLoad::default().batch_entries)]
    batch_entries: usize,
    /// putAlls in flight at once.
    #[arg(long, default_value_t = BulkLoad::default().in_flight)]
    in_flight: usize,
}

/// Runs `amulet bulk-load`.
#[allow(clippy::disallowed_methods)] // the rate shown to the operator, not protocol time
pub async fn run(client: &Client, map: &str, args: &BulkLoadArgs) -> anyhow::Result<()> {
    let reader: Box<dyn BufRead> = if args.file == "-" {
        Box::new(std::io::stdin().lock())
    } else {
        let file = std::fs::File::open(&args.file)
            .map_err(|e| anyhow::anyhow!("bulk-load: {}: {e}", args.file))?;
        Box::new(std::io::BufReader::new(file))
    };
    let mut read_error = None;
    let mut lines = reader.split(b'\n');
    // Stops at the first unreadable line; the error is reported after the
    // entries before it are loaded.
    let entries = std::iter::from_fn(|| match lines.next()? {
        Ok(line) => Some(entry_of(&line)),
        Err(e) => {
            read_error = Some(e);
            None
        }
    });
    let options = BulkLoad {
        partition_entries: args.partition_entries,
        batch_entries: args.batch_entries,
        in_flight: args.in_flight,
        ..BulkLoad::default()
    };
    let began = std::time::Instant::now();
    let loaded = client.map(map)?.bulk_load(entries, &options).await?;
    if let Some(e) = read_error {
        anyhow::bail!(
            "bulk-load: reading {}: {e} (after {} entries)",
            args.file,
            loaded.entries
        );
    }
    let seconds = began.elapsed().as_secs_f64();
    println!(
        "loaded {} entries ({} bytes) in {} putAlls and {} splits, {:.1} s ({:.0} entries/s)",
        loaded.entries,
        loaded.bytes,
        loaded.batches,
        loaded.splits,
        seconds,
        loaded.entries as f64 / seconds.max(1e-9)
    );
    Ok(())
}

/// A line's key and value: split at the first tab; a trailing `\r` is
/// dropped.
fn entry_of(line: &[u8]) -> (Bytes, Bytes) {
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    match line.iter().position(|b| *b == b'\t') {
        Some(tab) => (
            Bytes::copy_from_slice(&line[..tab]),
            Bytes::copy_from_slice(&line[tab + 1..]),
        ),
        None => (Bytes::copy_from_slice(line), Bytes::new()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_line_is_a_key_a_tab_and_a_value() {
        let b = |s: &str| Bytes::copy_from_slice(s.as_bytes());
        assert_eq!(entry_of(b"k\tv"), (b("k"), b("v")));
        assert_eq!(entry_of(b"k\tv\tw\r"), (b("k"), b("v\tw")));
        assert_eq!(entry_of(b"k"), (b("k"), b("")));
    }
}
