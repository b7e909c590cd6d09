//! Rapid's multi-node cut detection (Suresh et al., §4.2), over alerts
//! that arrive in one total order.
//!
//! A subject's observers report an *opinion* about it: `Change` (a member
//! is unreachable, or a joiner is reachable) or `Stay`. With `c` change
//! reports about a subject of `k` observers, and watermarks H and L:
//! - `c >= H`: the subject is *stable*, it belongs in the next cut;
//! - `L <= c < H`: it is *unstable*, and no cut is made while any subject
//!   is (a burst of failures becomes one view change, not several);
//! - an observer that is itself stable or unstable counts as a change
//!   report about the subjects it observes (Rapid's implicit edges: a
//!   failed observer cannot report).
//!
//! Rapid leaves a subject unstable until its reports reach H. With small
//! clusters (L = 1) one broken link would then block every cut, so here
//! an unstable subject is *resolved*: once every one of its observers has
//! an opinion (the [`crate::Monitor`] asks them after a while) and fewer
//! than H say change, the subject stops blocking cuts at that many change
//! reports (`resolved`); the reports stay, so that when more observers
//! report it later (it really failed) it is unstable or stable again. A
//! joiner resolved that way is refused.

use crate::view::{MemberState, View};
use amulet_types::NodeId;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};

/// What an observer says about a subject.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Opinion {
    /// A member: unreachable, remove it. A joiner: reachable, admit it.
    Change,
    /// The opposite: leave the subject as it is.
    Stay,
}

/// The watermarks for a subject with `k` observers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Thresholds {
    /// H: change reports that make a subject stable.
    pub high: usize,
    /// L: change reports that make it unstable.
    pub low: usize,
}

impl Thresholds {
    /// Rapid's K = 10, H = 9, L = 3, scaled to `k` observers: H = ceil(0.9
    /// k), L = max(1, floor(0.3 k)). On three nodes (k = 2) both other
    /// nodes must report a failure.
    pub fn for_observers(k: usize) -> Thresholds {
        let high = (k * 9).div_ceil(10).max(1);
        let low = (k * 3 / 10).clamp(1, high);
        Thresholds { high, low }
    }
}

/// The reports about one subject in the current view.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SubjectReports {
    /// Explicit change reports at which the subject was resolved: it is
    /// not in flux until it has more (0: never resolved).
    pub resolved: usize,
    /// Observers whose opinion is `Change`.
    pub change: BTreeSet<NodeId>,
    /// Observers whose opinion is `Stay`.
    pub stay: BTreeSet<NodeId>,
}

impl SubjectReports {
    /// `observer`'s recorded opinion.
    pub fn opinion_of(&self, observer: NodeId) -> Option<Opinion> {
        if self.change.contains(&observer) {
            Some(Opinion::Change)
        } else if self.stay.contains(&observer) {
            Some(Opinion::Stay)
        } else {
            None
        }
    }
}

/// Where the subjects stand after implicit reports are counted.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Evaluation {
    /// Subjects with at least H change reports (or leaving), in id order.
    pub stable: Vec<NodeId>,
    /// Subjects with at least L and fewer than H, in id order.
    pub unstable: Vec<NodeId>,
}

/// The reports of the current view. Cleared at every view change.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CutDetector {
    reports: BTreeMap<NodeId, SubjectReports>,
    /// Broken variant for the simulator: H = 1 (a cut on the first alert).
    first_alert: bool,
    /// Broken variant for the simulator: no implicit reports.
    no_implicit: bool,
}

impl CutDetector {
    /// An empty detector; `first_alert` and `no_implicit` are broken
    /// variants (a cut on one report; no implicit reports).
    pub fn new(first_alert: bool, no_implicit: bool) -> CutDetector {
        CutDetector {
            reports: BTreeMap::new(),
            first_alert,
            no_implicit,
        }
    }

    /// The reports about `subject`.
    pub fn reports(&self, subject: NodeId) -> SubjectReports {
        self.reports.get(&subject).cloned().unwrap_or_default()
    }

    /// Every subject with reports.
    pub fn all(&self) -> &BTreeMap<NodeId, SubjectReports> {
        &self.reports
    }

    fn thresholds(&self, k: usize) -> Thresholds {
        if self.first_alert {
            Thresholds { high: 1, low: 1 }
        } else {
            Thresholds::for_observers(k)
        }
    }

    /// Records `observer`'s opinion of `subject`. False (and nothing
    /// recorded) when `observer` does not observe `subject` in `view`.
    pub fn report(
        &mut self,
        view: &View,
        observer: NodeId,
        subject: NodeId,
        opinion: Opinion,
    ) -> bool {
        if !view.is_member(observer) || !view.observers_of(subject).contains(&observer) {
            return false;
        }
        let reports = self.reports.entry(subject).or_default();
        match opinion {
            Opinion::Change => {
                reports.stay.remove(&observer);
                reports.change.insert(observer);
            }
            Opinion::Stay => {
                // A retraction lowers the count it was resolved at with it.
                if reports.change.remove(&observer) {
                    reports.resolved = reports.resolved.saturating_sub(1);
                }
                reports.stay.insert(observer);
            }
        }
        true
    }

    /// `subject`'s explicit change reports (from its observers).
    fn explicit(&self, view: &View, subject: NodeId) -> usize {
        let Some(reports) = self.reports.get(&subject) else {
            return 0;
        };
        view.observers_of(subject)
            .iter()
            .filter(|observer| reports.change.contains(observer))
            .count()
    }

    /// Change reports about `subject`, with implicit ones from the
    /// observers in `implicit` (see [`CutDetector::implicit_reporters`]).
    fn count(&self, view: &View, subject: NodeId, implicit: &BTreeSet<NodeId>) -> usize {
        let reports = self.reports.get(&subject);
        view.observers_of(subject)
            .into_iter()
            .filter(|observer| {
                reports.is_some_and(|r| r.change.contains(observer))
                    || (!self.no_implicit
                        && implicit.contains(observer)
                        && view.is_member(*observer))
            })
            .count()
    }

    /// The subjects in flux: leaving, or with at least L explicit change
    /// reports and more than they were resolved at. Implicit reports only
    /// add to subjects already in flux, as in Rapid: they never put a
    /// healthy subject in flux (a failed node's subjects are fine).
    fn in_flux(&self, view: &View) -> BTreeSet<NodeId> {
        view.nodes()
            .iter()
            .filter(|&(&subject, member)| {
                if member.state == MemberState::Leaving {
                    return true;
                }
                let k = view.observers_of(subject).len();
                let explicit = self.explicit(view, subject);
                let resolved = self.reports.get(&subject).map_or(0, |r| r.resolved);
                k > 0
                    && explicit >= self.thresholds(k).low
                    && (explicit > resolved || explicit >= self.thresholds(k).high)
            })
            .map(|(&subject, _)| subject)
            .collect()
    }

    /// The subjects in flux whose failure is witnessed by at least two
    /// observers (or L, if more; or every observer, if it has one), or
    /// that are leaving: the ones counted as implicit reporters about the
    /// subjects they observe. Rapid counts every subject in flux; with
    /// L = 1 on small clusters one observer cut off from the rest (a
    /// partition) would then put every node it reports in flux, and they
    /// would report each other implicitly up to H: the majority removed,
    /// the cut-off node kept. A subject with one observer (a view of two
    /// members) is witnessed by all it has: without it counting, a
    /// joiner it observes waits for its report for good, and the cut that
    /// removes it never comes (`amulet-sim --dmap --seed 9003189`: view 2
    /// is nodes 1 and 2 with node 4 joining, node 2 killed for good).
    fn implicit_reporters(&self, view: &View, in_flux: &BTreeSet<NodeId>) -> BTreeSet<NodeId> {
        in_flux
            .iter()
            .copied()
            .filter(|&node| {
                let k = view.observers_of(node).len();
                view.state(node) == Some(MemberState::Leaving)
                    || self.explicit(view, node) >= self.thresholds(k).low.max(2).min(k)
            })
            .collect()
    }

    /// Stable and unstable subjects: of those in flux, the ones with at
    /// least H change reports (implicit ones counted) or leaving are
    /// stable, the others unstable.
    pub fn evaluate(&self, view: &View) -> Evaluation {
        let in_flux = self.in_flux(view);
        let implicit = self.implicit_reporters(view, &in_flux);
        let mut evaluation = Evaluation::default();
        for &subject in &in_flux {
            let k = view.observers_of(subject).len();
            let leaving = view.state(subject) == Some(MemberState::Leaving);
            if leaving || self.count(view, subject, &implicit) >= self.thresholds(k).high {
                evaluation.stable.push(subject);
            } else {
                evaluation.unstable.push(subject);
            }
        }
        evaluation
    }

    /// Resolves every unstable subject all of whose observers have an
    /// opinion (explicit, or implicit as a witnessed failure) and which
    /// stays below H;
    /// returns them. Their change reports stay (`resolved` records how
    /// many); their stay opinions are spent (a later episode asks again),
    /// as are those of every subject out of flux.
    pub fn resolve(&mut self, view: &View) -> Vec<NodeId> {
        let in_flux = self.in_flux(view);
        let implicit = self.implicit_reporters(view, &in_flux);
        let evaluation = self.evaluate(view);
        let mut resolved = Vec::new();
        for subject in evaluation.unstable {
            let explicit = self.explicit(view, subject);
            let Some(reports) = self.reports.get_mut(&subject) else {
                continue;
            };
            let all_spoke = view.observers_of(subject).iter().all(|observer| {
                reports.change.contains(observer)
                    || reports.stay.contains(observer)
                    || (!self.no_implicit && implicit.contains(observer))
            });
            if all_spoke {
                reports.resolved = explicit;
                reports.stay.clear();
                resolved.push(subject);
            }
        }
        // A joiner no observer ever heard (it died before its first
        // answer, or its address leads nowhere) has no change report, so
        // it is never in flux: it is resolved, and refused, once every
        // observer says it is unreachable. Otherwise it would stay a
        // joiner for good, and its address, taken in the view, could not
        // join again (simulator seed 217 of `--dmap`, a joiner killed
        // before its join was ordered).
        for (&subject, member) in view.nodes() {
            if member.state != MemberState::Joining || in_flux.contains(&subject) {
                continue;
            }
            let Some(reports) = self.reports.get_mut(&subject) else {
                continue;
            };
            let observers = view.observers_of(subject);
            if !observers.is_empty()
                && reports.change.is_empty()
                && observers.iter().all(|o| reports.stay.contains(o))
            {
                reports.stay.clear();
                resolved.push(subject);
            }
        }
        // A stay opinion answers one episode: once its subject is out of
        // flux it is stale, and must not count as spoken in the next one
        // (an observer that said stay and then failed would otherwise
        // resolve a subject that is failing too, before the observer's own
        // failure counts as an implicit report). A joiner's stay opinions
        // (unreachable) stand until every observer has one (above).
        let in_flux = self.in_flux(view);
        for (subject, reports) in &mut self.reports {
            let joiner = view.state(*subject) == Some(MemberState::Joining);
            if !in_flux.contains(subject) && !joiner {
                reports.stay.clear();
            }
        }
        resolved
    }

    /// Forgets the reports about `subject` (a refused joiner).
    pub fn forget(&mut self, subject: NodeId) {
        self.reports.remove(&subject);
    }

    /// Forgets every report (a new view).
    pub fn clear(&mut self) {
        self.reports.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::view::test_view as view;

    #[test]
    fn rapid_4_2_thresholds_scale_with_the_observers() {
        assert_eq!(
            Thresholds::for_observers(10),
            Thresholds { high: 9, low: 3 }
        );
        assert_eq!(Thresholds::for_observers(2), Thresholds { high: 2, low: 1 });
        assert_eq!(Thresholds::for_observers(1), Thresholds { high: 1, low: 1 });
        for k in 1..=10 {
            let t = Thresholds::for_observers(k);
            assert!(1 <= t.low && t.low <= t.high && t.high <= k);
        }
    }

    #[test]
    fn rapid_4_2_a_subject_below_h_is_unstable_and_at_h_stable() {
        let view = view(8);
        let subject = NodeId(3);
        let observers = view.observers_of(subject);
        let t = Thresholds::for_observers(observers.len());
        let mut cut = CutDetector::new(false, false);
        for (reported, &observer) in observers.iter().enumerate() {
            assert!(cut.report(&view, observer, subject, Opinion::Change));
            let evaluation = cut.evaluate(&view);
            if reported + 1 >= t.high {
                assert_eq!(evaluation.stable, vec![subject]);
            } else if reported + 1 >= t.low {
                assert_eq!(evaluation.unstable, vec![subject]);
            }
        }
    }

    #[test]
    fn rapid_4_2_reports_from_non_observers_are_refused() {
        let view = view(12);
        let subject = NodeId(1);
        let observers = view.observers_of(subject);
        let outsider = view
            .members()
            .into_iter()
            .find(|n| *n != subject && !observers.contains(n))
            .unwrap();
        let mut cut = CutDetector::new(false, false);
        assert!(!cut.report(&view, outsider, subject, Opinion::Change));
        assert!(cut.all().values().all(|r| r.change.is_empty()));
    }

    #[test]
    fn rapid_4_2_an_observer_in_flux_counts_as_an_implicit_report() {
        // Two of five nodes fail; each may observe the other.
        let view = view(5);
        let (a, b) = (NodeId(1), NodeId(2));
        let mut cut = CutDetector::new(false, false);
        for subject in [a, b] {
            for observer in view.observers_of(subject) {
                if observer != a && observer != b {
                    assert!(cut.report(&view, observer, subject, Opinion::Change));
                }
            }
        }
        let evaluation = cut.evaluate(&view);
        assert_eq!(evaluation.stable, vec![a, b], "{evaluation:?}");
        assert!(evaluation.unstable.is_empty());
    }

    /// `amulet-sim --dmap --seed 9003189`: in a view of two members, the
    /// one killed for good has one observer, and it observes the joiner
    /// with the other member. Its single observer's report must make it
    /// an implicit reporter, or the joiner stays unstable and no cut ever
    /// removes the dead node.
    #[test]
    fn rapid_4_2_a_failed_member_of_a_two_member_view_reports_its_joiner_implicitly() {
        let mut view = view(2);
        let (live, dead) = (NodeId(1), NodeId(2));
        let joiner = view.add_joiner("joiner:1".into(), String::new());
        assert_eq!(view.observers_of(dead), vec![live]);
        assert_eq!(view.observers_of(joiner), vec![live, dead]);
        let mut cut = CutDetector::new(false, false);
        assert!(cut.report(&view, live, dead, Opinion::Change));
        assert!(cut.report(&view, live, joiner, Opinion::Change));
        let evaluation = cut.evaluate(&view);
        assert_eq!(evaluation.stable, vec![dead, joiner], "{evaluation:?}");
        assert!(evaluation.unstable.is_empty());
        // With implicit reports off, the joiner blocks the cut.
        let mut broken = CutDetector::new(false, true);
        assert!(broken.report(&view, live, dead, Opinion::Change));
        assert!(broken.report(&view, live, joiner, Opinion::Change));
        assert_eq!(broken.evaluate(&view).unstable, vec![joiner]);
    }

    #[test]
    fn an_unstable_subject_every_observer_spoke_of_is_resolved_until_more_report_it() {
        let view = view(5);
        let subject = NodeId(4);
        let observers = view.observers_of(subject);
        let mut cut = CutDetector::new(false, false);
        assert!(cut.report(&view, observers[0], subject, Opinion::Change));
        assert_eq!(cut.evaluate(&view).unstable, vec![subject]);
        assert!(
            cut.resolve(&view).is_empty(),
            "not every observer spoke yet"
        );
        for &observer in &observers[1..] {
            assert!(cut.report(&view, observer, subject, Opinion::Stay));
        }
        assert_eq!(cut.resolve(&view), vec![subject]);
        assert_eq!(cut.reports(subject).resolved, 1);
        assert_eq!(
            cut.evaluate(&view),
            Evaluation::default(),
            "resolved: blocks no cut"
        );
        // It then fails: the others report too, and it is stable.
        for &observer in &observers[1..] {
            assert!(cut.report(&view, observer, subject, Opinion::Change));
        }
        assert_eq!(cut.evaluate(&view).stable, vec![subject]);
    }
}
