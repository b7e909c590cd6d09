//! A small swarm over one stream: loss, crashes and restarts of durable
//! acceptors, then healing. Checks uniform agreement on every instance and
//! that deliberately broken variants are caught. (The full multi-stream
//! simulator lives in `amulet-sim`.)
mod common;

use amulet_paxos::Bugs;
use amulet_types::NodeId;
use common::{config, Cluster, Rng};

/// Runs one seed; returns the agreement violations found.
fn run(seed: u64, bugs: Bugs) -> Vec<String> {
    let mut rng = Rng(seed ^ 0xA5A5);
    let mut cluster = Cluster::new(config(&[1, 2, 3], &[4]), seed);
    if bugs.ignore_phase1_votes || bugs.deliver_before_decision {
        for node in cluster.nodes.values_mut() {
            node.set_bugs(bugs);
        }
    }
    cluster.loss = (rng.next() % 20) as f64 / 100.0;
    let mut down_until: Vec<(NodeId, u64)> = Vec::new();
    for ms in 0..600u64 {
        if rng.chance(0.3) {
            let at = NodeId(1 + (rng.next() % 4) as u32);
            if !cluster.down.contains(&at) {
                cluster.propose(at, b"x");
            }
        }
        if down_until.is_empty() && rng.chance(0.01) {
            let victim = NodeId(1 + (rng.next() % 3) as u32);
            cluster.down.push(victim);
            down_until.push((victim, ms + 50 + rng.next() % 400));
        }
        if let Some(&(victim, until)) = down_until.first() {
            if ms >= until {
                down_until.clear();
                cluster.down.retain(|n| *n != victim);
                let restart_bugs = Bugs {
                    forget_promise_on_restart: bugs.forget_promise_on_restart,
                    ..bugs
                };
                cluster.restart(victim, restart_bugs);
            }
        }
        cluster.run(1_000);
    }
    cluster.down.clear();
    cluster.loss = 0.0;
    cluster.run(3_000_000);
    let mut violations = cluster.violations.clone();
    let reference = cluster.values_delivered(NodeId(4));
    for n in 1..=3 {
        let got = cluster.values_delivered(NodeId(n));
        let common = got.len().min(reference.len());
        if got[..common] != reference[..common] {
            violations.push(format!("seed {seed}: node {n} order differs from node 4"));
        }
    }
    violations
}

#[test]
fn swarm_of_crashes_and_loss_keeps_uniform_agreement_section_2_3() {
    for seed in 0..150 {
        let violations = run(seed, Bugs::default());
        assert!(violations.is_empty(), "seed {seed}: {violations:?}");
    }
}

/// A broken variant is caught when a checker reports a violation or an
/// invariant assertion in the core fires.
fn caught(bugs: Bugs, seeds: u64) -> bool {
    (0..seeds)
        .any(|seed| std::panic::catch_unwind(|| run(seed, bugs)).map_or(true, |v| !v.is_empty()))
}

#[test]
fn broken_variant_ignoring_phase1_votes_is_caught() {
    assert!(caught(
        Bugs {
            ignore_phase1_votes: true,
            ..Bugs::default()
        },
        300
    ));
}

#[test]
fn broken_variant_delivering_before_decision_is_caught() {
    assert!(caught(
        Bugs {
            deliver_before_decision: true,
            ..Bugs::default()
        },
        300
    ));
}
