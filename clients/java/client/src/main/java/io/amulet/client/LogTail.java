package io.amulet.client;

import java.time.Duration;
import java.util.ArrayDeque;
import java.util.Iterator;
import java.util.NoSuchElementException;
import java.util.Objects;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;

/**
 * A follower of one log ({@link AmuletLog#tail}): {@link #next()} returns
 * every entry from its start position in order, blocking until one is
 * appended; {@link #poll(Duration)} waits a bounded time. It reads up to
 * 1,024 entries at a time (each read a linearizable read of the log) and,
 * when caught up, polls with a pause that doubles from 1 ms to its longest
 * pause (as the Rust client's {@code Tail}).
 *
 * <p>It is an {@link Iterator} that never ends unless {@linkplain #close
 * closed}, and an {@link Iterable} over itself, so {@code for (LogEntry e :
 * log.tail(0))} follows the log (once: a second iteration goes on where the
 * first stopped). A failed read throws out of {@code next} ({@link
 * AmuletException}: {@code OUT_OF_RANGE} when the tail fell below a trim,
 * {@code NOT_FOUND} when the log was dropped, {@code UNAVAILABLE} when
 * interrupted); the tail stays usable and the next call reads again from
 * {@link #position()}. Not for several threads at once, but {@link #close}
 * may be called from any thread.
 */
public final class LogTail implements Iterator<LogEntry>, Iterable<LogEntry>, AutoCloseable {
  /** Entries one read asks for. */
  static final int READ_ENTRIES = 1024;

  private static final long PAUSE_MIN_NANOS = TimeUnit.MILLISECONDS.toNanos(1);

  private final AmuletLog log;
  private final long maxPollNanos;
  /** Position of the next entry read (after those buffered). */
  private long next;
  private final ArrayDeque<byte[]> buffered = new ArrayDeque<>();
  private volatile boolean closed;
  /** The thread waiting between polls, woken by close. */
  private volatile Thread waiter;

  LogTail(AmuletLog log, long from, Duration maxPoll) {
    this.log = log;
    this.next = from;
    this.maxPollNanos = Math.max(PAUSE_MIN_NANOS, Objects.requireNonNull(maxPoll).toNanos());
  }

  /** The log followed. */
  public AmuletLog log() {
    return log;
  }

  /** The position of the entry {@code next} returns next. */
  public long position() {
    return next - buffered.size();
  }

  /** True until {@link #close}d: a tail has a next entry, perhaps not yet appended. */
  @Override
  public boolean hasNext() {
    return !closed;
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
   * The next entry, or null if none was appended within {@code timeout}
   * (or the tail is closed). A read under way when the time is up finishes
   * first (at most the client's operation timeout).
   */
  public LogEntry poll(Duration timeout) {
    return poll(Math.max(0, timeout.toNanos()));
  }

  /** Stops the tail: {@code hasNext} turns false and a waiting {@code next} stops within a poll. */
  @Override
  public void close() {
    closed = true;
    Thread t = waiter;
    if (t != null) {
      LockSupport.unpark(t);
    }
  }

  /** This tail itself, to follow the log in a for-each loop. */
  @Override
  public Iterator<LogEntry> iterator() {
    return this;
  }

  /** Waits at most {@code timeoutNanos} (negative: for ever). */
  private LogEntry poll(long timeoutNanos) {
    long start = System.nanoTime();
    long pause = PAUSE_MIN_NANOS;
    while (!closed) {
      byte[] entry = buffered.pollFirst();
      if (entry != null) {
        return new LogEntry(next - buffered.size() - 1, entry);
      }
      LogEntries read = log.read(next, READ_ENTRIES);
      if (read.from() != next) {
        throw new AmuletException(
            AmuletException.Kind.PROTOCOL,
            "asked for position " + next + ", got entries from " + read.from());
      }
      if (!read.entries().isEmpty()) {
        buffered.addAll(read.entries());
        next += read.entries().size();
        continue;
      }
      long left = timeoutNanos < 0 ? Long.MAX_VALUE : timeoutNanos - (System.nanoTime() - start);
      if (left <= 0) {
        return null;
      }
      sleep(Math.min(pause, left));
      pause = Math.min(pause * 2, maxPollNanos);
    }
    return null;
  }

  private void sleep(long nanos) {
    waiter = Thread.currentThread();
    try {
      long deadline = System.nanoTime() + nanos;
      for (long left = nanos; left > 0 && !closed; left = deadline - System.nanoTime()) {
        LockSupport.parkNanos(this, left);
        if (Thread.currentThread().isInterrupted()) {
          throw new AmuletException(AmuletException.Kind.UNAVAILABLE, "interrupted");
        }
      }
    } finally {
      waiter = null;
    }
  }
}
