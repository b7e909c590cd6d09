//! `amulet-dotted-bench OUTDIR [--quick]`: DottedDB against the MerkleDB
//! baseline in the simulator (DottedDB §V-E, Table I, Figs. 3–5; see
//! `amulet_sim::dotted::compare`). Writes OUTDIR/anti_entropy.csv (one row
//! per system and configuration), OUTDIR/latency.csv (the replication
//! latency CDF per configuration, ms, every half percent), OUTDIR/strip.csv
//! (the strip latency CDF, Fig. 2), OUTDIR/churn.csv (clock entries per
//! stored object under churn, Fig. 1) and OUTDIR/deletes.csv (objects stored each second
//! under a delete-heavy load); `scripts/plot_dotted_compare.py OUTDIR`
//! draws them.

use amulet_sim::dotted::compare::{self, Config, Scale, System};
use std::fmt::Write as _;
use std::path::PathBuf;

fn main() -> std::io::Result<()> {
    let mut args = std::env::args().skip(1);
    let out = PathBuf::from(args.next().unwrap_or_else(|| {
        eprintln!("usage: amulet-dotted-bench OUTDIR [--quick]");
        std::process::exit(2)
    }));
    let quick = args.any(|a| a == "--quick");
    std::fs::create_dir_all(&out)?;
    let scale = if quick {
        Scale {
            keys: 2_000,
            rate: 500,
            seconds: 5,
            ..Scale::default()
        }
    } else {
        Scale::default()
    };
    // Objects per leaf: keys / vnodes per replica group, over the leaves.
    let per_group = scale.keys / scale.vnodes;
    let leaf_h = System::Merkle {
        segments: 2,
        width: 2,
    };
    let leaf_l = System::Merkle {
        segments: 1024,
        width: 4,
    };
    let mut rows = String::from(
        "system,leaves,objects_per_leaf,state_changed,loss,config,ae_bytes_per_s,object_data_per_s,object_meta_per_s,sync_meta_per_s,metadata_bytes_per_vnode,object_clock_bytes_per_vnode,repl_p50_ms,repl_p95_ms,repl_p99_ms,repl_max_ms,unreplicated,clock_bytes_per_vnode,dot_key_bytes_per_vnode,watermark_bytes_per_vnode,non_stripped_bytes_per_vnode\n",
    );
    let mut latency = String::from("system,config,quantile,latency_ms\n");
    let letter = |high: bool| if high { "H" } else { "L" };
    for (system, leaf) in [(System::Dotted, ""), (leaf_h, "H"), (leaf_l, "L")] {
        for state_high in [true, false] {
            for loss_high in [true, false] {
                let config = Config {
                    system,
                    state_changed: if state_high { 0.10 } else { 0.01 },
                    loss: if loss_high { 1.0 } else { 0.1 },
                };
                let name = format!("{leaf}{}{}", letter(state_high), letter(loss_high));
                let m = compare::run(config, scale, 42);
                let mut sorted = m.latencies_ms.clone();
                sorted.sort_by(|a, b| a.total_cmp(b));
                let q = |p: f64| {
                    sorted
                        .get(((sorted.len() as f64 - 1.0) * p) as usize)
                        .copied()
                        .unwrap_or(f64::NAN)
                };
                let (label, leaves, per_leaf) = match system {
                    System::Dotted => ("DottedDB", 0, 0.0),
                    System::Merkle { segments, .. } => {
                        ("MerkleDB", segments, per_group as f64 / segments as f64)
                    }
                };
                writeln!(
                    rows,
                    "{label},{leaves},{per_leaf:.1},{},{},{name},{:.0},{:.0},{:.0},{:.0},{:.0},{:.0},{:.1},{:.1},{:.1},{:.1},{},{:.0},{:.0},{:.0},{:.0}",
                    config.state_changed,
                    config.loss,
                    m.ae_bytes_per_s,
                    m.object_data_per_s,
                    m.object_meta_per_s,
                    m.sync_meta_per_s,
                    m.metadata_per_vnode,
                    m.object_clocks_per_vnode,
                    q(0.5),
                    q(0.95),
                    q(0.99),
                    q(1.0),
                    m.unreplicated,
                    m.metadata_parts_per_vnode[0],
                    m.metadata_parts_per_vnode[1],
                    m.metadata_parts_per_vnode[2],
                    m.metadata_parts_per_vnode[3],
                )
                .expect("a string");
                // The CDF at every half percent (the raw latencies are
                // tens of thousands of rows per configuration).
                for step in 0..=200 {
                    let p = f64::from(step) / 200.0;
                    writeln!(latency, "{label},{name},{p:.3},{:.2}", q(p)).expect("a string");
                }
                println!(
                    "{label:8} {name:3} ae {:>10.0} B/s  metadata/vnode {:>9.0} B  object clocks/vnode {:>8.0} B  repl p50 {:>7.1} p99 {:>8.1} ms  unreplicated {}",
                    m.ae_bytes_per_s,
                    m.metadata_per_vnode,
                    m.object_clocks_per_vnode,
                    q(0.5),
                    q(0.99),
                    m.unreplicated
                );
            }
        }
    }
    std::fs::write(out.join("anti_entropy.csv"), rows)?;
    std::fs::write(out.join("latency.csv"), latency)?;
    let (keys, rate, seconds) = if quick {
        (1_000, 100, 10)
    } else {
        (5_000, 100, 60)
    };
    let mut deletes = String::from("system,second,objects_stored,live_keys\n");
    for (label, system) in [("DottedDB", System::Dotted), ("MerkleDB", leaf_l)] {
        for (second, stored, live) in compare::deletes(system, keys, rate, seconds, 7) {
            writeln!(deletes, "{label},{second},{stored:.0},{live}").expect("a string");
        }
    }
    std::fs::write(out.join("deletes.csv"), deletes)?;
    // Strip latency (Fig. 2): strip every 0.1, 1 or 10 s, sync every
    // 100 ms, replication loss 10% or 100%; the CDF every half percent.
    let (rate, seconds) = if quick { (50, 10) } else { (150, 60) };
    let mut strip = String::from("strip_interval_s,loss,quantile,latency_ms\n");
    for strip_s in [0.1, 1.0, 10.0] {
        for loss in [0.1, 1.0] {
            let mut l = compare::strip_latency((strip_s * 1e6) as u64, loss, rate, seconds, 11);
            l.sort_by(|a, b| a.total_cmp(b));
            for step in 0..=200 {
                let p = f64::from(step) / 200.0;
                let v = l
                    .get(((l.len() as f64 - 1.0) * p) as usize)
                    .copied()
                    .unwrap_or(f64::NAN);
                writeln!(strip, "{strip_s},{loss},{p:.3},{v:.1}").expect("a string");
            }
            let q = |p: f64| {
                l.get(((l.len() as f64 - 1.0) * p) as usize)
                    .copied()
                    .unwrap_or(f64::NAN)
            };
            println!(
                "strip every {strip_s:>4} s, loss {loss:.1}: {} updates stripped, p50 {:.0} ms, p90 {:.0} ms, p99 {:.0} ms",
                l.len(),
                q(0.5),
                q(0.9),
                q(0.99)
            );
        }
    }
    std::fs::write(out.join("strip.csv"), strip)?;
    // Clock entries per object under churn (Fig. 1): a replacement every
    // 4 s, N = 3 and N = 6.
    let seconds = if quick { 12 } else { 60 };
    let mut churn = String::from("system,replication,second,clock_entries_per_object\n");
    for replication in [3, 6] {
        for (label, system) in [("DottedDB", System::Dotted), ("MerkleDB", leaf_l)] {
            let series = compare::churn(system, replication, seconds, 13);
            for (second, entries) in &series {
                writeln!(churn, "{label},{replication},{second},{entries:.3}").expect("a string");
            }
            let last = series.last().map_or(f64::NAN, |(_, e)| *e);
            println!("churn N={replication} {label}: {last:.2} clock entries per object after {seconds} s");
        }
    }
    std::fs::write(out.join("churn.csv"), churn)?;
    println!("results in {}", out.display());
    Ok(())
}
