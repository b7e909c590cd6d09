//! Each deliberately broken variant of the protocol must be caught by the
//! checkers within a bounded number of seeds (TigerBeetle's "a bug the
//! simulator cannot find is a hole in the simulator"). A variant counts as
//! caught when a checker reports a violation or an invariant assertion in
//! the protocol fires (a panic), whichever comes first.

use amulet_sim::cluster::{run_seed, Bug};
use amulet_sim::runner::run_catching;
use std::panic;

/// Seeds tried per variant before giving up.
const SEEDS_MAX: u64 = 300;

/// The first seed (if any) on which `bug` is caught, and how.
fn first_catch(bug: Bug) -> Option<(u64, String)> {
    let hook = panic::take_hook();
    panic::set_hook(Box::new(|_| {}));
    let caught = (0..SEEDS_MAX).find_map(|seed| {
        let outcome = run_catching(seed, &|seed| run_seed(seed, false, bug));
        let first = outcome.violations.first()?;
        Some((seed, first.to_string()))
    });
    panic::set_hook(hook);
    caught
}

fn assert_caught(bug: Bug) {
    match first_catch(bug) {
        Some((seed, how)) => println!("{bug:?} caught at seed {seed}: {how}"),
        None => panic!("{bug:?} survived {SEEDS_MAX} seeds: the checkers missed it"),
    }
}

#[test]
fn section_2_4_acceptor_that_forgets_its_promise_on_restart_is_caught() {
    assert_caught(Bug::ForgetPromiseOnRestart);
}

#[test]
fn section_3_4_1_memory_acceptor_that_votes_after_losing_its_log_is_caught() {
    assert_caught(Bug::AmnesiacAcceptorVotes);
}

#[test]
fn section_2_4_learner_that_delivers_before_the_decision_is_caught() {
    assert_caught(Bug::DeliverBeforeDecision);
}

#[test]
fn section_2_4_coordinator_that_ignores_phase_1_votes_is_caught() {
    assert_caught(Bug::IgnorePhase1Votes);
}

#[test]
fn section_3_3_merge_that_ignores_skip_counts_is_caught() {
    assert_caught(Bug::MergeIgnoresSkipCounts);
}
