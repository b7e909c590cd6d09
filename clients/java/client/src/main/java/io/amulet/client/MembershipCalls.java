package io.amulet.client;

import amulet.v1.AmuletOuterClass.ChangeMembershipRequest;
import amulet.v1.AmuletOuterClass.ChangeMembershipResponse;
import amulet.v1.AmuletOuterClass.JoinRequest;
import java.util.Objects;

/**
 * Membership calls (docs/membership.md): a member's graceful leave and a
 * new node's join, ordered on the global stream; {@link AmuletClient#leave}
 * and {@link AmuletClient#join} call these.
 */
final class MembershipCalls {
  private MembershipCalls() {}

  /**
   * Member {@code node} leaves the cluster gracefully (docs/membership.md):
   * ordered on the global stream, the next view removes it, self-healing
   * moves its partitions onto the other live nodes, and the node stops by
   * itself once it holds none. Needs the cluster admin role.
   *
   * @throws AmuletException {@code FAILED_PRECONDITION} (nothing changed)
   *     for a node that is not an active member, the last member, an
   *     acceptor of the global stream no other live member could replace,
   *     or one whose partitions have no other live node to move to;
   *     {@code INVALID_ARGUMENT} for node 0
   */
  static void leave(AmuletClient client, int node) {
    ChangeMembershipRequest request = ChangeMembershipRequest.newBuilder().setLeave(node).build();
    AdminCall.call(client, "leave", false, stub -> stub.changeMembership(request));
  }

  /**
   * A new node joins the cluster (docs/membership.md): ordered on the
   * global stream, the view gets a member {@code Joining} at {@code
   * peerAddress} (where the members reach its peer port, {@code ip:port})
   * serving clients at {@code clientAddress} ({@code ip:port}); its
   * observers admit it at the next view change once they reach it, and the
   * balancer then moves partitions onto it. {@code amulet join} starts the
   * node with the id returned. Needs the cluster admin role. The addresses
   * are checked by the node, not here.
   *
   * @return the id the new node got
   * @throws IllegalArgumentException ({@code INVALID_ARGUMENT}, nothing
   *     ordered) for an address that is not {@code ip:port}, or is
   *     unspecified ({@code 0.0.0.0} or port 0)
   * @throws AmuletException {@code FAILED_PRECONDITION} (nothing changed)
   *     when a node of the view is already at {@code peerAddress}, or
   *     membership is not configured; {@code OUTCOME_UNKNOWN} when no
   *     answer came in time, or {@code UNAVAILABLE} after the connection
   *     broke (either way the join may have been ordered: not sent again,
   *     look at the view before asking again)
   */
  static int join(AmuletClient client, String peerAddress, String clientAddress) {
    ChangeMembershipRequest request =
        ChangeMembershipRequest.newBuilder()
            .setJoin(
                JoinRequest.newBuilder()
                    .setPeerAddress(Objects.requireNonNull(peerAddress, "peerAddress"))
                    .setClientAddress(Objects.requireNonNull(clientAddress, "clientAddress")))
            .build();
    ChangeMembershipResponse r =
        AdminCall.call(client, "join", false, stub -> stub.changeMembership(request));
    return r.getNode();
  }
}
