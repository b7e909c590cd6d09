package io.amulet.client;

import amulet.v1.AmuletOuterClass;
import amulet.v1.AmuletOuterClass.MapRequest;
import amulet.v1.AmuletOuterClass.MapResponse;
import com.google.protobuf.ByteString;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.Executor;
import java.util.concurrent.Flow;

/**
 * A handle on one named log of the cluster (DLog; {@link
 * AmuletClient#log}, {@link AmuletClient#createLog}): entries at dense
 * positions 0, 1, ... that are never reused. The log lives whole in the
 * partition that owns its name, so each call is one linearizable request
 * to that partition (crates/amulet-client/src/log.rs); a {@linkplain
 * #tail(long) tail} follows it on a server stream from one of that
 * partition's replicas. Cheap and thread-safe.
 *
 * <p>Errors: {@link AmuletException} of kind {@code NOT_FOUND} if the log
 * does not exist, {@code OUT_OF_RANGE} for a position outside the log;
 * {@link IllegalArgumentException} for an invalid request (an entry above
 * the cluster's value limit, a read of 0 or too many entries, a negative
 * position).
 */
public final class AmuletLog {
  /**
   * The longest pause between the polling reads of a {@link #tail(long)}
   * when caught up (against a node without {@code TailLog} only).
   */
  public static final Duration DEFAULT_MAX_POLL = Duration.ofMillis(100);

  private final AmuletClient client;
  private final String name;

  AmuletLog(AmuletClient client, String name) {
    this.client = client;
    this.name = name;
  }

  /** Where a log's requests go: its name as a key of its own (hash) keyspace. */
  static Placement placement(String log) {
    return Placement.key(log, log.getBytes(StandardCharsets.UTF_8));
  }

  /** The log's name. */
  public String name() {
    return name;
  }

  /** The client. */
  public AmuletClient client() {
    return client;
  }

  @Override
  public String toString() {
    return "AmuletLog(" + name + ")";
  }

  private MapResponse execute(MapRequest request, MapResponse.ResultCase want) {
    MapResponse r = client.execute(request, placement(name));
    if (r.getResultCase() != want) {
      throw new AmuletException(
          AmuletException.Kind.PROTOCOL, "expected a " + want + " reply, got " + r.getResultCase());
    }
    return r;
  }

  private static long checkPosition(long position, String what) {
    if (position < 0) {
      throw new IllegalArgumentException(what + " is negative: " + position);
    }
    return position;
  }

  /**
   * Appends {@code value}; returns its position. Resent by the client under
   * its session after a lost answer, it lands once.
   */
  public long append(byte[] value) {
    Objects.requireNonNull(value, "value");
    return execute(
            MapRequest.newBuilder()
                .setAppend(
                    AmuletOuterClass.Append.newBuilder()
                        .setLog(name)
                        .setValue(ByteString.copyFrom(value)))
                .build(),
            MapResponse.ResultCase.POSITION)
        .getPosition();
  }

  /**
   * Up to {@code maxEntries} entries from position {@code from} (fewer when
   * the node's byte limit per read is reached; at least one when one
   * exists). {@code from} equal to the end reads nothing.
   *
   * @throws AmuletException {@code OUT_OF_RANGE} if {@code from} is below
   *     the first position (trimmed) or past the end
   * @throws IllegalArgumentException if {@code maxEntries} is not in 1 ..=
   *     the cluster's range_entries_max (10,000 by default)
   */
  public LogEntries read(long from, int maxEntries) {
    checkPosition(from, "from");
    if (maxEntries < 0) {
      throw new IllegalArgumentException("maxEntries is negative: " + maxEntries);
    }
    AmuletOuterClass.LogEntries r =
        execute(
                MapRequest.newBuilder()
                    .setReadLog(
                        AmuletOuterClass.ReadLog.newBuilder()
                            .setLog(name)
                            .setFrom(from)
                            .setMaxEntries(maxEntries))
                    .build(),
                MapResponse.ResultCase.LOG_ENTRIES)
            .getLogEntries();
    List<byte[]> entries = new ArrayList<>(r.getEntriesCount());
    for (ByteString e : r.getEntriesList()) {
      entries.add(e.toByteArray());
    }
    return new LogEntries(r.getFrom(), entries, r.getFirst(), r.getEnd());
  }

  /**
   * Drops the entries below {@code below} (below the first position:
   * nothing changes); returns the bounds after.
   *
   * @throws AmuletException {@code OUT_OF_RANGE} if {@code below} is past
   *     the end (nothing changes)
   */
  public LogBounds trim(long below) {
    checkPosition(below, "below");
    return bounds(
        execute(
            MapRequest.newBuilder()
                .setTrimLog(AmuletOuterClass.TrimLog.newBuilder().setLog(name).setBelow(below))
                .build(),
            MapResponse.ResultCase.LOG_BOUNDS));
  }

  /** The log's first position and end. */
  public LogBounds bounds() {
    return bounds(
        execute(
            MapRequest.newBuilder()
                .setLogBounds(AmuletOuterClass.LogBounds.newBuilder().setLog(name))
                .build(),
            MapResponse.ResultCase.LOG_BOUNDS));
  }

  private static LogBounds bounds(MapResponse r) {
    return new LogBounds(r.getLogBounds().getFirst(), r.getLogBounds().getEnd());
  }

  /**
   * Follows the log from position {@code from}: see {@link #tail(long,
   * Duration)}.
   */
  public LogTail tail(long from) {
    return tail(from, DEFAULT_MAX_POLL);
  }

  /**
   * Follows the log from position {@code from}: the {@link LogTail}'s
   * {@code next()} returns every entry from there in order, waiting for new
   * ones. The entries come on a server stream ({@code TailLog}) from a
   * random replica of the log's partition as it executes them, read with
   * flow control; when the stream breaks (the node stopped, the log moved,
   * no heartbeat for {@link LogTail#IDLE}) the tail reopens it at a replica
   * from the position after the last entry it got, with the client's
   * backoff, for at most the client's operation timeout ({@code
   * UNAVAILABLE} then): no gap, no duplicate. Against a node without {@code
   * TailLog} it polls with linearizable reads instead, the pause when caught
   * up growing from 1 ms to {@code maxPoll}. Resume after a failure with
   * {@link LogTail#position()}. The first {@code next} checks {@code from}
   * with one linearizable read of the log's bounds: below the first
   * position (trimmed) or past the end is {@code OUT_OF_RANGE} at once, an
   * unknown log {@code NOT_FOUND}, as a read from there would be. A tail
   * that falls below a trim later gets {@code OUT_OF_RANGE}; a dropped log
   * {@code NOT_FOUND} (a stream's {@code NOT_FOUND} is checked by a read of
   * the bounds: if the log exists, the replica was behind and the stream is
   * reopened elsewhere). Close the tail when done: it holds a stream open.
   *
   * @param maxPoll the longest pause between polling reads (only against a
   *     node without {@code TailLog})
   */
  public LogTail tail(long from, Duration maxPoll) {
    checkPosition(from, "from");
    return new LogTail(this, from, maxPoll);
  }

  /**
   * The entries from {@code from} on as a {@link Flow.Publisher}: each
   * subscriber follows the log with a {@link LogTail} of its own (a stream
   * from a replica, read only as far as the subscriber's demand goes), on a
   * thread of its own (a daemon, started when there is demand, which blocks
   * while the tail waits). A failure of the tail ({@code NOT_FOUND}, {@code
   * OUT_OF_RANGE}, {@code UNAVAILABLE} after the operation timeout; see
   * {@link #tail(long, Duration)}) is {@code onError}; the stream never
   * completes. Cancelling closes the tail and its stream at once.
   */
  public Flow.Publisher<LogEntry> publisher(long from) {
    return publisher(from, DEFAULT_MAX_POLL, LogPublisher.THREAD_PER_RUN);
  }

  /**
   * As {@link #publisher(long)}, delivering on {@code executor} (its tasks
   * block while the tail waits: give it threads to spare); {@code maxPoll}
   * as for {@link #tail(long, Duration)}.
   */
  public Flow.Publisher<LogEntry> publisher(long from, Duration maxPoll, Executor executor) {
    checkPosition(from, "from");
    Objects.requireNonNull(maxPoll, "maxPoll");
    Objects.requireNonNull(executor, "executor");
    return new LogPublisher(this, from, maxPoll, executor);
  }
}
