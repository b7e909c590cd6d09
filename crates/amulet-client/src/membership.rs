//! Membership from a client (docs/membership.md): a member's graceful
//! leave. Ordered on the global stream; needs the cluster admin role;
//! not retried on a refusal.

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
}
