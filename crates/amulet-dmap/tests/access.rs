//! Access control at a replica (docs/security.md): requests are judged at
//! their point of the order by the access configuration the global stream
//! made; a denied request gets PERMISSION_DENIED's refusal and changes
//! nothing but its session's record of it; a revoked token stops at its
//! revocation's position; access changes and reconfigurations need the
//! cluster admin role.

use amulet_dmap::{MapCommand, MapReply, PartitionState};
use amulet_smr::{
    AccessChange, Body, ClientReply, ClientRequest, Output, Permission, Principal, Reconfiguration,
    Refusal, Replica, StreamSpec, TokenRecord,
};
use amulet_types::{MapVersion, NodeId, PartitionId, SessionId, StorageMode, StreamId};
use bytes::Bytes;

mod common;
use common::{map_name, replica};

/// Submits `request` at `replica`, delivers what it proposes back to it
/// (a one-replica order), and returns the reply.
fn run(
    replica: &mut Replica<PartitionState>,
    request: ClientRequest<MapCommand>,
) -> ClientReply<MapReply> {
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
    reply.expect("answered")
}

fn as_user(
    replica: &Replica<PartitionState>,
    principal: Option<Principal>,
    session: Option<(SessionId, u64)>,
    body: Body<MapCommand>,
) -> ClientRequest<MapCommand> {
    ClientRequest {
        map_version: replica.map().version,
        session,
        body,
        principal,
    }
}

fn admin() -> Option<Principal> {
    Some(Principal::user("admin"))
}

fn alice() -> Option<Principal> {
    Some(Principal::user("alice"))
}

/// A key partition 1 holds.
fn my_key(replica: &Replica<PartitionState>) -> Bytes {
    (0..100u8)
        .map(|i| Bytes::from(vec![i]))
        .find(|k| replica.map().partition_of("m", k).unwrap() == PartitionId(1))
        .unwrap()
}

fn put(key: &Bytes, value: &'static [u8]) -> Body<MapCommand> {
    Body::App(MapCommand::Put {
        map: map_name(),
        key: key.clone(),
        value: Bytes::from_static(value),
    })
}

fn get(key: &Bytes) -> Body<MapCommand> {
    Body::App(MapCommand::Get {
        map: map_name(),
        key: key.clone(),
    })
}

fn change(replica: &mut Replica<PartitionState>, by: Option<Principal>, change: AccessChange) {
    let request = as_user(replica, by, None, Body::Access(change));
    assert_eq!(run(replica, request), ClientReply::Accepted);
}

fn denied(reply: &ClientReply<MapReply>) -> bool {
    matches!(
        reply,
        ClientReply::Refused(Refusal::PermissionDenied { .. })
    )
}

#[test]
fn security_a_read_only_user_writing_is_denied_and_changes_nothing() {
    let mut r = replica(1, 1, 1 << 20);
    let key = my_key(&r);
    change(
        &mut r,
        admin(),
        AccessChange::Grant {
            role: "readers".into(),
            map: "m".into(),
            permission: Permission::Read,
        },
    );
    change(
        &mut r,
        admin(),
        AccessChange::AssignRole {
            user: "alice".into(),
            role: "readers".into(),
        },
    );
    let open = as_user(
        &r,
        alice(),
        Some((SessionId(7), 0)),
        Body::OpenSession {
            lease_micros: 60_000_000,
        },
    );
    assert_eq!(run(&mut r, open), ClientReply::SessionOk);
    let write = as_user(&r, alice(), Some((SessionId(7), 1)), put(&key, b"v"));
    let reply = run(&mut r, write.clone());
    assert!(denied(&reply), "{reply:?}");
    assert_eq!(
        reply,
        ClientReply::Refused(Refusal::PermissionDenied {
            user: "alice".into(),
            need: "write on \"m\"".into()
        })
    );
    let read = as_user(&r, alice(), None, get(&key));
    assert_eq!(
        run(&mut r, read.clone()),
        ClientReply::Done(MapReply::Value(None))
    );
    // The denial is the command's recorded reply: the same request (same
    // session and sequence) after a grant is answered the same, so an
    // attempt delivered late never takes effect after the client was told
    // it did not; the client's next operation (a new sequence) executes.
    change(
        &mut r,
        admin(),
        AccessChange::Grant {
            role: "readers".into(),
            map: "m".into(),
            permission: Permission::Write,
        },
    );
    assert!(
        denied(&run(&mut r, write)),
        "the resend gets the recorded denial"
    );
    assert_eq!(
        run(&mut r, read.clone()),
        ClientReply::Done(MapReply::Value(None))
    );
    let next = as_user(&r, alice(), Some((SessionId(7), 2)), put(&key, b"v"));
    assert_eq!(run(&mut r, next), ClientReply::Done(MapReply::Value(None)));
    assert_eq!(
        run(&mut r, read),
        ClientReply::Done(MapReply::Value(Some(Bytes::from_static(b"v"))))
    );
}

#[test]
fn security_a_map_admin_reconfiguring_the_cluster_or_changing_access_is_denied() {
    let mut r = replica(1, 1, 1 << 20);
    change(
        &mut r,
        admin(),
        AccessChange::Grant {
            role: "m-admins".into(),
            map: "*".into(),
            permission: Permission::Admin,
        },
    );
    change(
        &mut r,
        admin(),
        AccessChange::AssignRole {
            user: "alice".into(),
            role: "m-admins".into(),
        },
    );
    let map_before = r.map().clone();
    let access_before = r.access().clone();
    let replace = Body::Reconfigure(Reconfiguration::ReplaceStream {
        partition: PartitionId(1),
        stream: StreamSpec {
            stream: StreamId(10),
            acceptors: vec![NodeId(1), NodeId(2), NodeId(3)],
            learners: vec![],
            storage: StorageMode::Memory,
            base_position: 0,
        },
    });
    let request = as_user(&r, alice(), None, replace);
    let reply = run(&mut r, request);
    assert_eq!(
        reply,
        ClientReply::Refused(Refusal::PermissionDenied {
            user: "alice".into(),
            need: "cluster admin".into()
        })
    );
    assert!(r.pending_reconfiguration().is_none());
    let grant_self = AccessChange::AssignRole {
        user: "alice".into(),
        role: amulet_smr::CLUSTER_ADMIN.into(),
    };
    let request = as_user(&r, alice(), None, Body::Access(grant_self));
    assert!(denied(&run(&mut r, request)));
    assert_eq!(r.map(), &map_before);
    assert_eq!(r.access(), &access_before);
    // A map admin may create and drop maps (a command of every partition:
    // judged here, then waiting for partition 2's signal).
    let create = Body::App(MapCommand::CreateMap {
        map: amulet_dmap::MapName::new("n").unwrap(),
        layout: amulet_smr::Layout::Hash,
    });
    let request = as_user(&r, alice(), None, create);
    r.submit(0, request);
    for output in r.drain() {
        if let Output::Propose { stream, value, .. } = output {
            r.on_deliver(stream, &value);
        }
    }
    assert!(r.is_waiting(), "allowed: executed, waiting for signals");
}

#[test]
fn security_a_revoked_token_stops_at_its_revocations_position() {
    let mut r = replica(1, 1, 1 << 20);
    let key = my_key(&r);
    change(
        &mut r,
        admin(),
        AccessChange::Grant {
            role: "writers".into(),
            map: "m".into(),
            permission: Permission::Write,
        },
    );
    change(
        &mut r,
        admin(),
        AccessChange::AssignRole {
            user: "bob".into(),
            role: "writers".into(),
        },
    );
    change(
        &mut r,
        admin(),
        AccessChange::CreateToken {
            id: "t1".into(),
            record: TokenRecord {
                user: "bob".into(),
                digest: [1; 32],
                expires_unix_micros: u64::MAX,
            },
            now_unix_micros: 0,
        },
    );
    let bob = Some(Principal {
        user: "bob".into(),
        token: Some("t1".into()),
    });
    let write = as_user(&r, bob.clone(), None, put(&key, b"1"));
    assert_eq!(run(&mut r, write), ClientReply::Done(MapReply::Value(None)));
    // Proposed before the revocation, ordered after it: refused.
    let late = as_user(&r, bob.clone(), None, put(&key, b"2"));
    let late_id = r.submit(0, late);
    let late_value = match r.drain().remove(0) {
        Output::Propose { stream, value, .. } => (stream, value),
        other => panic!("{other:?}"),
    };
    change(
        &mut r,
        admin(),
        AccessChange::RevokeToken { id: "t1".into() },
    );
    r.on_deliver(late_value.0, &late_value.1);
    let replies = r.drain();
    assert!(
        replies.iter().any(|o| matches!(o, Output::Reply { request, reply: ClientReply::Refused(Refusal::TokenInvalid) } if *request == late_id)),
        "{replies:?}"
    );
    let read = as_user(&r, admin(), None, get(&key));
    assert_eq!(
        run(&mut r, read),
        ClientReply::Done(MapReply::Value(Some(Bytes::from_static(b"1")))),
        "the late write changed nothing"
    );
    // A token naming another user is not that user.
    let forged = Some(Principal {
        user: "admin".into(),
        token: Some("t1".into()),
    });
    let request = as_user(&r, forged, None, get(&key));
    assert_eq!(
        run(&mut r, request),
        ClientReply::Refused(Refusal::TokenInvalid)
    );
}

#[test]
fn security_a_commit_needs_write_on_every_written_map_and_read_on_every_read_one() {
    use amulet_dmap::TxnWrite;
    let mut r = replica(1, 1, 1 << 20);
    let key = my_key(&r);
    change(
        &mut r,
        admin(),
        AccessChange::Grant {
            role: "readers".into(),
            map: "m".into(),
            permission: Permission::Read,
        },
    );
    change(
        &mut r,
        admin(),
        AccessChange::AssignRole {
            user: "alice".into(),
            role: "readers".into(),
        },
    );
    let commit = Body::App(MapCommand::Commit {
        read_version: None,
        reads: vec![],
        writes: vec![TxnWrite {
            map: map_name(),
            key: key.clone(),
            value: Some(Bytes::from_static(b"x")),
        }],
    });
    let request = as_user(&r, alice(), None, commit);
    assert!(denied(&run(&mut r, request)));
    let read = as_user(&r, admin(), None, get(&key));
    assert_eq!(run(&mut r, read), ClientReply::Done(MapReply::Value(None)));
}

#[test]
fn security_without_a_principal_nobody_is_checked() {
    // A node without TLS orders requests with no principal.
    let mut r = replica(1, 1, 1 << 20);
    let key = my_key(&r);
    let request = as_user(&r, None, None, put(&key, b"v"));
    assert_eq!(
        run(&mut r, request),
        ClientReply::Done(MapReply::Value(None))
    );
    let _ = MapVersion(0);
}
