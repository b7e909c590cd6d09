package io.amulet.client;

import amulet.v1.AmuletGrpc;
import amulet.v1.AmuletOuterClass;
import amulet.v1.AmuletOuterClass.TailLogRequest;
import com.google.protobuf.ByteString;
import io.grpc.CallOptions;
import io.grpc.ClientCall;
import io.grpc.Metadata;
import io.grpc.Status;
import java.lang.ref.Cleaner;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.NoSuchElementException;
import java.util.Objects;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;

/**
 * A follower of one log ({@link AmuletLog#tail}): {@link #next()} returns
 * every entry from its start position in order, blocking until one is
 * appended; {@link #poll(Duration)} waits a bounded time. It follows the
 * Rust client's {@code Tail} (crates/amulet-client/src/log.rs).
 *
 * <p>The entries come on a server stream ({@code TailLog}) from a random
 * replica of the partition that holds the log, as that replica executes
 * them (every entry it sends is decided and at its position everywhere).
 * The stream is read with flow control: the next message is asked for only
 * once the entries of the last one have been taken, so a slow reader holds
 * a message or two, not the log. While nothing is appended the node sends a
 * heartbeat about every second; a stream silent for {@link #IDLE} is taken
 * as broken. When the stream breaks (the node stopped or is catching up,
 * the log moved away, no heartbeat) the tail reopens it at a random replica
 * (another one if there is one; after {@code not-a-replica} by a fresh
 * partition map) from the position after the last entry it got, with the
 * client's backoff: no gap, no duplicate; {@link #reconnects()} counts
 * those. If no stream delivers anything for the client's operation timeout
 * the tail gives up with {@code UNAVAILABLE}. Against a node without {@code
 * TailLog} (an older server) it polls instead: linearizable reads of up to
 * 1,024 entries, the pause between reads when caught up doubling from 1 ms
 * to its longest pause.
 *
 * <p>The streams are served without ordering, so the tail checks with
 * linearizable reads where a replica behind its peers could mislead it:
 * its first {@code next} or {@code poll} reads the log's bounds once (a
 * start below the first position or past the end is {@code OUT_OF_RANGE}
 * at once, an unknown log {@code NOT_FOUND}, as a read from there would
 * be); a stream that ends with {@code NOT_FOUND} is checked by a read of
 * the bounds too (a replica that has not executed the log's creation yet
 * says so as well): the tail fails with {@code NOT_FOUND} only if that
 * read says so, else it reopens the stream elsewhere. Every {@code
 * TailLog} call carries the cached partition map's version, so a replica
 * with an older map waits for it (then answers {@code UNAVAILABLE}) rather
 * than call the log unknown.
 *
 * <p>It is an {@link Iterator} that never ends unless {@linkplain #close
 * closed}, and an {@link Iterable} over itself, so {@code for (LogEntry e :
 * log.tail(0))} follows the log (once: a second iteration goes on where the
 * first stopped). A failure throws out of {@code next} ({@link
 * AmuletException}: {@code OUT_OF_RANGE} when the tail fell below a trim,
 * {@code NOT_FOUND} when the log does not exist or was dropped, {@code
 * PERMISSION_DENIED} when the user may no longer read it (a grant revoked
 * while following: never reopened), {@code UNAUTHENTICATED} when its
 * credentials are refused (a token revoked or expired), {@code
 * UNAVAILABLE} when no replica served it for the operation timeout or when
 * interrupted; {@link IllegalStateException} once the client is closed);
 * the tail stays usable and the next call goes on from {@link #position()}.
 * Close a tail that is no longer needed (it holds a stream open; one left
 * unreachable is closed when collected). Not for several threads at once,
 * but {@link #close} may be called from any thread.
 */
public final class LogTail implements Iterator<LogEntry>, Iterable<LogEntry>, AutoCloseable {
  /** Entries one polling read asks for (against a node without {@code TailLog}). */
  static final int READ_ENTRIES = 1024;

  /**
   * A stream silent this long (the node sends a heartbeat about every
   * second) is taken as broken and reopened elsewhere.
   */
  public static final Duration IDLE = Duration.ofSeconds(5);

  private static final long PAUSE_MIN_NANOS = TimeUnit.MILLISECONDS.toNanos(1);
  private static final Cleaner CLEANER = Cleaner.create();

  private final AmuletLog log;
  private final long maxPollNanos;
  /** The stream's waits and its callbacks; what a collected tail's cleaning closes. */
  private final Shared shared = new Shared();
  /** Position of the entry after the buffered ones: where a stream (re)opens. */
  private long next;
  private final ArrayDeque<byte[]> buffered = new ArrayDeque<>();
  /** The open stream, if any. */
  private Stream stream;
  /** A node answered UNIMPLEMENTED: poll with reads. */
  private boolean polling;
  /** The start was checked against the log's bounds (once per tail). */
  private boolean checked;
  /** Streams reopened after breaking. */
  private volatile long reconnects;
  /** Silence that breaks a stream (tests shorten it). */
  long idleNanos = IDLE.toNanos();

  // The retry state of a broken stream, cleared by any message.
  /** A stream broke and none has delivered a message since. */
  private boolean retrying;
  /** When retrying ends (the operation timeout after the first break). */
  private long retryDeadline;
  /** The next pause. */
  private long backoffNanos;
  /** When the next stream may open (retrying only). */
  private long reopenAt;
  /** Where the last stream broke; the next opens elsewhere if it can. */
  private String failedAt;

  /**
   * What the tail's waits, its stream's callbacks and {@link #close} share
   * (never the tail itself, so that an unreachable tail is collected and
   * its stream cancelled).
   */
  private static final class Shared implements Runnable {
    /** Guarded by this. */
    private Stream current;

    private volatile boolean closed;

    /** Closes: the current stream is cancelled and every wait ends. */
    @Override
    public void run() {
      synchronized (this) {
        closed = true;
        if (current != null) {
          current.call.cancel("the tail was closed", null);
          current = null;
        }
        notifyAll();
      }
    }
  }

  /**
   * One {@code TailLog} call and what it delivered: at most one message (one
   * is asked for at a time) and how it ended. Every call on {@link #call} is
   * made holding the shared lock (a ClientCall is not thread-safe); its
   * callbacks come on other threads and take the lock only to record.
   */
  private static final class Stream extends ClientCall.Listener<AmuletOuterClass.LogEntries> {
    final Shared shared;
    final String address;
    final ClientCall<TailLogRequest, AmuletOuterClass.LogEntries> call;
    // Guarded by shared.
    AmuletOuterClass.LogEntries message;
    Status status;
    Metadata trailers;
    /** A message is asked for and not yet taken; since when. */
    boolean requested;

    long requestedAt;

    Stream(
        Shared shared,
        String address,
        ClientCall<TailLogRequest, AmuletOuterClass.LogEntries> call) {
      this.shared = shared;
      this.address = address;
      this.call = call;
    }

    @Override
    public void onMessage(AmuletOuterClass.LogEntries m) {
      synchronized (shared) {
        message = m;
        shared.notifyAll();
      }
    }

    @Override
    public void onClose(Status s, Metadata t) {
      synchronized (shared) {
        status = s;
        trailers = t;
        shared.notifyAll();
      }
    }
  }

  LogTail(AmuletLog log, long from, Duration maxPoll) {
    this.log = log;
    this.next = from;
    this.maxPollNanos = Math.max(PAUSE_MIN_NANOS, Objects.requireNonNull(maxPoll).toNanos());
    CLEANER.register(this, shared);
  }

  /** The log followed. */
  public AmuletLog log() {
    return log;
  }

  /** The position of the entry {@code next} returns next. */
  public long position() {
    return next - buffered.size();
  }

  /**
   * How many times the tail's stream broke (or could not be opened) and was
   * reopened; 0 while one stream serves it.
   */
  public long reconnects() {
    return reconnects;
  }

  /** Whether the tail polls with reads (a node answered that it has no {@code TailLog}). */
  boolean isPolling() {
    return polling;
  }

  /** The address of the node the open stream comes from, or null (tests). */
  String streamAddress() {
    Stream s = stream;
    return s == null ? null : s.address;
  }

  /** True until {@link #close}d: a tail has a next entry, perhaps not yet appended. */
  @Override
  public boolean hasNext() {
    return !shared.closed;
  }

  /**
   * The next entry, waiting until one is appended.
   *
   * @throws NoSuchElementException once closed
   */
  @Override
  public LogEntry next() {
    LogEntry e = poll(-1);
    if (e == null) {
      throw new NoSuchElementException("the tail of " + log.name() + " is closed");
    }
    return e;
  }

  /**
   * The next entry, or null if none came within {@code timeout} (or the
   * tail is closed). On a stream it returns on time (but for a refresh of
   * the partition map after {@code not-a-replica}, at most the client's
   * attempt timeout, and for the reads of the log's bounds: the first call's
   * check of the start and the check of a {@code NOT_FOUND}, at most the
   * client's operation timeout each); when polling, a read under way when
   * the time is up finishes first (at most the client's operation timeout).
   */
  public LogEntry poll(Duration timeout) {
    return poll(Math.max(0, timeout.toNanos()));
  }

  /**
   * Stops the tail: its stream is cancelled, {@code hasNext} turns false and
   * a waiting {@code next} or {@code poll} returns at once.
   */
  @Override
  public void close() {
    shared.run();
  }

  /** This tail itself, to follow the log in a for-each loop. */
  @Override
  public Iterator<LogEntry> iterator() {
    return this;
  }

  /** Breaks the open stream as a failing node would (tests). */
  void breakStream() {
    Stream s = stream;
    if (s != null) {
      synchronized (shared) {
        s.call.cancel("broken by a test", null);
      }
    }
  }

  /** Waits at most {@code timeoutNanos} (negative: for ever). */
  private LogEntry poll(long timeoutNanos) {
    long start = System.nanoTime();
    long deadline = timeoutNanos < 0 ? Long.MAX_VALUE : start + timeoutNanos;
    while (!shared.closed) {
      if (!checked) {
        checkStart();
        continue;
      }
      byte[] entry = buffered.pollFirst();
      if (entry != null) {
        return new LogEntry(next - buffered.size() - 1, entry);
      }
      if (polling) {
        return pollReads(timeoutNanos < 0 ? -1 : Math.max(0, deadline - System.nanoTime()));
      }
      if (stream == null) {
        if (retrying) {
          long now = System.nanoTime();
          if (now - reopenAt < 0) {
            if (deadline != Long.MAX_VALUE && deadline - now <= 0) {
              return null;
            }
            pause(Math.min(reopenAt - now, deadline == Long.MAX_VALUE ? Long.MAX_VALUE : deadline - now));
            continue;
          }
        }
        open();
        continue;
      }
      if (!awaitStream(deadline)) {
        return null;
      }
    }
    return null;
  }

  /**
   * Checks the start against the log's bounds with one linearizable read,
   * as a read from there would: the streams are served without ordering,
   * so a replica behind a trim could still serve trimmed entries, and one
   * behind the log's creation not know the log.
   *
   * @throws AmuletException {@code OUT_OF_RANGE} below the first position
   *     or past the end, {@code NOT_FOUND} for an unknown log
   */
  private void checkStart() {
    LogBounds bounds = log.bounds();
    if (Long.compareUnsigned(next, bounds.first()) < 0
        || Long.compareUnsigned(next, bounds.end()) > 0) {
      throw new AmuletException(
          AmuletException.Kind.OUT_OF_RANGE,
          "a tail of " + log.name() + " from " + Long.toUnsignedString(next)
              + " outside its positions " + Long.toUnsignedString(bounds.first()) + ".."
              + Long.toUnsignedString(bounds.end()));
    }
    checked = true;
  }

  /**
   * Where a tail of {@code log} opens its stream: a random replica (not
   * {@code avoid} if the partition has another) of the partition that holds
   * the log by the cached map, as its requests are routed; any node when
   * the map does not know the log (it says whether the log exists, and
   * answers {@code not-a-replica} with its newer map if it does).
   */
  private static String tailAddress(AmuletClient client, String log, String avoid) {
    Routing r = client.routing();
    List<String> candidates = new ArrayList<>();
    if (r.knows(log)) {
      int partition = r.partitionsFor(AmuletLog.placement(log)).get(0);
      candidates.addAll(r.replicaAddresses(partition));
    }
    if (candidates.isEmpty()) {
      candidates.addAll(r.addresses.values());
    }
    if (candidates.isEmpty()) {
      candidates.addAll(client.seeds());
    }
    if (candidates.size() > 1) {
      candidates.remove(avoid);
    }
    return candidates.get(ThreadLocalRandom.current().nextInt(candidates.size()));
  }

  /**
   * A new, unstarted TailLog call to {@code address}, without a deadline
   * (the stream never ends by itself: the tail watches its heartbeats).
   *
   * @throws IllegalStateException if the client is closed
   */
  private static ClientCall<TailLogRequest, AmuletOuterClass.LogEntries> tailCall(
      AmuletClient client, String address) {
    if (client.isClosed()) {
      throw new IllegalStateException("the client is closed");
    }
    return client.channelAt(address).newCall(AmuletGrpc.getTailLogMethod(), CallOptions.DEFAULT);
  }

  /** Opens a stream from {@link #next} at a replica of the log's partition. */
  private void open() {
    AmuletClient client = log.client();
    String address = tailAddress(client, log.name(), failedAt);
    ClientCall<TailLogRequest, AmuletOuterClass.LogEntries> call = tailCall(client, address);
    Stream s = new Stream(shared, address, call);
    synchronized (shared) {
      if (shared.closed) {
        return;
      }
      shared.current = s;
      call.start(s, new Metadata());
      s.requested = true;
      s.requestedAt = System.nanoTime();
      call.request(1);
      // The cached map's version: a replica whose map is older (it has not
      // executed the log's creation yet, say) waits for it, then answers
      // UNAVAILABLE behind rather than a false NOT_FOUND.
      call.sendMessage(
          TailLogRequest.newBuilder()
              .setLog(log.name())
              .setFrom(next)
              .setMapVersion(client.partitionMapVersion())
              .build());
      call.halfClose();
    }
    stream = s;
  }

  /**
   * Waits until {@code deadline} for the stream's next message or end and
   * takes it in: entries go to the buffer; a broken stream is dropped (to
   * be reopened after a pause); a final failure throws. False when the time
   * is up (or the tail closed) with nothing new.
   */
  private boolean awaitStream(long deadline) {
    Stream s = stream;
    AmuletOuterClass.LogEntries message = null;
    Status status = null;
    Metadata trailers = null;
    synchronized (shared) {
      if (!s.requested) {
        if (shared.closed) {
          return false;
        }
        s.requested = true;
        s.requestedAt = System.nanoTime();
        s.call.request(1);
      }
      while (true) {
        if (shared.closed) {
          return false;
        }
        if (s.message != null) {
          message = s.message;
          s.message = null;
          s.requested = false;
          break;
        }
        if (s.status != null) {
          status = s.status;
          trailers = s.trailers;
          break;
        }
        long now = System.nanoTime();
        long idleLeft = s.requestedAt + idleNanos - now;
        if (idleLeft <= 0) {
          s.call.cancel("no message in " + Duration.ofNanos(idleNanos), null);
          status =
              Status.UNAVAILABLE.withDescription(
                  s.address + " sent nothing in " + Duration.ofNanos(idleNanos));
          break;
        }
        if (deadline != Long.MAX_VALUE && deadline - now <= 0) {
          return false;
        }
        waitNanos(deadline == Long.MAX_VALUE ? idleLeft : Math.min(idleLeft, deadline - now));
      }
    }
    if (message != null) {
      take(s, message);
    } else {
      broken(s, status, trailers);
    }
    return true;
  }

  /** A message of the stream: entries to the buffer, or a heartbeat. */
  private void take(Stream s, AmuletOuterClass.LogEntries message) {
    if (message.getFrom() != next) {
      drop(s, "a protocol error");
      throw new AmuletException(
          AmuletException.Kind.PROTOCOL,
          "a tail of " + log.name() + " at position " + next + " got entries from "
              + message.getFrom() + " (" + s.address + ")");
    }
    // The stream works: a later break starts a new round of retries.
    retrying = false;
    failedAt = null;
    for (ByteString e : message.getEntriesList()) {
      buffered.addLast(e.toByteArray());
    }
    next += message.getEntriesCount();
  }

  /** Cancels {@code s} and forgets it. */
  private void drop(Stream s, String why) {
    synchronized (shared) {
      s.call.cancel(why, null);
      if (shared.current == s) {
        shared.current = null;
      }
    }
    if (stream == s) {
      stream = null;
    }
  }

  /** The stream ended with {@code status}: a final failure throws; else it is reopened later. */
  private void broken(Stream s, Status status, Metadata trailers) {
    drop(s, "ended");
    String kind = trailers == null ? null : trailers.get(AmuletClient.AMULET_ERROR);
    Status.Code code = status.getCode();
    if (code == Status.Code.UNIMPLEMENTED) {
      // An older node: follow the log by reads.
      polling = true;
      return;
    }
    // A replica that has not executed the log's creation yet says "no such
    // log" too (when the cached map is as old as its own): an ordered read
    // tells. If the log exists, the replica is behind: elsewhere, later.
    boolean behind = code == Status.Code.NOT_FOUND && exists();
    // Refused credentials or permissions (a grant or token revoked while
    // following) are final: every replica judges alike, so the stream is
    // not reopened.
    if ((code == Status.Code.NOT_FOUND && !behind)
        || code == Status.Code.OUT_OF_RANGE
        || code == Status.Code.INVALID_ARGUMENT
        || code == Status.Code.UNAUTHENTICATED
        || code == Status.Code.PERMISSION_DENIED
        || (code == Status.Code.FAILED_PRECONDITION && !"not-a-replica".equals(kind))) {
      retrying = false;
      failedAt = null;
      throw AmuletException.fromStatus(status);
    }
    // Somewhere else, after a pause: the replica stopped, is catching up
    // (behind), or no longer holds the log (a newer map says who does).
    reconnects++;
    failedAt = s.address;
    if ("not-a-replica".equals(kind)) {
      log.client().refreshMap(null);
    }
    long now = System.nanoTime();
    if (!retrying) {
      retrying = true;
      retryDeadline = now + log.client().config().operationTimeout().toNanos();
      backoffNanos = AmuletClient.BACKOFF_MIN_NANOS;
    }
    if (now + backoffNanos - retryDeadline >= 0) {
      retrying = false;
      failedAt = null;
      throw new AmuletException(
          AmuletException.Kind.UNAVAILABLE,
          "tail of " + log.name() + " at position " + next + ": gave up after "
              + log.client().config().operationTimeout() + ": " + s.address + ": "
              + (code == Status.Code.OK ? "the stream ended" : code + ": " + status.getDescription())
              + (behind ? " (the log exists: a replica behind)" : ""));
    }
    reopenAt = now + backoffNanos;
    backoffNanos = Math.min(backoffNanos * 2, AmuletClient.BACKOFF_MAX_NANOS);
  }

  /**
   * Whether the log exists, by one linearizable read of its bounds: false
   * only if that read says {@code NOT_FOUND} (any other failure leaves the
   * question open, and the stream is reopened as after {@code UNAVAILABLE}).
   */
  private boolean exists() {
    try {
      log.bounds();
      return true;
    } catch (AmuletException e) {
      return e.kind() != AmuletException.Kind.NOT_FOUND;
    }
  }

  /**
   * One entry by polling reads (a node without {@code TailLog}), waiting at
   * most {@code timeoutNanos} (negative: for ever).
   */
  private LogEntry pollReads(long timeoutNanos) {
    long start = System.nanoTime();
    long pause = PAUSE_MIN_NANOS;
    while (!shared.closed) {
      LogEntries read = log.read(next, READ_ENTRIES);
      if (read.from() != next) {
        throw new AmuletException(
            AmuletException.Kind.PROTOCOL,
            "asked for position " + next + ", got entries from " + read.from());
      }
      if (!read.entries().isEmpty()) {
        buffered.addAll(read.entries());
        next += read.entries().size();
        byte[] first = buffered.pollFirst();
        return new LogEntry(next - buffered.size() - 1, first);
      }
      long left = timeoutNanos < 0 ? Long.MAX_VALUE : timeoutNanos - (System.nanoTime() - start);
      if (left <= 0) {
        return null;
      }
      pause(Math.min(pause, left));
      pause = Math.min(pause * 2, maxPollNanos);
    }
    return null;
  }

  /** Waits {@code nanos} or until closed. */
  private void pause(long nanos) {
    long deadline = System.nanoTime() + nanos;
    synchronized (shared) {
      for (long left = nanos; left > 0 && !shared.closed; left = deadline - System.nanoTime()) {
        waitNanos(left);
      }
    }
  }

  /** One wait on the shared lock (held), at most {@code nanos}. */
  private void waitNanos(long nanos) {
    try {
      TimeUnit.NANOSECONDS.timedWait(shared, Math.max(1, nanos));
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new AmuletException(AmuletException.Kind.UNAVAILABLE, "interrupted");
    }
  }
}
