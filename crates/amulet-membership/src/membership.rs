//! The membership state machine: the view and its reports, changed only by
//! [`Command`]s in the order of the global stream. Every replica applies
//! the same commands in the same order, so every replica installs the same
//! sequence of views (SCONEKV §2: "all correct nodes share a common view").

use crate::cut::{CutDetector, Evaluation, Opinion, SubjectReports};
use crate::view::{MemberState, View, ViewId};
use amulet_types::NodeId;
use serde::{Deserialize, Serialize};

/// A membership command, ordered on the global stream.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Command {
    /// `observer`'s opinion of `subject` in `view`.
    Alert {
        /// The view the observer saw.
        view: ViewId,
        /// Who reports.
        observer: NodeId,
        /// About whom.
        subject: NodeId,
        /// What it says.
        opinion: Opinion,
    },
    /// A node at `address` asks to join; it gets the next id.
    Join {
        /// Where its peers reach it.
        address: String,
        /// Where clients reach it (empty: nowhere yet).
        client_address: String,
    },
    /// A member asks to leave (drains at the next view change).
    Leave {
        /// The member.
        node: NodeId,
    },
    /// Install the next view from the stable subjects of `view`, if a cut
    /// is ready then (any member may propose it; all but the first are
    /// stale).
    Cut {
        /// The view the proposer saw.
        view: ViewId,
    },
}

/// One installed view change.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ViewChange {
    /// The view after the change.
    pub view: ViewId,
    /// Joiners that became members.
    pub joined: Vec<NodeId>,
    /// Members removed for good (failed or left).
    pub removed: Vec<NodeId>,
}

/// What applying a command did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Applied {
    /// Nothing: the reason (a stale view, not an observer, ...).
    Ignored(&'static str),
    /// An opinion was recorded; `resolved` subjects stopped blocking cuts
    /// (and `refused` joiners were turned away) as a result.
    Reported {
        /// Unstable subjects resolved.
        resolved: Vec<NodeId>,
        /// Joiners refused.
        refused: Vec<NodeId>,
    },
    /// A joiner got its id.
    Joining(NodeId),
    /// A member is leaving.
    Leaving(NodeId),
    /// A new view.
    Changed(ViewChange),
}

/// Broken variants, for the simulator's checkers to catch.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum MembershipBug {
    /// The real thing.
    #[default]
    None,
    /// A subject is cut on the first alert (H = L = 1).
    CutOnFirstAlert,
    /// Observers in flux are not counted as implicit reports (a failed
    /// observer's subject then waits for a report that never comes).
    NoImplicitEdges,
}

/// View changes a membership remembers (the oldest are forgotten: the
/// history is for `amulet status` and the checkers, not for the protocol).
pub const HISTORY_KEPT: usize = 256;

/// The replicated membership (in replicas' checkpoints: serialisable).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Membership {
    view: View,
    cut: CutDetector,
    history: Vec<ViewChange>,
}

impl Membership {
    /// The membership of a cluster that starts with `view`.
    pub fn new(view: View, bug: MembershipBug) -> Membership {
        Membership {
            view,
            cut: CutDetector::new(
                bug == MembershipBug::CutOnFirstAlert,
                bug == MembershipBug::NoImplicitEdges,
            ),
            history: Vec::new(),
        }
    }

    /// The current view.
    pub fn view(&self) -> &View {
        &self.view
    }

    /// The view changes installed so far, oldest first (the last
    /// [`HISTORY_KEPT`]).
    pub fn history(&self) -> &[ViewChange] {
        &self.history
    }

    /// The reports about `subject` in this view.
    pub fn reports(&self, subject: NodeId) -> SubjectReports {
        self.cut.reports(subject)
    }

    /// Stable and unstable subjects now.
    pub fn evaluate(&self) -> Evaluation {
        self.cut.evaluate(&self.view)
    }

    /// The subjects the next view change removes or admits, when a cut is
    /// ready: some are stable and none unstable.
    pub fn ready_cut(&self) -> Option<Vec<NodeId>> {
        let evaluation = self.evaluate();
        (!evaluation.stable.is_empty() && evaluation.unstable.is_empty())
            .then_some(evaluation.stable)
    }

    /// Applies one command of the global order that `proposer` proposed
    /// (the node that multicast it): as [`Membership::apply`], except
    /// that a cut that would remove its own proposer is ignored. Rapid
    /// decides a view change by a vote of the current members, and a
    /// member does not vote itself out; here the order decides, so the
    /// rule is kept at the apply. Without it, a small cluster's stale
    /// change reports could remove its live members and keep a dead one
    /// (`amulet-sim --dmap --seed 9012624`: three nodes, K = 2. Node 1,
    /// cut off, reported nodes 2 and 3; node 3, cut off later, reported
    /// node 2, and node 2 reported node 3; node 1 died before it took its
    /// reports back. Nodes 2 and 3 were then stable, node 1's own reports
    /// not ordered yet, and a cut proposed by node 2 removed nodes 2 and
    /// 3, keeping only the dead node 1.) A node cut for real is removed
    /// by a cut another member proposes; any member may propose one.
    pub fn apply_proposed(&mut self, proposer: NodeId, command: &Command) -> Applied {
        if let Command::Cut { view } = command {
            let removes_proposer = *view == self.view.id()
                && self.ready_cut().is_some_and(|cut| {
                    cut.contains(&proposer)
                        && self.view.state(proposer) != Some(MemberState::Joining)
                });
            if removes_proposer {
                return Applied::Ignored("a member does not order a cut that removes itself");
            }
        }
        self.apply(command)
    }

    /// Applies one command of the global order.
    pub fn apply(&mut self, command: &Command) -> Applied {
        let applied = match command {
            Command::Alert {
                view,
                observer,
                subject,
                opinion,
            } => {
                if *view != self.view.id() {
                    return Applied::Ignored("alert for another view");
                }
                if self.view.state(*subject).is_none() {
                    return Applied::Ignored("subject not in the view");
                }
                if !self.cut.report(&self.view, *observer, *subject, *opinion) {
                    return Applied::Ignored("not an observer of the subject");
                }
                let resolved = self.cut.resolve(&self.view);
                let refused: Vec<NodeId> = resolved
                    .iter()
                    .copied()
                    .filter(|&node| self.view.state(node) == Some(MemberState::Joining))
                    .collect();
                for &node in &refused {
                    self.view.refuse_joiner(node);
                    self.cut.forget(node);
                }
                Applied::Reported { resolved, refused }
            }
            Command::Join {
                address,
                client_address,
            } => {
                if self.view.node_at(address).is_some() {
                    return Applied::Ignored("a node at this address is in the view");
                }
                Applied::Joining(
                    self.view
                        .add_joiner(address.clone(), client_address.clone()),
                )
            }
            Command::Leave { node } => {
                if self.view.state(*node) != Some(MemberState::Active) {
                    return Applied::Ignored("not an active member");
                }
                if self.view.members().len() == 1 {
                    return Applied::Ignored("the last member cannot leave");
                }
                self.view.set_leaving(*node);
                Applied::Leaving(*node)
            }
            Command::Cut { view } => {
                if *view != self.view.id() {
                    return Applied::Ignored("cut for another view");
                }
                let Some(subjects) = self.ready_cut() else {
                    return Applied::Ignored("no cut is ready");
                };
                let (joined, removed): (Vec<NodeId>, Vec<NodeId>) = subjects
                    .iter()
                    .partition(|&&node| self.view.state(node) == Some(MemberState::Joining));
                if removed.len() >= self.view.members().len() {
                    // Every member reported: nothing would be left to order
                    // the next view. Keep the view; reports stand.
                    return Applied::Ignored("the cut would remove every member");
                }
                self.view.change(&joined, &removed);
                self.cut.clear();
                let change = ViewChange {
                    view: self.view.id(),
                    joined,
                    removed,
                };
                self.history.push(change.clone());
                if self.history.len() > HISTORY_KEPT {
                    self.history.remove(0);
                }
                Applied::Changed(change)
            }
        };
        self.check();
        applied
    }

    /// Asserts the invariants: the view's own, reports only about nodes in
    /// the view, the history's view ids consecutive up to the current one.
    pub fn check(&self) {
        self.view.check();
        for subject in self.cut.all().keys() {
            assert!(
                self.view.state(*subject).is_some(),
                "reports about {subject:?}, not in the view"
            );
        }
        if let Some(last) = self.history.last() {
            assert_eq!(last.view, self.view.id());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn membership(members: usize) -> Membership {
        Membership::new(crate::view::test_view(members), MembershipBug::None)
    }

    fn report_all(m: &mut Membership, subject: NodeId, except: &[NodeId]) {
        let view = m.view().id();
        for observer in m.view().observers_of(subject) {
            if !except.contains(&observer) {
                let command = Command::Alert {
                    view,
                    observer,
                    subject,
                    opinion: Opinion::Change,
                };
                assert!(matches!(m.apply(&command), Applied::Reported { .. }));
            }
        }
    }

    #[test]
    fn sconekv_2_two_failures_at_once_make_one_view_change() {
        let mut m = membership(5);
        let (a, b) = (NodeId(2), NodeId(5));
        report_all(&mut m, a, &[a, b]);
        // One report about b makes b unstable: a is not cut alone.
        let first = *m.view().observers_of(b).iter().find(|&&o| o != a).unwrap();
        let alert = Command::Alert {
            view: ViewId(1),
            observer: first,
            subject: b,
            opinion: Opinion::Change,
        };
        assert!(matches!(m.apply(&alert), Applied::Reported { .. }));
        assert_eq!(m.ready_cut(), None);
        assert_eq!(
            m.apply(&Command::Cut { view: ViewId(1) }),
            Applied::Ignored("no cut is ready")
        );
        report_all(&mut m, b, &[a, b]);
        let Applied::Changed(change) = m.apply(&Command::Cut { view: ViewId(1) }) else {
            panic!()
        };
        assert_eq!(change.removed, vec![a, b]);
        assert_eq!(m.view().members(), vec![NodeId(1), NodeId(3), NodeId(4)]);
        assert_eq!(
            m.apply(&Command::Cut { view: ViewId(1) }),
            Applied::Ignored("cut for another view")
        );
    }

    #[test]
    fn a_stay_from_an_earlier_episode_does_not_resolve_a_failure_later() {
        // A bridge: b reports a and is reported by a; both retract. Later
        // a and b fail: the stale stay opinions must not resolve them.
        let mut m = membership(5);
        let (a, b) = (NodeId(3), NodeId(4));
        let alert = |observer, subject, opinion| Command::Alert {
            view: ViewId(1),
            observer,
            subject,
            opinion,
        };
        for (observer, subject) in [(b, a), (a, b)] {
            assert!(m.view().observers_of(subject).contains(&observer));
            assert!(matches!(
                m.apply(&alert(observer, subject, Opinion::Change)),
                Applied::Reported { .. }
            ));
        }
        for (observer, subject) in [(b, a), (a, b)] {
            assert!(matches!(
                m.apply(&alert(observer, subject, Opinion::Stay)),
                Applied::Reported { .. }
            ));
        }
        assert_eq!(m.evaluate(), crate::cut::Evaluation::default());
        // Now both fail: every other observer reports, one subject first.
        for subject in [a, b] {
            report_all(&mut m, subject, &[a, b]);
        }
        assert_eq!(m.ready_cut(), Some(vec![a, b]), "{:?}", m.evaluate());
    }

    #[test]
    fn one_cut_off_node_reporting_everyone_does_not_remove_the_majority() {
        // Four members; node 3 is cut off from the others: it reports all
        // of them and they all report it.
        let mut m = membership(4);
        let cut_off = NodeId(3);
        let alert = |observer, subject| Command::Alert {
            view: ViewId(1),
            observer,
            subject,
            opinion: Opinion::Change,
        };
        for other in [NodeId(1), NodeId(2), NodeId(4)] {
            assert!(matches!(
                m.apply(&alert(cut_off, other)),
                Applied::Reported { .. }
            ));
            assert!(matches!(
                m.apply(&alert(other, cut_off)),
                Applied::Reported { .. }
            ));
        }
        let evaluation = m.evaluate();
        assert_eq!(evaluation.stable, vec![cut_off], "{evaluation:?}");
        assert_eq!(evaluation.unstable, vec![NodeId(1), NodeId(2), NodeId(4)]);
    }

    #[test]
    fn rapid_4_3_a_member_does_not_order_a_cut_that_removes_itself() {
        // Three members, two observers each (simulator seed 9012624): node
        // 1 reported nodes 2 and 3 while cut off, then died; nodes 2 and 3
        // reported each other while a later partition cut node 3 off.
        // Nodes 2 and 3 are stable, node 1 not reported yet: only node 1,
        // dead, could order that cut.
        let mut m = membership(3);
        let (n1, n2, n3) = (NodeId(1), NodeId(2), NodeId(3));
        let alert = |observer, subject, opinion| Command::Alert {
            view: ViewId(1),
            observer,
            subject,
            opinion,
        };
        for (observer, subject) in [(n1, n2), (n1, n3), (n3, n2), (n2, n3)] {
            let command = alert(observer, subject, Opinion::Change);
            assert!(matches!(m.apply(&command), Applied::Reported { .. }));
        }
        assert_eq!(m.ready_cut(), Some(vec![n2, n3]));
        let cut = Command::Cut { view: ViewId(1) };
        for proposer in [n2, n3] {
            assert_eq!(
                m.apply_proposed(proposer, &cut),
                Applied::Ignored("a member does not order a cut that removes itself")
            );
        }
        assert_eq!(m.view().members(), vec![n1, n2, n3]);
        // Nodes 2 and 3 reach each other again and take their reports
        // back; they report node 1, dead: the cut removes node 1, proposed
        // by either of them.
        for (observer, subject) in [(n3, n2), (n2, n3)] {
            let command = alert(observer, subject, Opinion::Stay);
            assert!(matches!(m.apply(&command), Applied::Reported { .. }));
        }
        for (observer, subject) in [(n2, n1), (n3, n1)] {
            let command = alert(observer, subject, Opinion::Change);
            assert!(matches!(m.apply(&command), Applied::Reported { .. }));
        }
        assert_eq!(m.ready_cut(), Some(vec![n1]), "{:?}", m.evaluate());
        let Applied::Changed(change) = m.apply_proposed(n2, &cut) else {
            panic!("{:?}", m.evaluate())
        };
        assert_eq!(change.removed, vec![n1]);
        assert_eq!(m.view().members(), vec![n2, n3]);
    }

    #[test]
    fn a_joiner_reachable_from_its_observers_becomes_a_member_with_a_fresh_id() {
        let mut m = membership(3);
        let Applied::Joining(id) = m.apply(&Command::Join {
            address: "n9:7000".into(),
            client_address: String::new(),
        }) else {
            panic!()
        };
        assert_eq!(id, NodeId(4));
        assert_eq!(
            m.apply(&Command::Join {
                address: "n9:7000".into(),
                client_address: String::new(),
            }),
            Applied::Ignored("a node at this address is in the view")
        );
        report_all(&mut m, id, &[]);
        let Applied::Changed(change) = m.apply(&Command::Cut { view: ViewId(1) }) else {
            panic!()
        };
        assert_eq!(change.joined, vec![id]);
        assert!(m.view().is_member(id));
    }

    #[test]
    fn a_leaving_member_is_removed_at_the_next_cut() {
        let mut m = membership(3);
        assert_eq!(
            m.apply(&Command::Leave { node: NodeId(3) }),
            Applied::Leaving(NodeId(3))
        );
        let Applied::Changed(change) = m.apply(&Command::Cut { view: ViewId(1) }) else {
            panic!()
        };
        assert_eq!(change.removed, vec![NodeId(3)]);
        assert!(m.view().removed().contains(&NodeId(3)));
    }

    #[test]
    fn the_last_member_is_never_removed() {
        let mut m = membership(2);
        report_all(&mut m, NodeId(1), &[]);
        report_all(&mut m, NodeId(2), &[]);
        assert_eq!(
            m.apply(&Command::Cut { view: ViewId(1) }),
            Applied::Ignored("the cut would remove every member")
        );
        assert_eq!(m.view().members().len(), 2);
    }

    #[test]
    fn sconekv_2_a_joiner_no_observer_ever_heard_is_refused_and_its_address_can_join_again() {
        let mut m = membership(3);
        let address = "n9:7000".to_string();
        let Applied::Joining(id) = m.apply(&Command::Join {
            address: address.clone(),
            client_address: String::new(),
        }) else {
            panic!()
        };
        let observers = m.view().observers_of(id);
        assert!(!observers.is_empty());
        let stay = |observer| Command::Alert {
            view: ViewId(1),
            observer,
            subject: id,
            opinion: Opinion::Stay,
        };
        // Every observer but the last finds it unreachable: still a joiner.
        for &observer in &observers[..observers.len() - 1] {
            assert_eq!(
                m.apply(&stay(observer)),
                Applied::Reported {
                    resolved: vec![],
                    refused: vec![]
                }
            );
            assert_eq!(m.view().state(id), Some(MemberState::Joining));
        }
        // The last one too: refused, its id spent, its address free.
        let last = *observers.last().expect("observers");
        assert_eq!(
            m.apply(&stay(last)),
            Applied::Reported {
                resolved: vec![id],
                refused: vec![id]
            }
        );
        assert!(m.view().removed().contains(&id));
        let Applied::Joining(again) = m.apply(&Command::Join {
            address,
            client_address: String::new(),
        }) else {
            panic!("the address is free again")
        };
        assert!(again > id, "ids are never reused");
    }
}
