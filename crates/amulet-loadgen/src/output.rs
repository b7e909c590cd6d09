//! The stdout table and the CSV files (results and per-second series).

use crate::stats::{OpStats, OpType, RunResult};
use anyhow::{bail, Context as _};
use std::fmt::Write as _;
use std::fs::OpenOptions;
use std::io::{BufRead, BufReader, Write as _};
use std::path::Path;

/// Quotes a CSV field when it needs it.
pub fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

/// The results CSV header. Latencies are microseconds of successful
/// operations in the measured window; `ops_per_sec` counts successes only.
pub fn results_header() -> String {
    let mut h = String::from(
        "started_unix,backend,label,workload,distribution,clients,connections,value_size,\
record_count,warmup_s,duration_s,ops,ops_per_sec,errors,misses,p50_us,p99_us,p999_us",
    );
    for op in OpType::ALL {
        let n = op.name();
        write!(
            h,
            ",{n}_ops,{n}_errors,{n}_mean_us,{n}_p50_us,{n}_p99_us,{n}_p999_us,{n}_max_us"
        )
        .expect("write to string");
    }
    h.push_str(",first_error");
    h
}

fn stats_fields(out: &mut String, s: &OpStats) {
    if s.count() == 0 && s.errors == 0 {
        out.push_str(",,,,,,,");
        return;
    }
    let has = s.count() > 0;
    let q = |x: f64| {
        if has {
            s.quantile_us(x).to_string()
        } else {
            String::new()
        }
    };
    let mean = if has {
        format!("{:.1}", s.mean_us())
    } else {
        String::new()
    };
    write!(
        out,
        ",{},{},{},{},{},{},{}",
        s.count(),
        s.errors,
        mean,
        q(0.5),
        q(0.99),
        q(0.999),
        q(1.0)
    )
    .expect("write to string");
}

/// One results row (no newline). `label` is a free-form note (e.g. the
/// backend's durability setting).
pub fn results_row(r: &RunResult, label: &str) -> String {
    let total = r.ops.total();
    let mut row = format!(
        "{},{},{},{},{},{},{},{},{},{:.3},{:.3},{},{:.1},{},{}",
        r.started_unix,
        csv_field(&r.backend),
        csv_field(label),
        csv_field(&r.workload),
        csv_field(&r.distribution),
        r.clients,
        r.connections,
        r.value_size,
        r.record_count,
        r.warmup.as_secs_f64(),
        r.duration.as_secs_f64(),
        total.count(),
        r.ops_per_sec(),
        r.errors(),
        r.misses(),
    );
    if total.count() > 0 {
        write!(
            row,
            ",{},{},{}",
            total.quantile_us(0.5),
            total.quantile_us(0.99),
            total.quantile_us(0.999)
        )
        .expect("write to string");
    } else {
        row.push_str(",,,");
    }
    for op in OpType::ALL {
        stats_fields(&mut row, r.ops.get(op));
    }
    row.push(',');
    row.push_str(&csv_field(total.first_error.as_deref().unwrap_or("")));
    row
}

/// The per-second series CSV header.
pub const SERIES_HEADER: &str =
    "started_unix,backend,label,workload,distribution,clients,second,phase,ops,errors,p50_us,p99_us";

/// Per-second rows of one run (each ending in a newline). Second `s` counts
/// completions in `[s, s + 1)` after the run started; its phase is `warmup`
/// when `s` is before the end of the warmup, `drain` from the end of the
/// measured window on, else `measure`.
pub fn series_rows(r: &RunResult, label: &str) -> String {
    let mut out = String::new();
    let warm = r.warmup.as_secs_f64();
    let end = warm + r.duration.as_secs_f64();
    let len = r.series.ok.len().max(r.series.errors.len());
    for s in 0..len {
        let ok = r.series.ok.get(s).copied().unwrap_or(0);
        let err = r.series.errors.get(s).copied().unwrap_or(0);
        let phase = if r.workload == "load" {
            "load"
        } else if (s as f64) < warm {
            "warmup"
        } else if (s as f64) < end {
            "measure"
        } else {
            // Operations in flight at the end, not measured.
            "drain"
        };
        let quantile = |q| {
            r.series
                .quantile_micros(s, q)
                .map_or_else(String::new, |v| v.to_string())
        };
        writeln!(
            out,
            "{},{},{},{},{},{},{},{},{},{},{},{}",
            r.started_unix,
            csv_field(&r.backend),
            csv_field(label),
            csv_field(&r.workload),
            csv_field(&r.distribution),
            r.clients,
            s,
            phase,
            ok,
            err,
            quantile(0.5),
            quantile(0.99)
        )
        .expect("write to string");
    }
    if r.workload == "load" {
        // The load phase's series is sized for its time limit: drop the
        // empty tail after it finished.
        let lines: Vec<&str> = out.lines().collect();
        let keep = lines
            .iter()
            .rposition(|l| !l.ends_with(",0,0,,"))
            .map_or(0, |i| i + 1);
        out = lines[..keep].iter().map(|l| format!("{l}\n")).collect();
    }
    out
}

/// Appends `rows` (newline-terminated) to the CSV at `path`, writing `header`
/// first when the file is new or empty; refuses a file whose header differs
/// (an older format), so that columns never silently shift.
pub fn append_csv(path: &Path, header: &str, rows: &str) -> anyhow::Result<()> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    }
    let existing = match std::fs::File::open(path) {
        Ok(f) => {
            let mut first = String::new();
            BufReader::new(f)
                .read_line(&mut first)
                .with_context(|| format!("reading {}", path.display()))?;
            Some(first.trim_end().to_string())
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => return Err(e).with_context(|| format!("opening {}", path.display())),
    };
    let mut out = String::new();
    match existing.as_deref() {
        None | Some("") => {
            out.push_str(header);
            out.push('\n');
        }
        Some(h) if h == header => {}
        Some(_) => bail!(
            "{} has a different header (another format); use a new file",
            path.display()
        ),
    }
    out.push_str(rows);
    let mut f = OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .with_context(|| format!("opening {}", path.display()))?;
    f.write_all(out.as_bytes())
        .with_context(|| format!("writing {}", path.display()))?;
    Ok(())
}

/// The table's header line.
pub fn table_header() -> String {
    format!(
        "{:<9} {:<9} {:<10} {:>7} {:>6} {:>11}  {:<6} {:>9} {:>8} {:>8} {:>8} {:>7}",
        "backend",
        "workload",
        "dist",
        "clients",
        "value",
        "ops/s",
        "op",
        "ops",
        "p50us",
        "p99us",
        "p999us",
        "errors"
    )
}

/// Table lines for one run: one per op type it issued.
pub fn table_rows(r: &RunResult) -> Vec<String> {
    let mut lines = Vec::new();
    let ops: Vec<OpType> = r.op_types().collect();
    if ops.is_empty() {
        lines.push(format!(
            "{:<9} {:<9} {:<10} {:>7} {:>6} {:>11.1}  (no operations)",
            r.backend,
            r.workload,
            r.distribution,
            r.clients,
            r.value_size,
            r.ops_per_sec()
        ));
    }
    for (i, op) in ops.into_iter().enumerate() {
        let s = r.ops.get(op);
        let name = if r.workload == "load" {
            "insert"
        } else {
            op.name()
        };
        let head = if i == 0 {
            format!(
                "{:<9} {:<9} {:<10} {:>7} {:>6} {:>11.1}",
                r.backend,
                r.workload,
                r.distribution,
                r.clients,
                r.value_size,
                r.ops_per_sec()
            )
        } else {
            format!("{:57}", "")
        };
        lines.push(format!(
            "{head}  {:<6} {:>9} {:>8} {:>8} {:>8} {:>7}",
            name,
            s.count(),
            s.quantile_us(0.5),
            s.quantile_us(0.99),
            s.quantile_us(0.999),
            s.errors
        ));
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::{OpSet, Series};
    use std::time::Duration;

    fn result() -> RunResult {
        let mut ops = OpSet::default();
        for us in [100u64, 200, 300] {
            ops.get_mut(OpType::Read).record(Duration::from_micros(us));
        }
        ops.get_mut(OpType::Update)
            .record(Duration::from_micros(1000));
        ops.get_mut(OpType::Update)
            .record_error(|| "boom, \"quoted\"".into());
        let mut series = Series::with_seconds(3);
        series.count(Duration::from_millis(100), true);
        series.count(Duration::from_millis(2100), false);
        RunResult {
            backend: "memory".into(),
            workload: "a".into(),
            distribution: "uniform".into(),
            clients: 2,
            connections: 1,
            value_size: 256,
            record_count: 10,
            warmup: Duration::from_secs(1),
            duration: Duration::from_secs(2),
            ops,
            series,
            started_unix: 42,
        }
    }

    fn parse_line(line: &str) -> Vec<String> {
        // A minimal CSV reader for the test: quoted fields with "" escapes.
        let mut fields = vec![String::new()];
        let mut quoted = false;
        let mut chars = line.chars().peekable();
        while let Some(c) = chars.next() {
            match (c, quoted) {
                ('"', true) if chars.peek() == Some(&'"') => {
                    chars.next();
                    fields.last_mut().unwrap().push('"');
                }
                ('"', _) => quoted = !quoted,
                (',', false) => fields.push(String::new()),
                (c, _) => fields.last_mut().unwrap().push(c),
            }
        }
        fields
    }

    #[test]
    fn rows_have_as_many_fields_as_the_header() {
        let header = results_header();
        let cols: Vec<&str> = header.split(',').collect();
        let row = parse_line(&results_row(&result(), "fsync, always"));
        assert_eq!(row.len(), cols.len());
        let get = |name: &str| row[cols.iter().position(|c| *c == name).unwrap()].as_str();
        assert_eq!(get("label"), "fsync, always");
        assert_eq!(get("ops"), "4");
        assert_eq!(get("ops_per_sec"), "2.0");
        assert_eq!(get("errors"), "1");
        assert_eq!(get("read_ops"), "3");
        assert_eq!(get("read_p50_us"), "200");
        assert_eq!(get("update_errors"), "1");
        assert_eq!(get("rmw_ops"), "");
        assert_eq!(get("first_error"), "boom, \"quoted\"");
    }

    #[test]
    fn append_writes_the_header_once_and_refuses_other_formats() {
        let dir = std::env::temp_dir().join(format!(
            "amulet-loadgen-csv-{}-{}",
            std::process::id(),
            crate::clock::unix_seconds()
        ));
        let path = dir.join("sub").join("results.csv");
        let r = result();
        append_csv(
            &path,
            &results_header(),
            &format!("{}\n", results_row(&r, "")),
        )
        .unwrap();
        append_csv(
            &path,
            &results_header(),
            &format!("{}\n", results_row(&r, "x")),
        )
        .unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 3);
        assert_eq!(lines[0], results_header());
        assert!(append_csv(&path, "other,header", "1,2\n").is_err());

        let series = dir.join("series.csv");
        append_csv(&series, SERIES_HEADER, &series_rows(&r, "")).unwrap();
        let text = std::fs::read_to_string(&series).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 4);
        // The test's series counts without latencies: no percentiles.
        assert_eq!(lines[1], "42,memory,,a,uniform,2,0,warmup,1,0,,");
        assert_eq!(lines[3], "42,memory,,a,uniform,2,2,measure,0,1,,");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn table_lists_each_op_type() {
        let rows = table_rows(&result());
        assert_eq!(rows.len(), 2);
        assert!(rows[0].starts_with("memory") && rows[0].contains("read"));
        assert!(rows[1].trim_start().starts_with("update"));
        assert!(table_header().contains("p999us"));
    }
}
