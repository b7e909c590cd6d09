//! A closed-loop load generator inside the node, for benchmarking the
//! ordering layer without a client protocol in the way: it keeps `window`
//! values of its own outstanding, round-robin over `streams`, and measures
//! each value's latency from multicast to its delivery by the merge here.

use amulet_multicast::{Merged, MulticastError, MulticastNode};
use amulet_paxos::ProposeError;
use amulet_types::{NodeId, StreamId, TimeMicros, ValueId};
use bytes::Bytes;
use hdrhistogram::Histogram;
use serde::Serialize;
use std::collections::HashMap;

/// Latencies above this are clamped (a minute, in microseconds).
const LATENCY_MICROS_MAX: u64 = 60_000_000;

/// What to offer.
#[derive(Clone, Debug)]
pub struct LoadSpec {
    /// Streams to multicast to, round-robin.
    pub streams: Vec<StreamId>,
    /// Bytes per value.
    pub value_bytes: usize,
    /// Values of this node outstanding at once.
    pub window: usize,
    /// Measurement starts this long after the first offer (warm-up).
    pub warmup_micros: u64,
}

/// Figures measured over the measurement window (after warm-up).
#[derive(Clone, Debug, Default, Serialize)]
pub struct LoadReport {
    /// Values proposed by this node and delivered here in the window.
    pub values: u64,
    /// Payload bytes of those values.
    pub bytes: u64,
    /// Every value delivered here (any proposer) in the window.
    pub values_all: u64,
    /// Length of the measurement window.
    pub window_micros: u64,
    /// Median multicast-to-delivery latency of this node's values.
    pub latency_p50_micros: u64,
    /// 99th percentile latency.
    pub latency_p99_micros: u64,
    /// Highest latency.
    pub latency_max_micros: u64,
}

/// The generator's state.
pub struct LoadGenerator {
    spec: LoadSpec,
    me: NodeId,
    payload: Bytes,
    /// Keyed by stream too: value ids are numbered per stream.
    outstanding: HashMap<(StreamId, ValueId), TimeMicros>,
    next_stream: usize,
    histogram: Histogram<u64>,
    started: Option<TimeMicros>,
    measuring_since: Option<TimeMicros>,
    report: LoadReport,
}

impl LoadGenerator {
    /// A generator for node `me`. `spec.streams` must not be empty.
    pub fn new(me: NodeId, spec: LoadSpec) -> LoadGenerator {
        LoadGenerator {
            payload: Bytes::from(vec![0x5A; spec.value_bytes]),
            spec,
            me,
            outstanding: HashMap::new(),
            next_stream: 0,
            histogram: Histogram::new_with_bounds(1, LATENCY_MICROS_MAX, 3)
                .expect("static histogram bounds are valid"),
            started: None,
            measuring_since: None,
            report: LoadReport::default(),
        }
    }

    /// Tops the window up. Stops early when the node pushes back.
    pub fn offer(&mut self, now: TimeMicros, node: &mut MulticastNode) -> anyhow::Result<()> {
        let started = *self.started.get_or_insert(now);
        if self.measuring_since.is_none() && now.since(started) >= self.spec.warmup_micros {
            self.measuring_since = Some(now);
        }
        let streams = self.spec.streams.len();
        while self.outstanding.len() < self.spec.window {
            let stream = self.spec.streams[self.next_stream % streams];
            match node.multicast(now, stream, self.payload.clone()) {
                Ok(id) => {
                    self.next_stream += 1;
                    self.outstanding.insert((stream, id), now);
                }
                Err(MulticastError::Refused(ProposeError::Backpressure)) => break,
                Err(error) => anyhow::bail!("load generator cannot multicast: {error:?}"),
            }
        }
        Ok(())
    }

    /// Accounts for one delivery.
    pub fn delivered(&mut self, now: TimeMicros, merged: &Merged) {
        let Some(since) = self.measuring_since else {
            self.outstanding.remove(&(merged.stream, merged.value.id));
            return;
        };
        self.report.values_all += 1;
        if merged.value.id.proposer != self.me {
            return;
        }
        if let Some(sent) = self.outstanding.remove(&(merged.stream, merged.value.id)) {
            if sent >= since {
                self.report.values += 1;
                self.report.bytes += merged.value.bytes.len() as u64;
                let latency = now.since(sent).clamp(1, LATENCY_MICROS_MAX);
                let _ = self.histogram.record(latency);
            }
        }
    }

    /// The figures so far, with the window ending at `now`.
    pub fn report(&self, now: TimeMicros) -> LoadReport {
        let mut report = self.report.clone();
        report.window_micros = self.measuring_since.map_or(0, |t| now.since(t));
        if !self.histogram.is_empty() {
            report.latency_p50_micros = self.histogram.value_at_quantile(0.50);
            report.latency_p99_micros = self.histogram.value_at_quantile(0.99);
            report.latency_max_micros = self.histogram.max();
        }
        report
    }
}
