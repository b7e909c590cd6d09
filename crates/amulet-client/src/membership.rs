//! Membership from a client (docs/membership.md): a member's graceful
//! leave, a new node's join. Ordered on the global stream; need the
//! cluster admin role; not retried on a refusal.

use crate::{Client, Error};
use amulet_api::pb;

impl Client {
    /// Asks the cluster to let member `node` leave: once ordered it is
    /// Leaving, the next view removes it, and self-healing moves its
    /// partitions onto the other live nodes; the node stops by itself
    /// when it holds none. Refused (nothing changed) for a node that is
    /// not an active member, the last member, an acceptor of the global
    /// stream, or one whose partitions have no other live node to go to.
    pub async fn leave(&self, node: u32) -> Result<(), Error> {
        let request = pb::ChangeMembershipRequest {
            change: Some(pb::change_membership_request::Change::Leave(node)),
        };
        let (mut channel, _) = self.any_node()?;
        self.timed("leave", channel.change_membership(request))
            .await?;
        Ok(())
    }

    /// Asks the cluster to let a new node join: members reach it at
    /// `peer_address`, clients at `client_address` (both `ip:port`).
    /// Answers the id it got, once ordered: it is Joining in the view,
    /// its observers admit it at the next view change once they reach
    /// it, and the balancer then moves partitions onto it. `amulet join`
    /// asks this, then starts the node under that id. Refused with
    /// nothing ordered for an address that is not `ip:port` or names no
    /// reachable node (`InvalidArgument`), and with nothing changed for
    /// a peer address a node of the view has (`FailedPrecondition`).
    pub async fn join(&self, peer_address: &str, client_address: &str) -> Result<u32, Error> {
        let request = pb::ChangeMembershipRequest {
            change: Some(pb::change_membership_request::Change::Join(
                pb::JoinRequest {
                    peer_address: peer_address.to_string(),
                    client_address: client_address.to_string(),
                },
            )),
        };
        let (mut channel, _) = self.any_node()?;
        let reply = self
            .timed("join", channel.change_membership(request))
            .await?;
        match reply.node {
            0 => Err(Error::Protocol(
                "a join answered without the new node's id".into(),
            )),
            node => Ok(node),
        }
    }
}
