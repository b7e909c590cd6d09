//! One node's edge failure detector (Rapid §4.1's edge monitors), sans-IO:
//! time is an input, probes and proposals are outputs.
//!
//! The node probes each subject it observes every `probe_interval`. An
//! edge *fails* when no reply came for `failure_after` (longer than the
//! pauses the cluster must ride out: a 4 s SIGSTOP is not a failure). The
//! monitor then wants its opinion recorded in the replicated reports and
//! proposes `Alert`s until it is:
//! - a member whose edge failed: `Change`; when replies come back and a
//!   `Change` of ours stands: `Stay` (a retraction);
//! - a joiner that answers: `Change` (admit); one that never answers
//!   within `failure_after`: `Stay`;
//! - reinforcement: a subject unstable for `reinforce_after` gets our
//!   opinion whatever it is, so that the cut detector can resolve it.
//!
//! A subject is heard at the time a probe it answered was *sent*, not when
//! the answer arrived: a node paused for a while reads its peers' old
//! answers when it resumes, and they say nothing of the peers since.
//!
//! When a cut is ready (stable subjects, none unstable) for `settle`, the
//! monitor proposes `Cut`: the wait lets a burst of failures detected a
//! little apart become one view change.

use crate::cut::Opinion;
use crate::membership::{Command, Membership};
use crate::view::{MemberState, ViewId};
use amulet_types::{NodeId, TimeMicros};
use std::collections::BTreeMap;

/// The monitor's timing, in microseconds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MonitorConfig {
    /// Between two probes of one subject.
    pub probe_interval_micros: u64,
    /// Silence after which an edge has failed.
    pub failure_after_micros: u64,
    /// How long a subject stays unstable before every observer is asked.
    pub reinforce_after_micros: u64,
    /// How long a cut stays ready before it is proposed.
    pub settle_micros: u64,
    /// Between two proposals of one opinion or cut still not applied.
    pub resend_after_micros: u64,
}

impl Default for MonitorConfig {
    /// Removal within 5 s of a crash, none for a 4 s pause: probes every
    /// 100 ms (a 4 s pause is at most about 4.25 s of silence with one
    /// probe lost), failure after 4.5 s of silence, 200 ms to settle.
    fn default() -> MonitorConfig {
        MonitorConfig {
            probe_interval_micros: 100_000,
            failure_after_micros: 4_500_000,
            reinforce_after_micros: 1_000_000,
            settle_micros: 200_000,
            resend_after_micros: 1_000_000,
        }
    }
}

/// What the monitor asks its host to do.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum MonitorOutput {
    /// Send a probe to `to`; its reply goes to [`Monitor::on_reply`].
    Probe {
        /// The subject.
        to: NodeId,
        /// Echoed by the reply.
        nonce: u64,
    },
    /// Propose a command on the global stream.
    Propose(Command),
}

/// Probes kept per edge waiting for their answers (older ones are
/// forgotten: their answers could only say less than newer ones).
const PROBES_KEPT: usize = 128;

#[derive(Clone, Debug, Default)]
struct Edge {
    /// When this edge began to be watched.
    since: TimeMicros,
    last_probe: Option<TimeMicros>,
    /// The send time of the latest probe answered.
    heard: Option<TimeMicros>,
    /// Probes sent and not answered: nonce to send time.
    probes: BTreeMap<u64, TimeMicros>,
}

impl Edge {
    fn new(now: TimeMicros) -> Edge {
        Edge {
            since: now,
            ..Edge::default()
        }
    }

    fn failed(&self, now: TimeMicros, config: &MonitorConfig) -> bool {
        now.since(self.heard.unwrap_or(self.since).max(self.since)) >= config.failure_after_micros
    }
}

/// One node's monitor.
#[derive(Clone, Debug)]
pub struct Monitor {
    me: NodeId,
    config: MonitorConfig,
    view: Option<ViewId>,
    edges: BTreeMap<NodeId, Edge>,
    /// When each unstable subject was first seen unstable.
    unstable_since: BTreeMap<NodeId, TimeMicros>,
    ready_since: Option<TimeMicros>,
    /// The last proposal about each subject (None: the cut) and when.
    sent: BTreeMap<Option<NodeId>, (Command, TimeMicros)>,
    next_nonce: u64,
    /// Whether the membership this monitor is given is a copy no replica
    /// here executes (a node running no replica learns a peer's only when
    /// the view changes): its reports may be stale, so the opinions
    /// recorded in it are not trusted (see [`Monitor::set_copy_unexecuted`]).
    copy_unexecuted: bool,
}

impl Monitor {
    /// The monitor of node `me`.
    pub fn new(me: NodeId, config: MonitorConfig) -> Monitor {
        Monitor {
            me,
            config,
            view: None,
            edges: BTreeMap::new(),
            unstable_since: BTreeMap::new(),
            ready_since: None,
            sent: BTreeMap::new(),
            next_nonce: 1,
            copy_unexecuted: false,
        }
    }

    /// Says whether the membership given to [`Monitor::tick`] is a copy no
    /// local replica executes. Within one view such a copy keeps the
    /// reports it was learned with: an observer that said a subject
    /// failed, then retracted when it answered again, then saw it fail for
    /// good read its first report in the copy and never sent the second,
    /// and the subject was never cut (simulator seed 1000117 of `--dmap`,
    /// node 5 after its replicas moved away). With a copy, a wanted
    /// opinion is proposed again every `resend_after_micros` until the
    /// view changes.
    pub fn set_copy_unexecuted(&mut self, unexecuted: bool) {
        self.copy_unexecuted = unexecuted;
    }

    /// The subjects watched now.
    pub fn subjects(&self) -> Vec<NodeId> {
        self.edges.keys().copied().collect()
    }

    /// A reply to probe `nonce` from `from` arrived.
    pub fn on_reply(&mut self, from: NodeId, nonce: u64) {
        if let Some(edge) = self.edges.get_mut(&from) {
            if let Some(sent) = edge.probes.remove(&nonce) {
                edge.heard = Some(edge.heard.map_or(sent, |heard| heard.max(sent)));
                edge.probes.retain(|&n, _| n > nonce);
            }
        }
    }

    /// Follows the view in `membership`. A new view restarts the reports
    /// (nothing of ours is recorded in it), but an edge this node still
    /// watches keeps what it heard, so that a failure under way when the
    /// view changed is not detected any later.
    fn follow(&mut self, membership: &Membership, now: TimeMicros) {
        let view = membership.view();
        if self.view != Some(view.id()) {
            self.view = Some(view.id());
            self.unstable_since.clear();
            self.ready_since = None;
            self.sent.clear();
        }
        // Joiners also appear within a view.
        let subjects = view.subjects_of(self.me);
        self.edges.retain(|subject, _| subjects.contains(subject));
        for subject in subjects {
            self.edges.entry(subject).or_insert_with(|| Edge::new(now));
        }
    }

    /// What this node wants recorded about `subject` now, if anything.
    fn wanted(&self, membership: &Membership, subject: NodeId, now: TimeMicros) -> Option<Opinion> {
        let edge = self.edges.get(&subject)?;
        let in_copy = membership.reports(subject).opinion_of(self.me);
        let recorded = if self.copy_unexecuted {
            // This monitor's own last alert is newer news than the copy.
            self.last_sent(subject).or(in_copy)
        } else {
            in_copy
        };
        let joiner = membership.view().state(subject) == Some(MemberState::Joining);
        let reinforce = self
            .unstable_since
            .get(&subject)
            .is_some_and(|since| now.since(*since) >= self.config.reinforce_after_micros);
        let failed = edge.failed(now, &self.config);
        let honest = if joiner {
            if failed {
                Some(Opinion::Stay)
            } else if edge.heard.is_some() {
                Some(Opinion::Change)
            } else {
                None
            }
        } else if failed {
            Some(Opinion::Change)
        } else if recorded == Some(Opinion::Change) && edge.heard.is_some() {
            // Only an answer retracts: a monitor that just started
            // watching (a restart) has heard nothing yet.
            Some(Opinion::Stay)
        } else if reinforce {
            Some(Opinion::Stay)
        } else {
            None
        };
        match honest {
            Some(opinion) if recorded != Some(opinion) => {
                // A stay opinion is only news when asked for or retracting,
                // or about a joiner: there it says "unreachable", and a
                // joiner every observer finds so is refused (`CutDetector::
                // resolve`).
                (opinion == Opinion::Change || reinforce || recorded.is_some() || joiner)
                    .then_some(opinion)
            }
            // A copy cannot show whether a failure report was recorded
            // (or retracted since and spent): it is proposed again, every
            // `resend_after_micros`, until the view changes.
            Some(Opinion::Change) if self.copy_unexecuted => Some(Opinion::Change),
            // Likewise a stay opinion asked for: it resolves the subject
            // only if recorded, and a lost proposal would leave it
            // unstable for good (`amulet-sim --dmap --seed 9008124`).
            Some(Opinion::Stay)
                if self.copy_unexecuted && reinforce && in_copy != Some(Opinion::Stay) =>
            {
                Some(Opinion::Stay)
            }
            _ => None,
        }
    }

    /// The opinion about `subject` this monitor last proposed in the
    /// current view (proposals are forgotten at a view change).
    fn last_sent(&self, subject: NodeId) -> Option<Opinion> {
        match self.sent.get(&Some(subject)) {
            Some((Command::Alert { opinion, .. }, _)) => Some(*opinion),
            _ => None,
        }
    }

    /// Proposes `command` about `key` unless the same was proposed within
    /// `resend_after`.
    fn propose(
        &mut self,
        key: Option<NodeId>,
        command: Command,
        now: TimeMicros,
        out: &mut Vec<MonitorOutput>,
    ) {
        if let Some((last, at)) = self.sent.get(&key) {
            if *last == command && now.since(*at) < self.config.resend_after_micros {
                return;
            }
        }
        self.sent.insert(key, (command.clone(), now));
        out.push(MonitorOutput::Propose(command));
    }

    /// Advances to `now` against the node's copy of the membership; returns
    /// probes to send and commands to propose.
    pub fn tick(&mut self, membership: &Membership, now: TimeMicros) -> Vec<MonitorOutput> {
        let mut out = Vec::new();
        if !membership.view().is_member(self.me) {
            return out;
        }
        self.follow(membership, now);
        let view = membership.view().id();
        let evaluation = membership.evaluate();
        self.unstable_since
            .retain(|subject, _| evaluation.unstable.contains(subject));
        for &subject in &evaluation.unstable {
            self.unstable_since.entry(subject).or_insert(now);
        }
        let subjects: Vec<NodeId> = self.edges.keys().copied().collect();
        for subject in subjects {
            let edge = self.edges.get_mut(&subject).expect("listed");
            if edge
                .last_probe
                .is_none_or(|at| now.since(at) >= self.config.probe_interval_micros)
            {
                edge.last_probe = Some(now);
                edge.probes.insert(self.next_nonce, now);
                if edge.probes.len() > PROBES_KEPT {
                    edge.probes.pop_first();
                }
                out.push(MonitorOutput::Probe {
                    to: subject,
                    nonce: self.next_nonce,
                });
                self.next_nonce += 1;
            }
            if let Some(opinion) = self.wanted(membership, subject, now) {
                let command = Command::Alert {
                    view,
                    observer: self.me,
                    subject,
                    opinion,
                };
                self.propose(Some(subject), command, now, &mut out);
            }
        }
        // A cut that removes this node is proposed by another member
        // (`Membership::apply_proposed` ignores it from this one).
        match membership.ready_cut().filter(|cut| !cut.contains(&self.me)) {
            Some(_) => {
                let since = *self.ready_since.get_or_insert(now);
                if now.since(since) >= self.config.settle_micros {
                    self.propose(None, Command::Cut { view }, now, &mut out);
                }
            }
            None => self.ready_since = None,
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::membership::{Applied, MembershipBug};

    fn membership(members: usize) -> Membership {
        Membership::new(crate::view::test_view(members), MembershipBug::None)
    }

    fn proposals(out: &[MonitorOutput]) -> Vec<Command> {
        out.iter()
            .filter_map(|o| match o {
                MonitorOutput::Propose(c) => Some(c.clone()),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn rapid_4_1_a_silent_subject_is_reported_after_failure_after_and_not_before() {
        let m = membership(3);
        let config = MonitorConfig::default();
        let mut monitor = Monitor::new(NodeId(1), config);
        let mut now = TimeMicros(0);
        let mut reported_at = None;
        while now.0 < 10_000_000 && reported_at.is_none() {
            let out = monitor.tick(&m, now);
            for o in &out {
                if let MonitorOutput::Probe { to, nonce } = o {
                    // Node 3 answers, node 2 is silent.
                    if *to == NodeId(3) {
                        monitor.on_reply(*to, *nonce);
                    }
                }
            }
            if let Some(Command::Alert {
                subject, opinion, ..
            }) = proposals(&out).first()
            {
                assert_eq!((*subject, *opinion), (NodeId(2), Opinion::Change));
                reported_at = Some(now);
            }
            now = now.plus(50_000);
        }
        let at = reported_at.expect("reported").0;
        assert!(
            (config.failure_after_micros..config.failure_after_micros + 100_000).contains(&at),
            "{at}"
        );
    }

    #[test]
    fn rapid_4_2_a_cut_is_proposed_once_ready_for_settle() {
        let mut m = membership(3);
        for observer in [NodeId(1), NodeId(3)] {
            let alert = Command::Alert {
                view: ViewId(1),
                observer,
                subject: NodeId(2),
                opinion: Opinion::Change,
            };
            assert!(matches!(m.apply(&alert), Applied::Reported { .. }));
        }
        let config = MonitorConfig::default();
        let mut monitor = Monitor::new(NodeId(1), config);
        assert!(proposals(&monitor.tick(&m, TimeMicros(0))).is_empty());
        let later = proposals(&monitor.tick(&m, TimeMicros(config.settle_micros)));
        assert!(
            later.contains(&Command::Cut { view: ViewId(1) }),
            "{later:?}"
        );
    }

    /// Node 1 runs no replica: its membership is a copy learned at the
    /// view's start, which still records its report that node 2 failed
    /// (since retracted and spent in the replicated state). Node 2 now
    /// fails for good: trusting the copy, the monitor would never report
    /// it again; told the copy is unexecuted, it reports it, and again
    /// after `resend_after_micros`.
    #[test]
    fn rapid_4_1_a_monitor_on_an_unexecuted_copy_reports_a_failure_the_copy_shows_reported() {
        let mut copy = membership(3);
        let report = Command::Alert {
            view: ViewId(1),
            observer: NodeId(1),
            subject: NodeId(2),
            opinion: Opinion::Change,
        };
        assert!(matches!(copy.apply(&report), Applied::Reported { .. }));
        let config = MonitorConfig::default();
        // Failure reports about node 2 (stay opinions reinforce the copy's
        // unstable subject before it fails: not counted).
        let alerts_about_2 = |copy_unexecuted: bool| {
            let mut monitor = Monitor::new(NodeId(1), config);
            monitor.set_copy_unexecuted(copy_unexecuted);
            let mut now = TimeMicros(0);
            let mut alerts = 0;
            while now.0 < config.failure_after_micros + 2 * config.resend_after_micros + 100_000 {
                let out = monitor.tick(&copy, now);
                alerts += proposals(&out)
                    .iter()
                    .filter(|c| {
                        matches!(
                            c,
                            Command::Alert {
                                subject: NodeId(2),
                                opinion: Opinion::Change,
                                ..
                            }
                        )
                    })
                    .count();
                now = now.plus(50_000);
            }
            alerts
        };
        assert_eq!(alerts_about_2(false), 0, "the copy says it is reported");
        assert!(alerts_about_2(true) >= 2, "reported, then again");
    }

    /// Node 1 runs no replica; node 3 reported node 2 (alive), which is
    /// unstable until every observer spoke. A stay opinion proposed from
    /// a copy may be lost with its proposal, and the copy cannot show it:
    /// the monitor says it again every `resend_after_micros` while the
    /// copy does not record it (`amulet-sim --dmap --seed 9008124`: the
    /// cut of a dead node waited for good on one such opinion).
    #[test]
    fn rapid_4_2_a_monitor_on_an_unexecuted_copy_says_a_stay_opinion_asked_for_again() {
        let mut copy = membership(3);
        let report = Command::Alert {
            view: ViewId(1),
            observer: NodeId(3),
            subject: NodeId(2),
            opinion: Opinion::Change,
        };
        assert!(matches!(copy.apply(&report), Applied::Reported { .. }));
        assert_eq!(copy.evaluate().unstable, vec![NodeId(2)]);
        let config = MonitorConfig::default();
        let mut monitor = Monitor::new(NodeId(1), config);
        monitor.set_copy_unexecuted(true);
        let mut now = TimeMicros(0);
        let mut stays = 0;
        // Before node 2's silence counts as a failure.
        while now.0 < config.failure_after_micros - 100_000 {
            let out = monitor.tick(&copy, now);
            stays += proposals(&out)
                .iter()
                .filter(|c| {
                    matches!(
                        c,
                        Command::Alert {
                            subject: NodeId(2),
                            opinion: Opinion::Stay,
                            ..
                        }
                    )
                })
                .count();
            now = now.plus(50_000);
        }
        assert!(stays >= 2, "asked for, said, and said again: {stays}");
    }
}
