//! Deliberately broken variants of the protocol, for proving that the
//! simulator's checkers catch real mistakes. All are off by default; only
//! the simulator turns them on.

/// Bugs a [`crate::StreamNode`] can be told to have.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Bugs {
    /// An acceptor restarts with its promises forgotten (votes kept): it may
    /// vote in a ballot lower than one it promised before the crash.
    pub forget_promise_on_restart: bool,
    /// A learner delivers a batch when it sees phase 2, before the decision.
    pub deliver_before_decision: bool,
    /// A new coordinator ignores the votes reported in phase 1 and fills
    /// every reported instance with `Null`.
    pub ignore_phase1_votes: bool,
}
