package io.amulet.client;

import java.security.SecureRandom;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ThreadLocalRandom;
import java.util.function.LongSupplier;

/**
 * The replica a map or log command's attempt goes to, as the Rust client
 * (crates/amulet-client: {@code routing::replica}, {@code
 * Resend::next_request}, {@code Client::suspects} and {@code judge}).
 *
 * <p>With {@link ClientConfig#oneReplicaPerPartition()} the client draws a
 * random seed once, and an attempt that does not follow a failure goes to
 * the partition's replica {@link Routing#preferred} by that seed, so the
 * operations of a partition meet in one node's batches ({@link Batcher}).
 * A resend after a failed attempt goes to a random replica other than the
 * one that failed, as every attempt does without the option: a resend that
 * only avoided the last failure and otherwise preferred would alternate
 * between two replicas and never try a third.
 *
 * <p>A node that gave no answer (the attempt timed out, the connection
 * broke) or answered {@code behind} is a suspect for two attempt timeouts:
 * left out of the candidates unless that leaves none, so a preferring
 * client does not send every operation to a dead node first. An attempt it
 * executed clears it. Thread-safe.
 */
final class ReplicaChooser {
  private static final SecureRandom RANDOM = new SecureRandom();

  /** The seed of this client's preference; null: a random replica each attempt. */
  private final Long seed;
  /** How long a suspect is left out. */
  private final long suspectNanos;
  /** Now, in nanoseconds (System.nanoTime, or a test's clock). */
  private final LongSupplier clock;
  /** Suspected node ids and until when (clock nanos). */
  private final Map<Integer, Long> suspects = new ConcurrentHashMap<>();

  /** The chooser of a client with {@code config}, drawing its seed now if it prefers. */
  ReplicaChooser(ClientConfig config) {
    this(
        config.oneReplicaPerPartition() ? Long.valueOf(RANDOM.nextLong()) : null,
        config.attemptTimeout(),
        System::nanoTime);
  }

  /** A chooser with a given seed (null: random replicas), attempt timeout and clock (tests). */
  ReplicaChooser(Long seed, Duration attemptTimeout, LongSupplier clock) {
    this.seed = seed;
    // At most ~146 years, so that (until - now) compares as System.nanoTime's differences do.
    this.suspectNanos = Math.min(attemptTimeout.toNanos(), Long.MAX_VALUE / 4) * 2;
    this.clock = clock;
  }

  /** This client's seed; null when it does not prefer. */
  Long seed() {
    return seed;
  }

  /**
   * The node for an attempt of a command of {@code partition} routed by
   * {@code routing}: among the partition's replicas with an address, the
   * unsuspected ones (all of them if none is), {@code failedAt} left out if
   * another remains; the preferred one when {@code failedAt} is null and
   * this client prefers, else a random one.
   *
   * @param failedAt the node the previous attempt of this operation failed
   *     at, null if there was none or it did not fail
   * @throws AmuletException PROTOCOL when no replica has an address
   */
  int choose(Routing routing, int partition, Integer failedAt) {
    List<Integer> candidates = unsuspected(routing.replicasWithAddress(partition));
    if (candidates.isEmpty()) {
      throw new AmuletException(
          AmuletException.Kind.PROTOCOL, "no address for a replica of partition " + partition);
    }
    if (candidates.size() > 1 && failedAt != null) {
      candidates.remove(failedAt);
    }
    if (seed != null && failedAt == null) {
      return Routing.preferred(candidates, seed);
    }
    return candidates.get(ThreadLocalRandom.current().nextInt(candidates.size()));
  }

  /**
   * The node a session opening or renewal goes to: any node of {@code
   * routing} with an address, unsuspected ones first, as the Rust client's
   * {@code Resend::next_request} draws it. Its outcome is judged like a
   * command's: a client opening its session while a node is dead for good
   * drew that node again and again (simulator seed 109 of {@code --dmap}).
   *
   * @return a node id, or null when the map names no address
   */
  Integer anyNode(Routing routing) {
    List<Integer> candidates = unsuspected(new ArrayList<>(routing.addresses.keySet()));
    if (candidates.isEmpty()) {
      return null;
    }
    return candidates.get(ThreadLocalRandom.current().nextInt(candidates.size()));
  }

  /** {@code nodes} (a fresh list) without the nodes suspected now, unless that leaves none. */
  List<Integer> unsuspected(List<Integer> nodes) {
    List<Integer> all = new ArrayList<>(nodes);
    if (suspects.isEmpty()) {
      return all;
    }
    long now = clock.getAsLong();
    List<Integer> rest = new ArrayList<>(all.size());
    for (int node : all) {
      Long until = suspects.get(node);
      if (until == null || until - now <= 0) {
        rest.add(node);
      }
    }
    return rest.isEmpty() ? all : rest;
  }

  /** An attempt at {@code node} got no answer in time, or it is behind: a suspect for a while. */
  void suspect(int node) {
    suspects.put(node, clock.getAsLong() + suspectNanos);
  }

  /** {@code node} executed an attempt: no longer a suspect. */
  void executed(int node) {
    suspects.remove(node);
  }

  /** Whether {@code node} is a suspect now (tests). */
  boolean suspected(int node) {
    Long until = suspects.get(node);
    return until != null && until - clock.getAsLong() > 0;
  }
}
