//! The access workload (`amulet-sim --access`, docs/security.md): the
//! clients run as one user, and an administrator assigns it a role and
//! grants and revokes the role's write permission at random times while
//! they run. Two checks:
//!
//! - denied operations are recorded as taking no effect (`MapOp::Denied`),
//!   so the linearizability checker catches a replica that applied one;
//! - access agreement: every replica of every partition is observed after
//!   every step, and the configuration each holds at a global position
//!   must be the one every other replica held there (grants and
//!   revocations take effect at the same point of the order everywhere).

use super::OPERATOR_ENDPOINT;
use crate::harness::Harness;
use crate::rng::Rng;
use crate::violation::{Property, Violation};
use amulet_smr::{AccessChange, AccessControl, Body, ClientRequest, Permission, Principal};
use amulet_types::{NodeId, PartitionId, TimeMicros};
use std::collections::BTreeMap;
use std::hash::{Hash, Hasher};
use std::sync::Arc;

/// The user the clients run as.
const USER: &str = "writer";
/// Its role, whose permission the administrator toggles.
const ROLE: &str = "writers";

/// The clients' principal.
pub(super) fn user() -> Principal {
    Principal::user(USER)
}

/// The administrator's changes and the agreement record.
pub(super) struct AccessWorkload {
    rng: Rng,
    next: TimeMicros,
    /// Changes sent so far (the first assigns the role).
    sent: u64,
    /// Per replica: the global position and configuration last seen.
    seen: BTreeMap<(NodeId, PartitionId), (u64, *const AccessControl)>,
    /// By global position: the configuration's digest and the first
    /// replica seen holding it there.
    by_position: BTreeMap<u64, (u64, NodeId, PartitionId)>,
    /// Agreement is reported once per run.
    diverged: bool,
}

impl AccessWorkload {
    pub(super) fn new(seed: u64) -> AccessWorkload {
        let mut rng = Rng::new(seed ^ 0x6163_6C73);
        AccessWorkload {
            next: TimeMicros(rng.range(0, 200_000)),
            rng,
            sent: 0,
            seen: BTreeMap::new(),
            by_position: BTreeMap::new(),
            diverged: false,
        }
    }

    /// Sends the next change to a random live node when it is due, as the
    /// bootstrap admin: first the role, then grants and revocations of
    /// write (on the map or on every map) at random.
    pub(super) fn change(&mut self, harness: &mut Harness, verbose: bool) {
        let now = harness.now;
        if now < self.next {
            return;
        }
        self.next = now.plus(self.rng.range(50_000, 600_000));
        let live: Vec<(NodeId, u64)> = harness
            .hosts()
            .filter_map(|(n, h)| h.current_map().map(|m| (n, m.version.0)))
            .collect();
        let Some(&(to, version)) = self.rng.pick(&live) else {
            return;
        };
        let map = if self.rng.chance(0.5) {
            "*".to_string()
        } else {
            crate::dmap::workload::map_name().to_string()
        };
        let change = match (self.sent, self.rng.below(3)) {
            (0, _) => AccessChange::AssignRole {
                user: USER.into(),
                role: ROLE.into(),
            },
            (_, 0) => AccessChange::Revoke {
                role: ROLE.into(),
                map,
            },
            (_, 1) => AccessChange::Grant {
                role: ROLE.into(),
                map,
                permission: Permission::Read,
            },
            _ => AccessChange::Grant {
                role: ROLE.into(),
                map,
                permission: Permission::Write,
            },
        };
        self.sent += 1;
        if verbose {
            println!("t={}us access -> {to}: {change:?}", now.0);
        }
        let request = ClientRequest {
            map_version: amulet_types::MapVersion(version),
            session: None,
            body: Body::Access(change),
            principal: Some(Principal::user(amulet_smr::BOOTSTRAP_ADMIN)),
        };
        harness.request(OPERATOR_ENDPOINT, to, 0, None, request);
    }

    /// Records every live replica's configuration at its global position
    /// and reports the first position where two replicas disagree.
    pub(super) fn observe(&mut self, harness: &Harness, violations: &mut Vec<Violation>) {
        for (node, host) in harness.hosts() {
            for (partition, replica) in host.replicas() {
                let position = replica.global_position();
                let access = replica.access_shared();
                let key = (node, *partition);
                let now = (position, Arc::as_ptr(&access));
                if self.seen.get(&key) == Some(&now) {
                    continue;
                }
                self.seen.insert(key, now);
                let digest = digest(&access);
                match self.by_position.get(&position) {
                    None => {
                        self.by_position
                            .insert(position, (digest, node, *partition));
                    }
                    Some(&(first, other_node, other_partition))
                        if first != digest && !self.diverged =>
                    {
                        self.diverged = true;
                        violations.push(Violation::new(
                            Property::AccessAgreement,
                            format!(
                                "at global position {position}, node {node}'s replica of {partition} holds access version {} ({access:?}), node {other_node}'s replica of {other_partition} another",
                                access.version()
                            ),
                        ));
                    }
                    Some(_) => {}
                }
            }
        }
    }
}

fn digest(access: &AccessControl) -> u64 {
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    postcard::to_allocvec(access)
        .expect("encodes")
        .hash(&mut hasher);
    hasher.finish()
}
