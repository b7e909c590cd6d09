package io.amulet.client;

import amulet.v1.AmuletGrpc;
import io.grpc.Metadata;
import io.grpc.StatusRuntimeException;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;

/**
 * The calls of {@link AmuletClient}'s access control and membership changes
 * ({@code grant}, {@code createToken}, {@code leave}, {@code join}, ...;
 * docs/security.md, docs/membership.md):
 * not map commands, so no session and no replica to route to.
 */
final class AdminCall {
  private AdminCall() {}

  /**
   * One access call to a random node within the operation timeout; to
   * another when the connection was refused, or for a read ({@code
   * readOnly}) that found the node unavailable. Refusals are final.
   */
  static <T> T call(
      AmuletClient client,
      String what,
      boolean readOnly,
      Function<AmuletGrpc.AmuletBlockingStub, T> call) {
    if (client.isClosed()) {
      throw new IllegalStateException("the client is closed");
    }
    Backoff backoff = new Backoff(client);
    String address = client.anyNode();
    while (true) {
      long left = backoff.deadline() - System.nanoTime();
      try {
        return call.apply(
            AmuletGrpc.newBlockingStub(client.channelAt(address))
                .withDeadlineAfter(Math.max(left, 1), TimeUnit.NANOSECONDS));
      } catch (StatusRuntimeException e) {
        io.grpc.Status status = e.getStatus();
        boolean again =
            status.getCode() == io.grpc.Status.Code.UNAVAILABLE
                && (readOnly || EventualRequests.connectionRefused(e));
        String described = what + " at " + address + ": " + status.getDescription();
        if (!again) {
          if (readOnly && status.getCode() == io.grpc.Status.Code.DEADLINE_EXCEEDED) {
            throw new AmuletException(AmuletException.Kind.UNAVAILABLE, described);
          }
          Metadata trailers = e.getTrailers();
          String reason = trailers == null ? null : trailers.get(AmuletClient.AMULET_REASON);
          throw AmuletException.fromStatus(status.withDescription(described), reason);
        }
        backoff.pauseOrGiveUp(described);
        String next = client.anyNode();
        for (int i = 0; i < 4 && next.equals(address); i++) {
          next = client.anyNode();
        }
        address = next;
      }
    }
  }
}
