//! Deterministic simulation of Amulet (TigerBeetle's VOPR, FoundationDB's
//! simulator): many sans-IO processes in one thread, virtual time, a faulty
//! network and a nemesis drawn per seed, and one checker per atomic
//! multicast property (thesis §2.5: integrity, agreement, partial order,
//! validity). A seed determines the whole run: `amulet-sim --seed N`
//! replays it, and two runs of a seed have the same trace hash.
//!
//! A run has two phases: a *safety phase* under faults, then a *healed*
//! phase without them, after which validity (liveness) is checked too.
#![deny(missing_docs)]

pub mod checker;
pub mod dmap;
pub mod dotted;
pub mod elastic;
pub mod harness;
pub mod history;
pub mod membership;
pub mod nemesis;
pub mod network;
pub mod order;
pub mod rng;
pub mod runner;
pub mod sim_log;
pub mod swarm;
pub mod trace;
pub mod violation;

pub use history::{History, LearnerRun, Proposal};
pub use nemesis::{CrashGroup, FaultEvent, Nemesis, NemesisConfig, NemesisStats};
pub use network::{Network, NetworkStats};
pub use rng::Rng;
pub use runner::{run_seed, run_swarm, SeedOutcome, SeedStats, SwarmSummary};
pub use swarm::{FaultOptions, NetworkOptions, PartitionKind, SwarmOptions, SwarmProfile};
pub use trace::TraceHash;
pub use violation::{Property, Violation};
