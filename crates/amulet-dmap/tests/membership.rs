//! Membership at a replica (SCONEKV §2, docs/membership.md): the view is
//! replicated state changed only by the global stream; alerts and cuts
//! come from the nodes' monitors and a client's are refused at the edge;
//! a join or a leave is an operator's and needs the cluster admin role;
//! every replica that executes the same commands holds the same view.

use amulet_dmap::{MapCommand, MapReply, PartitionState};
use amulet_membership::{Command, MemberState, Membership, MembershipBug, Opinion, View, ViewId};
use amulet_smr::{
    Body, ClientReply, ClientRequest, CommandEnvelope, Origin, Output, Principal, Refusal, Replica,
};
use amulet_types::{NodeId, StreamId};

mod common;
use common::replica;

/// The first view of the test cluster's six nodes.
fn first_view() -> Membership {
    let addresses: Vec<String> = (1..=6).map(|n| format!("10.0.0.{n}:7400")).collect();
    Membership::new(View::initial(&addresses), MembershipBug::None)
}

fn with_membership(node: u32, partition: u32) -> Replica<PartitionState> {
    let mut replica = replica(node, partition, 1 << 20);
    replica.set_initial_membership(first_view());
    replica
}

/// Submits `body` as `principal` and delivers what the replica proposes
/// back to it (a one-replica order); the reply, if any.
fn run(
    replica: &mut Replica<PartitionState>,
    principal: Option<Principal>,
    body: Body<MapCommand>,
) -> Option<ClientReply<MapReply>> {
    let request = ClientRequest {
        map_version: replica.map().version,
        session: None,
        body,
        principal,
    };
    let id = replica.submit(0, request);
    let mut reply = None;
    for _ in 0..4 {
        for output in replica.drain() {
            match output {
                Output::Propose { stream, value, .. } => replica.on_deliver(stream, &value),
                Output::Reply { request, reply: r } if request == id => reply = Some(r),
                _ => {}
            }
        }
    }
    reply
}

/// What a node's monitor multicasts: no principal, request 0.
fn from_monitor(node: u32, command: Command) -> bytes::Bytes {
    CommandEnvelope::<MapCommand> {
        origin: Origin {
            node: NodeId(node),
            incarnation: 1,
            request: 0,
        },
        timestamp_micros: 0,
        map_version: amulet_types::MapVersion(1),
        session: None,
        body: Body::Membership(command),
        principal: None,
    }
    .encode()
}

fn admin() -> Option<Principal> {
    Some(Principal::user(amulet_smr::BOOTSTRAP_ADMIN))
}

#[test]
fn sconekv_2_alerts_and_cuts_from_clients_are_refused_at_the_edge_and_change_nothing() {
    let mut replica = with_membership(1, 1);
    let before = replica.membership().cloned();
    let alert = Command::Alert {
        view: ViewId(1),
        observer: NodeId(2),
        subject: NodeId(3),
        opinion: Opinion::Change,
    };
    for command in [alert, Command::Cut { view: ViewId(1) }] {
        for principal in [None, admin()] {
            let reply = run(&mut replica, principal, Body::Membership(command.clone()));
            match reply {
                Some(ClientReply::Refused(Refusal::MembershipChange(why))) => {
                    assert!(why.contains("monitors"), "{why}")
                }
                other => panic!("{command:?} from a client: {other:?}"),
            }
        }
    }
    assert_eq!(replica.membership().cloned(), before);
    assert_eq!(replica.global_position(), 0, "nothing was ordered");
}

#[test]
fn sconekv_2_a_leave_needs_the_cluster_admin_and_takes_effect_at_the_next_cut() {
    let mut replica = with_membership(1, 1);
    let leave = Body::Membership(Command::Leave { node: NodeId(6) });
    let denied = run(&mut replica, Some(Principal::user("alice")), leave.clone());
    assert!(
        matches!(
            denied,
            Some(ClientReply::Refused(Refusal::PermissionDenied { .. }))
        ),
        "{denied:?}"
    );
    let view = || replica_view(&replica);
    assert_eq!(view().state(NodeId(6)), Some(MemberState::Active));
    fn replica_view(replica: &Replica<PartitionState>) -> View {
        replica.membership().unwrap().view().clone()
    }
    assert_eq!(
        run(&mut replica, admin(), leave.clone()),
        Some(ClientReply::Accepted)
    );
    assert_eq!(
        replica_view(&replica).state(NodeId(6)),
        Some(MemberState::Leaving)
    );
    // Leaving twice, or a node the view does not have: refused, unchanged.
    let again = run(&mut replica, admin(), leave);
    assert!(
        matches!(&again, Some(ClientReply::Refused(Refusal::MembershipChange(why))) if why.contains("not an active member")),
        "{again:?}"
    );
    let stranger = run(
        &mut replica,
        admin(),
        Body::Membership(Command::Leave { node: NodeId(40) }),
    );
    assert!(
        matches!(
            stranger,
            Some(ClientReply::Refused(Refusal::MembershipChange(_)))
        ),
        "{stranger:?}"
    );
    // A node's monitor proposes the cut; the view changes at its position.
    replica.on_deliver(
        StreamId(1),
        &from_monitor(2, Command::Cut { view: ViewId(1) }),
    );
    let view = replica_view(&replica);
    assert_eq!(view.id(), ViewId(2));
    assert!(view.removed().contains(&NodeId(6)));
    assert_eq!(view.members().len(), 5);
}

#[test]
fn sconekv_2_replicas_that_execute_the_same_alerts_install_the_same_views() {
    // Node 5's observers report it; the cut removes it at every replica,
    // of either partition, delivered in the same global order.
    let mut replicas = [with_membership(1, 1), with_membership(4, 2)];
    let observers = replicas[0]
        .membership()
        .unwrap()
        .view()
        .observers_of(NodeId(5));
    let mut order: Vec<bytes::Bytes> = observers
        .iter()
        .map(|observer| {
            from_monitor(
                observer.0,
                Command::Alert {
                    view: ViewId(1),
                    observer: *observer,
                    subject: NodeId(5),
                    opinion: Opinion::Change,
                },
            )
        })
        .collect();
    order.push(from_monitor(1, Command::Cut { view: ViewId(1) }));
    for replica in &mut replicas {
        for value in &order {
            replica.on_deliver(StreamId(1), value);
        }
    }
    let [a, b] = &replicas;
    assert_eq!(a.membership(), b.membership());
    let view = a.membership().unwrap().view();
    assert_eq!(view.id(), ViewId(2));
    assert!(view.removed().contains(&NodeId(5)));
    // On a partition stream, membership commands do nothing.
    let mut replica = with_membership(1, 1);
    let before = replica.membership().cloned();
    for value in &order {
        replica.on_deliver(StreamId(2), value);
    }
    assert_eq!(replica.membership().cloned(), before);
}

#[test]
fn sconekv_2_without_a_configured_view_a_join_is_refused() {
    let mut replica = replica(1, 1, 1 << 20);
    let join = Body::Membership(Command::Join {
        address: "10.0.0.9:7400".into(),
        client_address: "10.0.0.9:7500".into(),
    });
    let reply = run(&mut replica, admin(), join);
    assert!(
        matches!(&reply, Some(ClientReply::Refused(Refusal::MembershipChange(why))) if why.contains("not configured")),
        "{reply:?}"
    );
    assert!(replica.membership().is_none());
}
