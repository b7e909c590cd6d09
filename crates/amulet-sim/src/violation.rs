//! A broken property, as a checker reports it.

use std::fmt;

/// The atomic multicast properties (thesis §2.5) the checkers verify.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Property {
    /// No duplicates, nothing unproposed, nothing from an unsubscribed
    /// stream.
    Integrity,
    /// Uniform agreement: per stream, any two learners' sequences are
    /// prefixes of one another.
    Agreement,
    /// Partial order: the precedence relation over all learners is acyclic.
    Order,
    /// Everything a correct proposer multicast reaches every correct
    /// subscriber (checked after the healed phase).
    Validity,
    /// A replicated service's history has no linearization (DMap: every
    /// operation appears to take effect at one instant between its call
    /// and its reply, in an order a sequential map explains).
    Linearizability,
    /// A transactional history is not strictly serializable (a
    /// dependency cycle, or one with real-time edges: G0, G1, G2, ...).
    StrictSerializability,
    /// After healing, clients' operations complete.
    Progress,
    /// Eventual maps: replicas of a key hold different versions once
    /// anti-entropy is quiescent.
    Convergence,
    /// Eventual maps: a key's final versions are not exactly the written
    /// values no later write saw (one lost, resurrected or invented).
    Causality,
    /// Eventual maps: tombstones, unstripped contexts or dot-key entries
    /// left once quiescent.
    Garbage,
    /// An invariant the protocol asserts about itself failed (the run
    /// panicked); a protocol-level safety check fired before any checker.
    Invariant,
    /// Access control: two replicas held different access configurations
    /// at the same global position (a grant or revocation took effect at
    /// different points of the order).
    AccessAgreement,
    /// Membership: two replicas held different memberships at the same
    /// global position (an alert or a cut took effect at different points
    /// of the order, so nodes could install different views).
    MembershipAgreement,
}

/// One violation, with a message naming nodes, values and positions.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Violation {
    /// Which property broke.
    pub property: Property,
    /// What was seen, for a human reading a failed seed.
    pub message: String,
}

impl Violation {
    /// A violation of `property`.
    pub fn new(property: Property, message: impl Into<String>) -> Violation {
        Violation {
            property,
            message: message.into(),
        }
    }
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:?}: {}", self.property, self.message)
    }
}
