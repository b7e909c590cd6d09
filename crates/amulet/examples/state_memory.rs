//! Resident bytes per entry of one partition's state alone (no node, no
//! acceptor log), with the node's allocator: the part of
//! `scripts/bench-memory`'s figure that the map representation decides.
//!
//!   cargo run --release -p amulet --example state_memory -- 1000000 256

use amulet_dmap::{ExecContext, MapCommand, MapLimits, MapName, PartitionState};
use bytes::Bytes;

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn rss_bytes() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").expect("/proc/self/status");
    let line = status
        .lines()
        .find(|l| l.starts_with("RssAnon:"))
        .expect("RssAnon");
    let kib: u64 = line.split_whitespace().nth(1).unwrap().parse().unwrap();
    kib * 1024
}

fn fnv(n: u64) -> u64 {
    let mut h: u64 = 0xcbf29ce484222325;
    for b in n.to_le_bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x100000001b3);
    }
    h
}

fn main() {
    let mut args = std::env::args().skip(1);
    let n: u64 = args.next().map_or(1_000_000, |a| a.parse().unwrap());
    let value_size: usize = args.next().map_or(256, |a| a.parse().unwrap());
    let map = MapName::new("bench").unwrap();
    let mut state = PartitionState::new(MapLimits::default());
    let owns = |_: &[u8]| true;
    let owns_in = |_: &str, _: &[u8]| true;
    let ctx = |i: u64| ExecContext {
        now_micros: i,
        snapshot_id: i,
        global_position: i,
        owns_key: &owns,
        owns: &owns_in,
        user: None,
    };
    state.execute(
        &MapCommand::CreateMap {
            map: map.clone(),
            layout: amulet_smr::Layout::Hash,
        },
        &ctx(0),
    );
    let before = rss_bytes();
    for i in 0..n {
        // As the node decodes them: key and value slices of one request buffer.
        let key = format!("user{}", fnv(i));
        let mut request = Vec::with_capacity(key.len() + value_size);
        request.extend_from_slice(key.as_bytes());
        request.resize(key.len() + value_size, b'x');
        let request = Bytes::from(request);
        let command = MapCommand::Put {
            map: map.clone(),
            key: request.slice(..key.len()),
            value: request.slice(key.len()..),
        };
        state.execute(&command, &ctx(i + 1));
    }
    let after = rss_bytes();
    println!(
        "entries {n}, value {value_size} B: {:.1} B/entry resident (RssAnon {} -> {} MiB)",
        (after - before) as f64 / n as f64,
        before >> 20,
        after >> 20
    );
}
