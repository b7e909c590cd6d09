//! Process pauses (SIGSTOP, a long garbage collection, a VM migrated): the
//! process keeps its state but handles no message, timer or disk
//! completion until it resumes; what reaches it meanwhile waits, in
//! order, and is handled when it resumes, with the clock moved on. Rapid
//! (§4.1) is built so that pauses shorter than its failure detection
//! remove no one; the DMap swarm checks that under its workload.

use super::{Harness, SimMessage, Workload, TRACE_FAULT};
use crate::trace::TraceHash;
use amulet_types::{NodeId, TimeMicros};

/// A pause to start.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Pause {
    /// When it starts.
    pub at: TimeMicros,
    /// The node paused.
    pub node: NodeId,
    /// How long it lasts.
    pub micros: u64,
}

/// A node's pause under way: until when, and what reached it since.
#[derive(Debug, Default)]
pub struct Paused {
    /// When the process resumes.
    pub until: TimeMicros,
    /// Messages that reached it, in arrival order: (sender, message).
    pub held: Vec<(NodeId, SimMessage)>,
}

impl Harness {
    /// Schedules `pause`. A node down (or already paused) when it is due
    /// is not paused.
    pub fn pause_at(&mut self, pause: Pause) {
        self.pauses.push(pause);
        self.pauses.sort_by_key(|p| (p.at, p.node));
    }

    /// Pauses started so far.
    pub fn pauses_started(&self) -> u64 {
        self.pauses_started
    }

    /// Starts the pauses due, and resumes the processes whose pause is
    /// over: each handles what reached it meanwhile, in order.
    pub(super) fn pause_and_resume<W: Workload>(&mut self, workload: &mut W) {
        let now = self.now;
        while let Some(pause) = self.pauses.first().copied().filter(|p| p.at <= now) {
            self.pauses.remove(0);
            let Some(slot) = self.slots.get_mut(&pause.node) else {
                continue;
            };
            if slot.host.is_none() || slot.paused.is_some() {
                continue;
            }
            slot.paused = Some(Paused {
                until: now.plus(pause.micros),
                held: Vec::new(),
            });
            self.pauses_started += 1;
            self.trace.event(
                now,
                TRACE_FAULT,
                pause.node,
                pause.node,
                TraceHash::digest(&(0x7061_7573u64, pause.micros)),
            );
            if self.verbose {
                println!(
                    "t={}us fault pause {} for {}us",
                    now.0, pause.node, pause.micros
                );
            }
        }
        let over: Vec<NodeId> = self
            .slots
            .iter()
            .filter(|(_, s)| s.paused.as_ref().is_some_and(|p| p.until <= now))
            .map(|(n, _)| *n)
            .collect();
        for node in over {
            let paused = self
                .slots
                .get_mut(&node)
                .and_then(|s| s.paused.take())
                .expect("paused");
            if self.verbose {
                println!(
                    "t={}us {node} resumes with {} messages held",
                    now.0,
                    paused.held.len()
                );
            }
            for (from, message) in paused.held {
                self.deliver(workload, from, node, message);
            }
        }
    }
}
