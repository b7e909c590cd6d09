//! End-to-end tests of the harness through the toy: the correct toy passes
//! a swarm of seeds, each deliberately broken variant is caught by the
//! checker meant for it, and a seed replays with the same trace hash.

use super::*;
use crate::swarm::{FaultOptions, NetworkOptions, SwarmProfile};
use crate::violation::Property;

/// Short phases so tests stay fast.
fn short(mut options: SwarmOptions) -> SwarmOptions {
    options.safety_phase_micros = 2_000_000;
    options.liveness_phase_micros = 4_000_000;
    options
}

/// Lossy, reordering network; frequent sequencer crashes.
fn crashy_sequencer() -> SwarmOptions {
    let mut network = NetworkOptions::reliable(100, 30_000);
    network.loss_probability = 0.1;
    network.duplicate_probability = 0.1;
    let mut faults = FaultOptions::none();
    faults.coordinator_crash_interval_micros_mean = Some(300_000);
    faults.restart_delay_micros_min = 10_000;
    faults.restart_delay_micros_max = 100_000;
    short(SwarmOptions {
        profile: SwarmProfile::Swarm,
        network,
        faults,
        safety_phase_micros: 0,
        liveness_phase_micros: 0,
    })
}

fn properties(outcome: &SeedOutcome) -> Vec<Property> {
    let mut properties: Vec<Property> = outcome.violations.iter().map(|v| v.property).collect();
    properties.dedup();
    properties
}

#[test]
fn correct_toy_passes_a_swarm_of_seeds() {
    for seed in 0..40 {
        let outcome = run_seed(seed, false, ToyBug::None);
        assert_eq!(outcome.violations, vec![], "seed {seed}");
        assert!(outcome.stats.values_proposed > 0, "seed {seed}");
    }
}

#[test]
fn correct_toy_passes_with_crashes_and_delivers_everything() {
    for seed in 0..5 {
        let outcome = run_with(seed, crashy_sequencer(), ToyBug::None, false);
        assert_eq!(outcome.violations, vec![], "seed {seed}");
        assert!(outcome.stats.nemesis.coordinator_crashes > 0);
        assert!(outcome.stats.network.lost > 0);
    }
}

#[test]
fn same_seed_same_trace_hash_different_seed_different_hash() {
    let first = run_seed(7, false, ToyBug::None);
    let second = run_seed(7, false, ToyBug::None);
    assert_eq!(first, second);
    assert_ne!(
        first.trace_hash,
        run_seed(8, false, ToyBug::None).trace_hash
    );
}

#[test]
fn sequencer_forgetting_its_log_breaks_agreement() {
    let caught = (0..5).any(|seed| {
        let outcome = run_with(seed, crashy_sequencer(), ToyBug::SequencerForgetsLog, false);
        properties(&outcome).contains(&Property::Agreement)
    });
    assert!(
        caught,
        "agreement checker missed a sequencer that lost its log"
    );
}

#[test]
fn learner_redelivering_an_overlapping_reply_breaks_integrity() {
    let caught = (0..5).any(|seed| {
        let outcome = run_with(
            seed,
            crashy_sequencer(),
            ToyBug::LearnerRedeliversOverlap,
            false,
        );
        properties(&outcome).contains(&Property::Integrity)
    });
    assert!(
        caught,
        "integrity checker missed a learner delivering twice"
    );
}

#[test]
fn merging_by_stream_within_a_batch_breaks_only_partial_order() {
    let mut options = short(SwarmOptions::no_faults(0, 0));
    options.network = NetworkOptions::reliable(100, 20_000);
    let caught = (0..10).any(|seed| {
        let outcome = run_with(
            seed,
            options.clone(),
            ToyBug::MergeByStreamWithinBatch,
            false,
        );
        let found = properties(&outcome);
        assert!(
            !found.contains(&Property::Agreement),
            "per-stream order holds"
        );
        found.contains(&Property::Order)
    });
    assert!(
        caught,
        "order checker missed learners merging streams differently"
    );
}
