package io.amulet.client;

import java.time.Duration;

/**
 * How an {@link AmuletClient} behaves; the defaults are the Rust client's
 * (crates/amulet-client/src/config.rs). Immutable: the {@code with} methods
 * return a changed copy.
 */
public final class ClientConfig {
  private final Duration attemptTimeout;
  private final Duration operationTimeout;
  private final Duration sessionLease;
  private final Duration snapshotLease;
  private final int pageEntries;
  private final int rangeEntries;
  private final int batchesInFlight;

  private ClientConfig(
      Duration attemptTimeout,
      Duration operationTimeout,
      Duration sessionLease,
      Duration snapshotLease,
      int pageEntries,
      int rangeEntries,
      int batchesInFlight) {
    this.batchesInFlight = batchesInFlight;
    this.attemptTimeout = attemptTimeout;
    this.operationTimeout = operationTimeout;
    this.sessionLease = sessionLease;
    this.snapshotLease = snapshotLease;
    this.pageEntries = pageEntries;
    this.rangeEntries = rangeEntries;
  }

  /** The defaults: 2 s per attempt, 30 s per operation, 120 s session lease. */
  public static ClientConfig defaults() {
    return new ClientConfig(
        Duration.ofSeconds(2), Duration.ofSeconds(30), Duration.ofSeconds(120),
        Duration.ofSeconds(300), 1000, 1000, 2);
  }

  /** How long one attempt may take before it is resent elsewhere. */
  public Duration attemptTimeout() {
    return attemptTimeout;
  }

  /** How long an operation may take in all, retries included. */
  public Duration operationTimeout() {
    return operationTimeout;
  }

  /** Session lease asked for; sessions idle for half of it are renewed. */
  public Duration sessionLease() {
    return sessionLease;
  }

  /** Snapshot lease asked for (an abandoned snapshot is freed after it). */
  public Duration snapshotLease() {
    return snapshotLease;
  }

  /** Entries per snapshot page. */
  public int pageEntries() {
    return pageEntries;
  }

  /** Entries per range-read page when iterating or scanning a range. */
  public int rangeEntries() {
    return rangeEntries;
  }

  public ClientConfig withAttemptTimeout(Duration d) {
    return new ClientConfig(d, operationTimeout, sessionLease, snapshotLease, pageEntries, rangeEntries, batchesInFlight);
  }

  public ClientConfig withOperationTimeout(Duration d) {
    return new ClientConfig(attemptTimeout, d, sessionLease, snapshotLease, pageEntries, rangeEntries, batchesInFlight);
  }

  public ClientConfig withSessionLease(Duration d) {
    return new ClientConfig(attemptTimeout, operationTimeout, d, snapshotLease, pageEntries, rangeEntries, batchesInFlight);
  }

  public ClientConfig withSnapshotLease(Duration d) {
    return new ClientConfig(attemptTimeout, operationTimeout, sessionLease, d, pageEntries, rangeEntries, batchesInFlight);
  }

  /** Entries per snapshot page, 1..10000 (the server's range_entries_max). */
  public ClientConfig withPageEntries(int n) {
    checkPage(n);
    return new ClientConfig(attemptTimeout, operationTimeout, sessionLease, snapshotLease, n, rangeEntries, batchesInFlight);
  }

  /** Entries per range page, 1..10000 (the server's range_entries_max). */
  public ClientConfig withRangeEntries(int n) {
    checkPage(n);
    return new ClientConfig(attemptTimeout, operationTimeout, sessionLease, snapshotLease, pageEntries, n, batchesInFlight);
  }

  /**
   * ExecuteBatch calls in flight to one node at once (default 2): the
   * operations threads issue while all are busy ride together in the next
   * one. 0 turns batching off (one Execute call per operation).
   */
  public int batchesInFlight() {
    return batchesInFlight;
  }

  public ClientConfig withBatchesInFlight(int n) {
    if (n < 0) {
      throw new IllegalArgumentException("batches in flight " + n + " < 0");
    }
    return new ClientConfig(
        attemptTimeout, operationTimeout, sessionLease, snapshotLease, pageEntries, rangeEntries, n);
  }

  private static void checkPage(int n) {
    if (n < 1 || n > 10_000) {
      throw new IllegalArgumentException("page size " + n + " outside 1..10000");
    }
  }
}
