package io.amulet.client;

import amulet.v1.AmuletOuterClass.BalancerStatus;
import amulet.v1.AmuletOuterClass.SetBalancerRequest;
import amulet.v1.AmuletOuterClass.StatusResponse;
import io.grpc.Metadata;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.SortedMap;
import java.util.TreeMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;

/**
 * Each node's balancer switch (docs/dynatree.md, "Pause and decisions"),
 * as the Rust client's {@code set_balancer} and {@code amulet balancer
 * pause|resume|status}. A paused node proposes no split, merge or move (one
 * already proposed still takes effect); the node keeps the switch in its
 * data directory across restarts, over its configuration's {@code
 * [balancer] enabled}. Each node proposes for the partitions it leads, so
 * pausing the cluster is pausing every node ({@link #setEverywhere}).
 *
 * <pre>{@code
 * Balancer balancer = new Balancer(client);
 * balancer.setEverywhere(false);          // pause every node
 * balancer.status(1).getEnabled();        // false
 * balancer.setEverywhere(true);           // resume
 * }</pre>
 *
 * <p>The answers are the protocol's {@link BalancerStatus}: {@code enabled},
 * the counters of changes proposed since the node started ({@code
 * splits_proposed}, {@code load_splits_proposed}, {@code
 * tail_splits_proposed}, {@code merges_proposed}, {@code moves_proposed}) and
 * its last decisions ({@code recent}, oldest first).
 */
public final class Balancer {
  private final AmuletClient client;

  /** The switches of the nodes of {@code client}'s cluster. */
  public Balancer(AmuletClient client) {
    this.client = Objects.requireNonNull(client, "client");
  }

  /**
   * Pauses ({@code enabled} false) or resumes the balancer of the node at
   * {@code address} (its client API address, host:port); its state after the
   * change. Setting the switch twice is harmless, so a node that does not
   * answer (or answers {@code behind} or {@code retryable}) is asked again
   * until the operation timeout.
   *
   * @throws AmuletException {@code PERMISSION_DENIED} without the cluster
   *     admin role (at once, nothing changed); {@code UNAVAILABLE} when the
   *     node did not answer in time (it may or may not have taken the switch)
   */
  public BalancerStatus set(String address, boolean enabled) {
    Objects.requireNonNull(address, "address");
    if (client.isClosed()) {
      throw new IllegalStateException("the client is closed");
    }
    SetBalancerRequest request = SetBalancerRequest.newBuilder().setEnabled(enabled).build();
    Backoff backoff = new Backoff(client);
    while (true) {
      try {
        return client.stub(address).setBalancer(request);
      } catch (StatusRuntimeException e) {
        Status status = e.getStatus();
        Metadata trailers = e.getTrailers();
        String kind = trailers == null ? null : trailers.get(AmuletClient.AMULET_ERROR);
        String described = "set balancer at " + address + ": " + status.getDescription();
        boolean again =
            status.getCode() == Status.Code.UNAVAILABLE
                || status.getCode() == Status.Code.DEADLINE_EXCEEDED
                || "behind".equals(kind)
                || "retryable".equals(kind);
        if (!again) {
          String reason = trailers == null ? null : trailers.get(AmuletClient.AMULET_REASON);
          throw AmuletException.fromStatus(status.withDescription(described), reason);
        }
        backoff.pauseOrGiveUp(described);
      }
    }
  }

  /** {@link #set(String, boolean)} at the node with id {@code node} in the partition map. */
  public BalancerStatus set(int node, boolean enabled) {
    return set(address(node), enabled);
  }

  /**
   * {@link #set(String, boolean)} at every node of the client's partition
   * map, all at once: by node id, each node's answer. A node that failed (a
   * node down, say) keeps its switch: set it again once it is back; the
   * others keep the new one.
   */
  public SortedMap<Integer, Answer> setEverywhere(boolean enabled) {
    List<Map.Entry<Integer, String>> nodes =
        new ArrayList<>(new TreeMap<>(client.routing().addresses).entrySet());
    SortedMap<Integer, Answer> answers = new TreeMap<>();
    if (nodes.isEmpty()) {
      return answers;
    }
    ExecutorService pool =
        Executors.newFixedThreadPool(
            Math.min(nodes.size(), 16),
            r -> {
              Thread t = new Thread(r, "amulet-balancer");
              t.setDaemon(true);
              return t;
            });
    try {
      List<Future<BalancerStatus>> calls = new ArrayList<>();
      for (Map.Entry<Integer, String> n : nodes) {
        calls.add(pool.submit(() -> set(n.getValue(), enabled)));
      }
      for (int i = 0; i < nodes.size(); i++) {
        int node = nodes.get(i).getKey();
        String address = nodes.get(i).getValue();
        try {
          answers.put(node, new Answer(node, address, calls.get(i).get(), null));
        } catch (ExecutionException e) {
          if (!(e.getCause() instanceof RuntimeException)) {
            throw new IllegalStateException(e.getCause());
          }
          answers.put(node, new Answer(node, address, null, (RuntimeException) e.getCause()));
        }
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new AmuletException(AmuletException.Kind.UNAVAILABLE, "interrupted");
    } finally {
      pool.shutdownNow();
    }
    return Collections.unmodifiableSortedMap(answers);
  }

  /**
   * The balancer of the node at {@code address}, from its Status (one
   * attempt; no role needed).
   *
   * @throws AmuletException {@code PROTOCOL} from a node too old to report it
   */
  public BalancerStatus status(String address) {
    StatusResponse s = client.status(Objects.requireNonNull(address, "address"));
    if (!s.hasBalancer()) {
      throw new AmuletException(
          AmuletException.Kind.PROTOCOL,
          "node " + s.getNode() + " does not report its balancer (it predates SetBalancer)");
    }
    return s.getBalancer();
  }

  /** {@link #status(String)} of the node with id {@code node} in the partition map. */
  public BalancerStatus status(int node) {
    return status(address(node));
  }

  /** {@code node}'s address in the partition map (fetched again once if it is not there). */
  private String address(int node) {
    String address = client.routing().addresses.get(node);
    if (address == null) {
      client.refreshMap(null);
      address = client.routing().addresses.get(node);
    }
    if (address == null) {
      throw new IllegalArgumentException("node " + node + " is not in the partition map");
    }
    return address;
  }

  /**
   * One node's answer to {@link #setEverywhere}: its balancer's state after
   * the change, or why it failed ({@code error}, an {@link AmuletException}
   * or, for a refusal the client maps so, an {@link IllegalArgumentException}).
   */
  public record Answer(int node, String address, BalancerStatus status, RuntimeException error) {
    /** Whether the node took the switch. */
    public boolean ok() {
      return error == null;
    }

    /** The node's state after the change; throws {@code error} if it failed. */
    public BalancerStatus get() {
      if (error != null) {
        throw error;
      }
      return status;
    }
  }
}
