package io.amulet.client;

import amulet.v1.AmuletGrpc;
import io.grpc.Metadata;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Function;

/**
 * How a client sends its eventual maps' requests (EventualGet, EventualPut,
 * EventualDelete): without session or map version, to the client's current
 * node, which forwards them to the key's replicas; on a node's failure
 * another node becomes current and the request is sent again or fails, as
 * {@link AmuletClient#eventualMap} says. One per client, shared by its
 * {@link EventualMap}s and threads.
 */
final class EventualRequests {
  /** An eventual map's request: fewer than r or w replicas answered. */
  static final String QUORUM_NOT_REACHED = "quorum-not-reached";
  /**
   * How long a node waits for an eventual map's replicas before it answers
   * {@code quorum-not-reached}; an eventual request's attempt may take this
   * much longer than {@link ClientConfig#attemptTimeout()}.
   */
  static final Duration EVENTUAL_QUORUM_WAIT = Duration.ofSeconds(2);

  private final AmuletClient client;
  /** The node eventual maps' requests go to (null: none chosen yet). */
  private final AtomicReference<String> eventualNode = new AtomicReference<>();

  EventualRequests(AmuletClient client) {
    this.client = client;
  }

  /**
   * Runs one eventual map request ({@code call} on a stub of the current
   * node), failing over as {@link AmuletClient#eventualMap} says.
   */
  <T> T send(String map, boolean write, Function<AmuletGrpc.AmuletBlockingStub, T> call) {
    if (client.isClosed()) {
      throw new IllegalStateException("the client is closed");
    }
    ClientConfig config = client.config();
    long deadline = System.nanoTime() + config.operationTimeout().toNanos();
    long backoff = AmuletClient.BACKOFF_MIN_NANOS;
    Set<String> failed = new HashSet<>();
    String address = currentNode();
    while (true) {
      StatusRuntimeException error;
      try {
        return call.apply(
            AmuletGrpc.newBlockingStub(client.channelAt(address))
                .withDeadlineAfter(
                    config.attemptTimeout().plus(EVENTUAL_QUORUM_WAIT).toMillis(),
                    TimeUnit.MILLISECONDS));
      } catch (StatusRuntimeException e) {
        error = e;
      }
      Status status = error.getStatus();
      Metadata trailers = error.getTrailers();
      String reason = trailers == null ? null : trailers.get(AmuletClient.AMULET_REASON);
      if (reason == null && trailers != null) {
        reason = trailers.get(AmuletClient.AMULET_ERROR);
      }
      String message = address + ": " + status.getCode() + ": " + status.getDescription();
      boolean nodeFailed;
      // NOT_FOUND from a node behind the map's creation: another node may take it.
      boolean nodeBehind = false;
      switch (status.getCode()) {
        case UNAVAILABLE:
          nodeFailed = !QUORUM_NOT_REACHED.equals(reason);
          break;
        case DEADLINE_EXCEEDED:
        case CANCELLED:
        case UNKNOWN:
          nodeFailed = true;
          break;
        case NOT_FOUND:
          // The node may not have executed the map's creation yet: if the
          // newest partition map (the answering node's, if newer than the
          // cached one) has the map, the node is behind; it took nothing.
          client.refreshMap(address);
          nodeFailed = client.routing().knows(map);
          nodeBehind = nodeFailed;
          break;
        default:
          nodeFailed = false;
          break;
      }
      if (!nodeFailed) {
        if (QUORUM_NOT_REACHED.equals(reason)) {
          throw AmuletException.withReason(
              AmuletException.Kind.UNAVAILABLE,
              message + (write ? " (the write may have taken effect at some replicas)" : ""),
              reason);
        }
        throw AmuletException.fromStatus(status, reason);
      }
      failed.add(address);
      String next = nextNode(address, failed);
      if (write && !nodeBehind && !connectionRefused(error)) {
        throw new AmuletException(
            AmuletException.Kind.OUTCOME_UNKNOWN,
            message + " (the node failed before answering: the write may have taken effect)");
      }
      long left = deadline - System.nanoTime();
      if (left <= 0) {
        if (nodeBehind) {
          throw AmuletException.fromStatus(status, reason);
        }
        throw new AmuletException(
            AmuletException.Kind.UNAVAILABLE,
            "gave up after " + config.operationTimeout() + ": " + message);
      }
      if (next == null) {
        // Every node failed once: pause, look for new nodes, go round again.
        AmuletClient.sleepNanos(Math.min(backoff, left));
        backoff = Math.min(backoff * 2, AmuletClient.BACKOFF_MAX_NANOS);
        client.refreshMap(null);
        failed.clear();
        failed.add(address);
        next = nextNode(address, failed);
        if (next == null) {
          next = address;
        }
      }
      address = next;
    }
  }

  /** Whether the call failed because its connection was refused: the node surely did not take it. */
  static boolean connectionRefused(Throwable e) {
    for (int depth = 0; e != null && depth < 16; depth++, e = e.getCause()) {
      if (e instanceof java.net.ConnectException) {
        return true;
      }
    }
    return false;
  }

  /** The nodes eventual requests may go to: those of the partition map, else the seeds. */
  private List<String> candidates() {
    Set<String> all = new LinkedHashSet<>();
    Routing r = client.routing();
    if (r != null) {
      all.addAll(r.addresses.values());
    }
    if (all.isEmpty()) {
      all.addAll(client.seeds());
    }
    return new ArrayList<>(all);
  }

  /** The node eventual requests go to; chosen at random the first time. */
  String currentNode() {
    String current = eventualNode.get();
    if (current != null) {
      return current;
    }
    List<String> all = candidates();
    eventualNode.compareAndSet(null, all.get(ThreadLocalRandom.current().nextInt(all.size())));
    return eventualNode.get();
  }

  /**
   * Makes {@code address} the node eventual requests go to: the node that
   * executed this client's map or log change (it has the new map), or a
   * test's choice.
   */
  void useNode(String address) {
    eventualNode.set(Objects.requireNonNull(address));
  }

  /**
   * After {@code failedAddress} failed: makes another node current (unless
   * another thread already moved on) and returns a node not in {@code
   * failed} to try next, or null if every node is in it.
   */
  private String nextNode(String failedAddress, Set<String> failed) {
    String current = eventualNode.get();
    if (current != null && !current.equals(failedAddress) && !failed.contains(current)) {
      return current;
    }
    List<String> left = candidates();
    left.removeAll(failed);
    if (left.isEmpty()) {
      return null;
    }
    String next = left.get(ThreadLocalRandom.current().nextInt(left.size()));
    eventualNode.compareAndSet(current, next);
    return next;
  }
}
