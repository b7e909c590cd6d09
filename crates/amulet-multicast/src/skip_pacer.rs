//! Rate leveling at a stream's coordinator (thesis §3.3, §3.4.3).
//!
//! Every Δ the coordinator compares the merge weight it proposed (value
//! instances count one, skips their count) with λ·elapsed and proposes one
//! skip instance for the difference, so that every stream advances at
//! least λ instances per second and the merge at learners never waits on
//! an idle stream for longer than about Δ.
//!
//! Latency compensation (eq. 3.6): the skip also covers the time it takes
//! to reach the learners, `avg_delay`, so a skip does not arrive "late"
//! for the instant it stands for. The thesis prints the equation as
//! `λ·(t_now − t_ref − avg_delay) − skipped`, but its text says the intent
//! is to skip *additional* instances to make up for the travel time; the
//! sign that does that is `+avg_delay`, which is what we implement:
//!
//! `skips(t_now) = λ·(t_now − t_ref + avg_delay) − counted`
//!
//! The count is cumulative from the moment this coordinator took over
//! (its ballot), never reset while it coordinates: both a deficit and a
//! surplus carry forward. An earlier version slid the reference every
//! second, forgiving run-ahead but carrying deficits; the simulator (seed
//! 1799) showed that this ratchets: every swing of `avg_delay` or burst of
//! traffic pushed a stream further ahead of the others, until one stream
//! was 30 seconds of weight ahead and its values waited that long in the
//! merge. With a cumulative count a surplus is simply not skipped again.
//!
//! What a stalled coordinator owes is proposed in one skip when it resumes,
//! which lets learners drain the other streams' backlog. A *new*
//! coordinator (new ballot) starts its count afresh: the time the stream
//! had no coordinator is not made up, so the merge keeps that lag; see
//! docs/ARCHITECTURE.md, known limitations.

use amulet_types::TimeMicros;

/// Weight of a new sample in the decision-delay average (1/8, like TCP's SRTT).
const DELAY_EWMA_SHIFT: u32 = 3;

/// Decides when and how many instances a coordinator skips.
#[derive(Clone, Debug)]
pub struct SkipPacer {
    rate_per_second: u64,
    interval_micros: u64,
    reference: TimeMicros,
    next_due: TimeMicros,
    /// Merge weight proposed since `reference` (values and skips).
    counted: u64,
    /// Average delay from proposal to decision, micros.
    avg_delay_micros: u64,
    skips_proposed: u64,
}

impl SkipPacer {
    /// A pacer keeping the stream at `rate_per_second` (λ), checking every
    /// `interval_micros` (Δ). λ = 0 disables skipping.
    pub fn new(rate_per_second: u64, interval_micros: u64, now: TimeMicros) -> SkipPacer {
        assert!(interval_micros > 0, "Δ must be positive");
        SkipPacer {
            rate_per_second,
            interval_micros,
            reference: now,
            next_due: now.plus(interval_micros),
            counted: 0,
            avg_delay_micros: 0,
            skips_proposed: 0,
        }
    }

    /// Starts over (a new ballot: the previous coordinator's count is not ours).
    pub fn reset(&mut self, now: TimeMicros) {
        self.reference = now;
        self.next_due = now.plus(self.interval_micros);
        self.counted = 0;
    }

    /// The coordinator proposed instances of this total merge weight.
    pub fn record_proposed(&mut self, weight: u64) {
        self.counted = self.counted.saturating_add(weight);
    }

    /// A measured delay from proposal to decision.
    pub fn record_decision_delay(&mut self, delay_micros: u64) {
        if self.avg_delay_micros == 0 {
            self.avg_delay_micros = delay_micros;
        } else {
            let avg = self.avg_delay_micros as i64;
            let sample = delay_micros as i64;
            self.avg_delay_micros = (avg + ((sample - avg) >> DELAY_EWMA_SHIFT)).max(0) as u64;
        }
    }

    /// The current average decision delay, micros.
    pub fn avg_delay_micros(&self) -> u64 {
        self.avg_delay_micros
    }

    /// Total skip weight this pacer asked for.
    pub fn skips_proposed(&self) -> u64 {
        self.skips_proposed
    }

    /// Called on every tick; returns the skip count to propose now, if any.
    /// The caller reports the skip through [`SkipPacer::record_proposed`]
    /// with the rest of the proposed weight.
    pub fn on_tick(&mut self, now: TimeMicros) -> Option<u64> {
        if self.rate_per_second == 0 || now < self.next_due {
            return None;
        }
        self.next_due = now.plus(self.interval_micros);
        let owed = self.owed(now);
        self.take(owed)
    }

    fn owed(&self, now: TimeMicros) -> u64 {
        let horizon_micros = now.since(self.reference) + self.avg_delay_micros;
        let target = self.rate_per_second as u128 * horizon_micros as u128 / 1_000_000;
        target
            .saturating_sub(self.counted as u128)
            .min(u64::MAX as u128) as u64
    }

    fn take(&mut self, owed: u64) -> Option<u64> {
        if owed == 0 {
            return None;
        }
        self.skips_proposed += owed;
        Some(owed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thesis_3_3_idle_stream_skips_lambda_per_second() {
        let mut p = SkipPacer::new(20_000, 2_000, TimeMicros(0));
        let mut total = 0;
        for t in (0..=1_000_000).step_by(1_000) {
            if let Some(k) = p.on_tick(TimeMicros(t)) {
                p.record_proposed(k);
                total += k;
            }
        }
        assert!((19_900..=20_100).contains(&total), "skipped {total}");
    }

    #[test]
    fn surplus_from_delay_swings_is_not_skipped_again() {
        let mut p = SkipPacer::new(10_000, 2_000, TimeMicros(0));
        let mut total = 0;
        for t in (0..=10_000_000u64).step_by(2_000) {
            // The decision delay swings between 0 and 500 ms every second.
            let delay = if (t / 1_000_000) % 2 == 0 { 0 } else { 500_000 };
            p.record_decision_delay(delay);
            if let Some(k) = p.on_tick(TimeMicros(t)) {
                p.record_proposed(k);
                total += k;
            }
        }
        // λ·10 s, plus at most λ·(the largest average delay).
        assert!(total <= 10_000 * 10 + 10_000 / 2 + 100, "skipped {total}");
    }

    #[test]
    fn thesis_3_3_busy_stream_does_not_skip() {
        let mut p = SkipPacer::new(1_000, 2_000, TimeMicros(0));
        for t in (0..100_000).step_by(1_000) {
            p.record_proposed(5); // 5 per ms = 5000/s > λ.
            assert_eq!(p.on_tick(TimeMicros(t)), None);
        }
    }

    #[test]
    fn thesis_3_4_3_latency_compensation_skips_ahead_by_avg_delay() {
        let mut plain = SkipPacer::new(10_000, 2_000, TimeMicros(0));
        let mut compensated = SkipPacer::new(10_000, 2_000, TimeMicros(0));
        compensated.record_decision_delay(10_000);
        let a = plain.on_tick(TimeMicros(2_000)).unwrap();
        let b = compensated.on_tick(TimeMicros(2_000)).unwrap();
        assert_eq!(a, 20);
        assert_eq!(b, 120); // λ·(2 ms + 10 ms).
    }

    #[test]
    fn a_stalled_coordinator_makes_up_the_stall_in_one_skip() {
        let mut p = SkipPacer::new(20_000, 2_000, TimeMicros(0));
        let k = p.on_tick(TimeMicros(60_000_000)).unwrap();
        assert_eq!(k, 1_200_000);
        p.record_proposed(k);
        let next = p.on_tick(TimeMicros(60_002_000)).unwrap();
        assert_eq!(next, 40);
    }
}
