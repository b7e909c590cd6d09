//! Results: the stdout table, `results.csv` and `summary.md`.

use crate::baseline::Loopback;
use crate::cluster::Measured;
use crate::scenario::{self, Scenario, Target};
use std::fmt::Write as _;

/// One scenario's line of results.
#[derive(Clone, Debug)]
pub struct Row {
    pub scenario: Scenario,
    /// The median run by msgs/s, or the last error if every run failed.
    pub result: Result<Measured, String>,
    pub target: Option<Target>,
    /// Runs made and runs failed.
    pub runs: usize,
    pub failed: usize,
    /// Lowest and highest msgs/s over the successful runs.
    pub range: Option<(f64, f64)>,
}

impl Row {
    /// Summarises the runs of one scenario (in the order they ran).
    pub fn new(scenario: Scenario, runs: &[Result<Measured, String>], loopback: &Loopback) -> Row {
        let target = scenario::target(&scenario, loopback.best(), loopback.disk_mb_per_s);
        let mut ok: Vec<&Measured> = runs.iter().filter_map(|r| r.as_ref().ok()).collect();
        ok.sort_by(|a, b| a.msgs_per_s.total_cmp(&b.msgs_per_s));
        let range = (!ok.is_empty()).then(|| (ok[0].msgs_per_s, ok[ok.len() - 1].msgs_per_s));
        let result = match ok.get(ok.len() / 2) {
            Some(m) => Ok((*m).clone()),
            None => Err(runs
                .iter()
                .rev()
                .find_map(|r| r.as_ref().err().cloned())
                .unwrap_or_else(|| "not run".into())),
        };
        Row {
            scenario,
            result,
            target,
            runs: runs.len(),
            failed: runs.len() - ok.len(),
            range,
        }
    }

    /// `Some(met)` when the row has a target.
    pub fn target_met(&self) -> Option<bool> {
        let target = self.target.as_ref()?;
        Some(match &self.result {
            Ok(m) => target.met(m.msgs_per_s, m.mb_per_s),
            Err(_) => false,
        })
    }
}

pub const CSV_HEADER: &str = "scenario,mode,streams,value_bytes,msgs_per_s,mb_per_s,p50_ms,p99_ms,\
loopback_mb_per_s,target,target_met,max_ms,window,values,order_agrees,load1,cpu1_pct,cpu2_pct,cpu3_pct,runs,failed_runs,msgs_per_s_min,msgs_per_s_max,payload_links,link_bytes_per_payload,status,notes";

fn ms(micros: u64) -> String {
    format!("{:.3}", micros as f64 / 1000.0)
}

fn yes_no(met: Option<bool>) -> &'static str {
    match met {
        Some(true) => "yes",
        Some(false) => "no",
        None => "",
    }
}

/// Quotes a CSV field when it needs it.
fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

pub fn csv(rows: &[Row], loopback: &Loopback) -> String {
    let mut out = String::from(CSV_HEADER);
    out.push('\n');
    let lb = loopback.best().map_or(String::new(), |v| format!("{v:.1}"));
    for row in rows {
        let s = &row.scenario;
        let target = row.target.as_ref().map_or(String::new(), Target::describe);
        let met = yes_no(row.target_met());
        let (rates, status) = match &row.result {
            Ok(m) => (
                format!(
                    "{:.0},{:.2},{},{}",
                    m.msgs_per_s,
                    m.mb_per_s,
                    ms(m.report.latency_p50_micros),
                    ms(m.report.latency_p99_micros)
                ),
                "ok".to_string(),
            ),
            Err(e) => (",,,".to_string(), format!("failed: {}", first_line(e))),
        };
        let range = row
            .range
            .map_or(",".to_string(), |(lo, hi)| format!("{lo:.0},{hi:.0}"));
        let links = match row.result.as_ref().ok().and_then(|m| m.links.as_ref()) {
            Some(l) => format!("{},{}", l.payload_links(), csv_field(&l.describe())),
            None => ",".to_string(),
        };
        let (max, values, agrees, load, cpu) = match &row.result {
            Ok(m) => (
                ms(m.report.latency_max_micros),
                m.report.values.to_string(),
                m.agreement.label(),
                m.load1.map_or(String::new(), |l| format!("{l:.2}")),
                m.cpu_percent
                    .map(|c| c.map_or(String::new(), |c| format!("{c:.0}")))
                    .join(","),
            ),
            Err(_) => (
                String::new(),
                String::new(),
                String::new(),
                String::new(),
                ",,".to_string(),
            ),
        };
        let _ = writeln!(
            out,
            "{},{},{},{},{rates},{lb},{},{met},{max},{},{values},{},{load},{cpu},{},{},{range},{links},{},{}",
            s.name(),
            s.mode,
            s.streams,
            s.value_bytes,
            csv_field(&target),
            s.window,
            csv_field(&agrees),
            row.runs,
            row.failed,
            csv_field(&status),
            csv_field(&notes(row))
        );
    }
    out
}

/// Caveats of a row: a durable mode that ran on a memory log.
fn notes(row: &Row) -> String {
    match &row.result {
        Ok(m) if m.durable_fallback && row.scenario.mode != scenario::Mode::Memory => {
            "node had no durable log yet: ran on a memory log".into()
        }
        _ => String::new(),
    }
}

fn first_line(s: &str) -> &str {
    s.lines().next().unwrap_or("")
}

/// Fixed-width table for stdout (also used, fenced, in the summary).
pub fn table(rows: &[Row]) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{:<26} {:>7} {:>3} {:>6} {:>6} {:>11} {:>9} {:>9} {:>9} {:>22} {:>4} {:>6} {:>5} {:>11}",
        "scenario",
        "mode",
        "str",
        "value",
        "window",
        "msgs/s",
        "MB/s",
        "p50 ms",
        "p99 ms",
        "target",
        "met",
        "order",
        "load",
        "cpu% 1/2/3"
    );
    for row in rows {
        let s = &row.scenario;
        let target = row.target.as_ref().map_or(String::new(), Target::describe);
        let met = yes_no(row.target_met());
        match &row.result {
            Ok(m) => {
                let _ = writeln!(
                    out,
                    "{:<26} {:>7} {:>3} {:>6} {:>6} {:>11.0} {:>9.1} {:>9} {:>9} {:>22} {:>4} {:>6} {:>5} {:>11}",
                    s.name(),
                    if notes(row).is_empty() {
                        s.mode.as_str().to_string()
                    } else {
                        format!("{}*", s.mode)
                    },
                    s.streams,
                    scenario::size_label(s.value_bytes),
                    s.window,
                    m.msgs_per_s,
                    m.mb_per_s,
                    ms(m.report.latency_p50_micros),
                    ms(m.report.latency_p99_micros),
                    target,
                    met,
                    m.agreement.label(),
                    m.load1.map_or(String::new(), |l| format!("{l:.1}")),
                    m.cpu_percent
                        .map(|c| c.map_or("?".to_string(), |c| format!("{c:.0}")))
                        .join("/")
                );
            }
            Err(e) => {
                let _ = writeln!(
                    out,
                    "{:<26} {:>7} {:>3} {:>6} {:>6} FAILED: {}  {} {}",
                    s.name(),
                    s.mode.as_str(),
                    s.streams,
                    scenario::size_label(s.value_bytes),
                    s.window,
                    first_line(e),
                    target,
                    met
                );
            }
        }
    }
    out
}

/// Describes the run's settings for the summary.
pub struct RunInfo {
    pub started_unix: u64,
    pub seconds: u64,
    pub warmup_ms: u64,
    /// Runs per scenario (the median is reported).
    pub repeat: usize,
    pub cpus: usize,
    pub amulet: String,
    /// `[streams.limits]` overrides (empty: the node's defaults).
    pub limits: Vec<String>,
    /// 1-minute load average before the run.
    pub load_before: Option<f64>,
}

pub fn summary(rows: &[Row], loopback: &Loopback, info: &RunInfo) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "# Amulet ordering-layer benchmark\n");
    let _ = writeln!(
        s,
        "Run started at unix time {}; {} s measured per scenario after {} ms of \
         warmup; each scenario ran {} time(s), in rounds over the whole \
         matrix, and the run with the median msgs/s is reported; {} CPUs; \
         node binary `{}`. Three `amulet node` processes on \
         127.0.0.1; node 1 proposes (round-robin over the streams), \
         coordinates and learns (merging the streams); latency is node 1's \
         propose-to-deliver time. MB/s are 10^6 bytes of values per second. \
         `order` compares the delivery-order digests of nodes 2 and 3 with \
         node 1's at every common prefix length (yes = all equal); `load` is \
         the 1-minute load average at the end of the scenario: on a machine \
         shared with other work, a load above the CPU count means the \
         figures are depressed; `cpu%` is each node's CPU time over its \
         life (start-up and warmup included) in % of one CPU.\n",
        info.started_unix, info.seconds, info.warmup_ms, info.repeat, info.cpus, info.amulet
    );
    let _ = writeln!(
        s,
        "Stream limits: {}. Load average before the run: {}.\n",
        if info.limits.is_empty() {
            "the node's defaults".to_string()
        } else {
            format!("`{}`", info.limits.join("`, `"))
        },
        info.load_before
            .map_or("unknown".to_string(), |l| format!("{l:.2}"))
    );
    let _ = writeln!(
        s,
        "`light` runs 16 values outstanding (latency without queueing); \
         `tuned` runs 32 KiB values with {} (`memory_ring_slots` x 32 KiB \
         batches is what each node's memory ring allocates before it wraps); \
         every other scenario uses the node's default stream limits.\n",
        scenario::TUNED_LIMITS
            .iter()
            .map(|(k, v)| format!("`{k} = {v}`"))
            .collect::<Vec<_>>()
            .join(" and ")
    );
    let _ = writeln!(s, "## Loopback TCP baseline\n");
    let fmt = |v: Option<f64>| v.map_or("not measured".to_string(), |v| format!("{v:.1} MB/s"));
    let _ = writeln!(
        s,
        "- blast (one connection, 64 KiB writes, this process; higher of the run's start and end): {}",
        fmt(loopback.blast_mb_per_s)
    );
    let _ = writeln!(
        s,
        "- iperf3 (one stream, `-c 127.0.0.1 -J`): {}{}",
        fmt(loopback.iperf3_mb_per_s),
        loopback
            .iperf3_note
            .as_ref()
            .map_or(String::new(), |n| format!(" ({n})"))
    );
    let _ = writeln!(
        s,
        "- denominator: {} ({}, the higher, hence the stricter target)\n",
        fmt(loopback.best()),
        loopback.source()
    );
    let _ = writeln!(
        s,
        "## Disk baseline\n\n- one writer appending 32 KiB and fdatasyncing after each write, in the run's output directory: {} (the durable 32 KiB target is 0.5 x this / {} nodes sharing the disk)\n",
        fmt(loopback.disk_mb_per_s),
        scenario::DISK_WRITERS
    );
    let _ = writeln!(s, "{}\n", scenario::HOPS_RATIONALE);
    let _ = writeln!(s, "## Results\n");
    let _ = writeln!(s, "```text\n{}```\n", table(rows));
    if rows.iter().any(|r| !notes(r).is_empty()) {
        let _ = writeln!(
            s,
            "`*`: the node logged that it has no durable acceptor log yet and \
             ran this durable mode on a memory log, so these rows do not \
             measure disk writes.\n"
        );
    }
    let warned: Vec<&Row> = rows
        .iter()
        .filter(|r| r.result.as_ref().is_ok_and(|m| !m.warnings.is_empty()))
        .collect();
    if !warned.is_empty() {
        let _ = writeln!(s, "## Node warnings\n");
        for row in warned {
            if let Ok(m) = &row.result {
                let _ = writeln!(s, "- {}: {}", row.scenario.name(), m.warnings.join("; "));
            }
        }
        let _ = writeln!(s);
    }
    if rows.iter().any(|r| r.runs > 1) {
        let _ = writeln!(
            s,
            "Spread of msgs/s over the runs (min .. max, failed runs):\n"
        );
        for row in rows {
            if let Some((lo, hi)) = row.range {
                let _ = writeln!(
                    s,
                    "- {}: {lo:.0} .. {hi:.0} ({} of {} failed)",
                    row.scenario.name(),
                    row.failed,
                    row.runs
                );
            }
        }
        let _ = writeln!(s);
    }
    let measured: Vec<(&Row, &crate::links::LinkReport)> = rows
        .iter()
        .filter_map(|r| Some((r, r.result.as_ref().ok()?.links.as_ref()?)))
        .collect();
    if !measured.is_empty() {
        let _ = writeln!(s, "## Measured payload hops\n");
        let _ = writeln!(
            s,
            "Bytes each node sent to each other node (kernel TCP counters from \
             `ss -tinp`, sampled every 250 ms while node 1 ran) over the value \
             bytes node 1 delivered; `i>j:r` means node i sent node j r times \
             the payload. Links with at least half the payload are counted as \
             payload hops.\n"
        );
        for (row, links) in measured {
            let _ = writeln!(
                s,
                "- {}: {} payload hop(s); {} (sum {:.2})",
                row.scenario.name(),
                links.payload_links(),
                links.describe(),
                links.total()
            );
        }
        let _ = writeln!(s);
    }
    let timelines: Vec<(&Row, &Vec<u64>)> = rows
        .iter()
        .filter_map(|r| Some((r, &r.result.as_ref().ok()?.timeline)))
        .filter(|(_, t)| !t.is_empty())
        .collect();
    if !timelines.is_empty() {
        let _ = writeln!(
            s,
            "## Delivery timeline\n\nValues node 1 delivered in each second of \
             its run (start-up and warmup included), from its status lines; \
             a dip shows a stall inside the run.\n"
        );
        for (row, t) in timelines {
            let t: Vec<String> = t.iter().map(u64::to_string).collect();
            let _ = writeln!(s, "- {}: {}", row.scenario.name(), t.join(", "));
        }
        let _ = writeln!(s);
    }
    let _ = writeln!(s, "## Targets\n");
    let mut any = false;
    for row in rows {
        let (Some(target), Some(met)) = (&row.target, row.target_met()) else {
            continue;
        };
        any = true;
        let measured = match &row.result {
            Ok(m) => match target {
                Target::MbPerS(_) => format!("{:.1} MB/s", m.mb_per_s),
                Target::MsgsPerS(_) => format!("{:.0} msgs/s", m.msgs_per_s),
            },
            Err(e) => format!("failed ({})", first_line(e)),
        };
        // For the MB/s target: the fraction of loopback each payload hop
        // got (the target is 0.5), against each baseline; in the durable
        // modes the fraction of the disk each node's log got.
        let per_hop = match (&row.result, target) {
            (Ok(m), Target::MbPerS(_)) if row.scenario.mode != scenario::Mode::Memory => {
                let writers = f64::from(scenario::DISK_WRITERS);
                loopback.disk_mb_per_s.map_or(String::new(), |d| {
                    format!(
                        " (x {} writers = {:.2} of the disk; needs 0.50)",
                        scenario::DISK_WRITERS,
                        m.mb_per_s * writers / d
                    )
                })
            }
            (Ok(m), Target::MbPerS(_)) => {
                let hops = f64::from(scenario::PAYLOAD_HOPS);
                let mut parts = Vec::new();
                for (name, lb) in [
                    ("blast", loopback.blast_mb_per_s),
                    ("iperf3", loopback.iperf3_mb_per_s),
                ] {
                    if let Some(lb) = lb {
                        parts.push(format!("{:.2} of {name}", m.mb_per_s * hops / lb));
                    }
                }
                format!(
                    " (x {} hops = {}; needs 0.50)",
                    scenario::PAYLOAD_HOPS,
                    parts.join(", ")
                )
            }
            _ => String::new(),
        };
        let _ = writeln!(
            s,
            "- {}: {} against {} -> {}{per_hop}",
            row.scenario.name(),
            measured,
            target.describe(),
            if met { "met" } else { "NOT met" }
        );
    }
    if !any {
        let _ = writeln!(s, "- no scenario had a target (no loopback figure?)");
    }
    let failures: Vec<&Row> = rows.iter().filter(|r| r.result.is_err()).collect();
    if !failures.is_empty() {
        let _ = writeln!(s, "\n## Failures\n");
        for row in failures {
            if let Err(e) = &row.result {
                let _ = writeln!(
                    s,
                    "- {}:\n```text\n{}\n```",
                    row.scenario.name(),
                    e.trim_end()
                );
            }
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cluster::NodeReport;

    fn rows() -> (Vec<Row>, Loopback) {
        let loopback = Loopback {
            blast_mb_per_s: Some(4000.0),
            iperf3_mb_per_s: None,
            iperf3_note: Some("iperf3 not on PATH".into()),
            disk_mb_per_s: Some(180.0),
        };
        let all = scenario::matrix(None);
        let ok = Measured::from_report(NodeReport {
            values: 1_000_000,
            bytes: 200_000_000,
            values_all: 1_100_000,
            window_micros: 4_000_000,
            latency_p50_micros: 1500,
            latency_p99_micros: 4200,
            latency_max_micros: 9000,
            ..NodeReport::default()
        })
        .unwrap();
        let rows = vec![
            Row::new(all[0].clone(), &[Ok(ok)], &loopback),
            Row::new(
                all[2].clone(),
                &[Err("node 1 exited, oops".into())],
                &loopback,
            ),
        ];
        (rows, loopback)
    }

    #[test]
    fn csv_rows() {
        let (rows, loopback) = rows();
        let text = csv(&rows, &loopback);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], CSV_HEADER);
        let n = CSV_HEADER.split(',').count();
        assert_eq!(
            lines[1],
            "single-memory-200B-1s,memory,1,200,250000,50.00,1.500,4.200,4000.0,\
             >= 200000 msgs/s,yes,9.000,2048,1000000,unchecked,,,,,1,0,250000,250000,,,ok,"
        );
        assert_eq!(lines[1].split(',').count(), n);
        assert!(lines[2]
            .starts_with("single-memory-32KiB-1s,memory,1,32768,,,,,4000.0,>= 1000.0 MB/s,no,"));
        assert!(lines[2].ends_with("\"failed: node 1 exited, oops\","));
    }

    #[test]
    fn median_of_runs() {
        let (rows, loopback) = rows();
        let ok = rows[0].result.clone().unwrap();
        let at = |rate: f64| {
            let mut m = ok.clone();
            m.msgs_per_s = rate;
            Ok(m)
        };
        let runs = vec![at(300.0), Err("x".to_string()), at(100.0), at(200.0)];
        let row = Row::new(rows[0].scenario.clone(), &runs, &loopback);
        assert_eq!(row.result.as_ref().unwrap().msgs_per_s, 200.0);
        assert_eq!((row.runs, row.failed), (4, 1));
        assert_eq!(row.range, Some((100.0, 300.0)));
        let all_failed = Row::new(
            rows[0].scenario.clone(),
            &[Err("a".into()), Err("b".into())],
            &loopback,
        );
        assert_eq!(all_failed.result.unwrap_err(), "b");
    }

    #[test]
    fn summary_mentions_targets() {
        let (rows, loopback) = rows();
        let info = RunInfo {
            started_unix: 1,
            seconds: 5,
            warmup_ms: 1000,
            cpus: 2,
            amulet: "amulet".into(),
            repeat: 1,
            limits: vec![],
            load_before: Some(0.5),
        };
        let text = summary(&rows, &loopback, &info);
        assert!(text.contains("250000 msgs/s against >= 200000 msgs/s -> met"));
        assert!(text.contains("NOT met"));
        assert!(text.contains("## Failures"));
        assert!(table(&rows).contains("FAILED"));
    }
}
