//! Nodes a client leaves out for a while (DMap §III-B routing): a node
//! that gave no answer to an attempt, or answered that it is behind, is
//! suspected for a span (two attempt timeouts by the client), so a client
//! that prefers one replica (`routing::preferred`) does not send every
//! operation to a dead or lagging node first. An attempt the node executed
//! (a command, or a session opening) clears it. `Resend::suspecting` leaves
//! the suspects out per partition, never leaving a partition without a
//! replica.

use crate::rules::Outcome;
use amulet_types::{NodeId, TimeMicros};
use std::collections::BTreeMap;

/// Suspected nodes and until when.
#[derive(Clone, Debug, Default)]
pub struct Suspects {
    until: BTreeMap<NodeId, TimeMicros>,
}

impl Suspects {
    /// Learns from an attempt's outcome at `node` at `now`.
    pub fn judge<R>(
        &mut self,
        node: NodeId,
        outcome: &Outcome<R>,
        now: TimeMicros,
        span_micros: u64,
    ) {
        match outcome {
            Outcome::NoAnswer(_) | Outcome::Behind(_) => {
                self.until
                    .insert(node, TimeMicros(now.0.saturating_add(span_micros)));
            }
            // It executed the command, or ordered and executed the
            // session's opening.
            Outcome::Done(_) | Outcome::SessionOk => {
                self.until.remove(&node);
            }
            _ => {}
        }
    }

    /// The nodes suspected at `now`, ascending.
    pub fn at(&self, now: TimeMicros) -> Vec<NodeId> {
        self.until
            .iter()
            .filter(|(_, until)| **until > now)
            .map(|(node, _)| *node)
            .collect()
    }
}
