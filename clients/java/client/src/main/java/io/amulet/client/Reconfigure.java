package io.amulet.client;

import amulet.v1.AmuletGrpc;
import amulet.v1.AmuletOuterClass.ReconfigureRequest;
import amulet.v1.AmuletOuterClass.StreamStatus;
import io.grpc.Metadata;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;

/**
 * Changes of the partitioning ordered on the global stream ({@code
 * Reconfigure}: a split, merge, stream replacement or move), as
 * crates/amulet-client/src/reconfigure.rs. Used by {@link BulkLoad}'s
 * splits.
 */
final class Reconfigure {
  private Reconfigure() {}

  /**
   * Sends the change {@code build} makes from the freshest map this client
   * can get, and returns the request accepted (its {@code map_version} the
   * version the change was made from) once the cluster ordered and accepted
   * it; every replica applies it at a fence soon after. The change is built
   * again at every attempt, so ids it allocates from the map ({@link
   * Routing#nextPartitionId}, {@link Routing#nextStreamId}) are fresh: a
   * change that raced another one ({@code stale-map}) is built again on the
   * map after it, three times at most. A node behind the map version
   * ({@code behind}), or one whose earlier change still waits for its fence
   * ({@code retryable}, reason {@code reconfiguration-pending}), is asked
   * again until the operation timeout. The change goes to a replica of the
   * first partition (one that executes the global stream), and to another
   * after {@code not-a-replica}. Not resent on an unknown outcome (a
   * resend would be refused as stale or as overlapping).
   *
   * @throws IllegalArgumentException for a change that cannot apply (the
   *     cluster's INVALID_ARGUMENT: unknown partition, stream id in use, a
   *     cut outside the source's range)
   * @throws AmuletException {@code OUTCOME_UNKNOWN} when no answer came in
   *     time; {@code UNAVAILABLE} when the map kept changing or the nodes
   *     stayed behind; the kind of any other refusal
   */
  static ReconfigureRequest with(AmuletClient client, Function<Routing, ReconfigureRequest> build) {
    if (client.isClosed()) {
      throw new IllegalStateException("the client is closed");
    }
    Backoff backoff = new Backoff(client);
    int raced = 0;
    while (raced < 3) {
      client.refreshMap(null);
      Routing map = client.routing();
      ReconfigureRequest change = build.apply(map).toBuilder().setMapVersion(map.version).build();
      if (change.getChangeCase() == ReconfigureRequest.ChangeCase.CHANGE_NOT_SET) {
        throw new IllegalArgumentException("reconfigure: the change built has no change set");
      }
      String address = globalNode(client, map);
      long left =
          Math.max(
              backoff.deadline() - System.nanoTime(), client.config().attemptTimeout().toNanos());
      try {
        AmuletGrpc.newBlockingStub(client.channelAt(address))
            .withDeadlineAfter(left, TimeUnit.NANOSECONDS)
            .reconfigure(change);
        return change;
      } catch (StatusRuntimeException e) {
        Status status = e.getStatus();
        Metadata trailers = e.getTrailers();
        String kind = trailers == null ? null : trailers.get(AmuletClient.AMULET_ERROR);
        String described = "reconfigure at " + address + ": " + status.getDescription();
        if ("stale-map".equals(kind)) {
          raced++;
          continue;
        }
        // A node that replicates nothing (any more) executes no
        // reconfiguration: another node, by the newer map.
        if (!"behind".equals(kind) && !"retryable".equals(kind) && !"not-a-replica".equals(kind)) {
          if (status.getCode() == Status.Code.DEADLINE_EXCEEDED) {
            throw new AmuletException(
                AmuletException.Kind.OUTCOME_UNKNOWN, "reconfigure: no answer in time from " + address);
          }
          String reason = trailers == null ? null : trailers.get(AmuletClient.AMULET_REASON);
          throw AmuletException.fromStatus(status.withDescription(described), reason);
        }
        backoff.pauseOrGiveUp(described);
      }
    }
    throw new AmuletException(
        AmuletException.Kind.UNAVAILABLE, "reconfigure: the map kept changing");
  }

  /**
   * A node that orders and executes the global stream by {@code map} (a
   * random replica of its first partition), else any node: a member that
   * replicates nothing (a spare, or one whose partitions moved away)
   * answers a reconfiguration {@code not-a-replica}.
   */
  private static String globalNode(AmuletClient client, Routing map) {
    List<String> replicas = map.replicaAddresses(map.partitions.firstKey());
    if (replicas.isEmpty()) {
      return client.anyNode();
    }
    return replicas.get(ThreadLocalRandom.current().nextInt(replicas.size()));
  }

  /**
   * Every stream some node runs (from {@code Status}), for stream ids to
   * allocate above: a node's configuration file may name streams the map
   * does not know. Nodes that do not answer are skipped (the map still
   * knows every stream a partition uses).
   */
  static List<Integer> runningStreams(AmuletClient client) {
    List<Integer> streams = new ArrayList<>();
    for (String address : client.routing().addresses.values()) {
      try {
        for (StreamStatus s : client.status(address).getStreamsList()) {
          streams.add(s.getStream());
        }
      } catch (RuntimeException e) {
        // Not answering (or refusing): skipped.
      }
    }
    return streams;
  }
}
