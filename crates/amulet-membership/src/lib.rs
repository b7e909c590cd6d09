//! Consistent membership (SCONEKV §2, after Rapid): the cluster view as
//! replicated state, changed only by commands ordered on the global
//! stream, and a failure detector in which every node is watched by up to
//! K observers and removed only on a *stable cut*.
//!
//! Rapid reaches agreement on a cut with Fast Paxos; here the observers'
//! alerts are themselves ordered on the global stream, so every node feeds
//! the same alerts in the same order to the same deterministic
//! [`Membership`] and installs the same sequence of views without a
//! consensus of its own (the ordering layer is the consensus).
//!
//! - [`View`]: the members, their addresses and states, the ids ever used
//!   (never reused) and the K observer rings.
//! - [`CutDetector`]: per subject, which observers reported a change and
//!   which reported none; the high and low watermarks H and L; implicit
//!   reports between subjects in flux.
//! - [`Membership`]: the replicated state machine: `apply(Command)`.
//! - [`Monitor`]: one node's edge failure detector (probes, time as an
//!   input) that turns what it sees into commands to propose.
#![deny(missing_docs)]

mod cut;
mod membership;
mod monitor;
mod view;

pub use cut::{CutDetector, Opinion, SubjectReports, Thresholds};
pub use membership::{Applied, Command, Membership, MembershipBug, ViewChange};
pub use monitor::{Monitor, MonitorConfig, MonitorOutput};
pub use view::{Member, MemberState, View, ViewId, K_MAX};
