package io.amulet.client;

import amulet.v1.AmuletOuterClass.BeginTransaction;
import amulet.v1.AmuletOuterClass.MapRequest;
import amulet.v1.AmuletOuterClass.MapResponse;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;

/**
 * The read versions shared by the transactions of one client, as
 * crates/amulet-client/src/read_versions.rs. A read version is a
 * BeginTransaction ordered on the global stream with the signal exchange,
 * the dearest part of a transaction; transactions that want one while a
 * begin they may use has not been answered yet wait for it and share it
 * (as FoundationDB's clients batch GetReadVersion). Sharing keeps strict
 * serializability: a transaction only uses a begin created at or after the
 * moment it started, so the begin is ordered after everything that had
 * finished when the transaction started.
 *
 * <p>Versions no transaction holds any more are ended in the next begin
 * (its {@code end_read_versions}), so a busy client keeps few versions open
 * and orders nothing extra to end them; an idle client's last ones end by
 * their lease. Thread-safe.
 */
final class ReadVersions {
  /** Versions ended in one begin, at most (the rest wait for the next). */
  static final int ENDED_PER_BEGIN_MAX = 1024;

  /** One BeginTransaction and the transactions holding its version. */
  private static final class Begin {
    /** System.nanoTime() when it was created; it is sent after. */
    final long createdNanos;
    final CompletableFuture<Long> version = new CompletableFuture<>();
    int holders;

    Begin(long createdNanos) {
      this.createdNanos = createdNanos;
    }
  }

  /** A transaction's hold on a read version; given back once with {@link #release}. */
  static final class Held {
    private final Begin begin;
    final long version;

    private Held(Begin begin, long version) {
      this.begin = begin;
      this.version = version;
    }
  }

  private final AmuletClient client;
  /** The begin created last: joinable until it is answered. */
  private Begin current;
  /** Versions no transaction holds, to end in the next begin. */
  private final ArrayDeque<Long> done = new ArrayDeque<>();
  private long beginsSent;
  private long versionsEnded;

  ReadVersions(AmuletClient client) {
    this.client = client;
  }

  /**
   * A read version for a transaction that started at {@code startedNanos}
   * (System.nanoTime()): that of a begin created at or after then, shared
   * with the other transactions waiting for it. Blocks until the begin is
   * answered; throws its error.
   */
  Held acquire(long startedNanos, long leaseMicros) {
    Begin begin;
    boolean mine;
    synchronized (this) {
      if (current != null
          && current.createdNanos - startedNanos >= 0
          && !current.version.isDone()) {
        begin = current;
        mine = false;
      } else {
        begin = new Begin(System.nanoTime());
        current = begin;
        mine = true;
      }
      begin.holders++;
    }
    if (mine) {
      send(begin, leaseMicros);
    }
    try {
      return new Held(begin, wait(begin, mine));
    } catch (RuntimeException e) {
      release(begin);
      throw e;
    }
  }

  /** Sends {@code begin} (with the versions to end) and completes it. */
  private void send(Begin begin, long leaseMicros) {
    List<Long> end = new ArrayList<>();
    synchronized (this) {
      while (!done.isEmpty() && end.size() < ENDED_PER_BEGIN_MAX) {
        end.add(done.pollFirst());
      }
      beginsSent++;
    }
    try {
      MapResponse r =
          client.execute(
              MapRequest.newBuilder()
                  .setBeginTransaction(
                      BeginTransaction.newBuilder()
                          .setLeaseMicros(leaseMicros)
                          .addAllEndReadVersions(end))
                  .build(),
              Placement.cluster());
      if (r.getResultCase() != MapResponse.ResultCase.READ_VERSION) {
        throw new AmuletException(
            AmuletException.Kind.PROTOCOL, "a begin answered " + r.getResultCase());
      }
      synchronized (this) {
        versionsEnded += end.size();
      }
      begin.version.complete(r.getReadVersion());
    } catch (RuntimeException e) {
      // Ending is idempotent: try them again in the next begin.
      synchronized (this) {
        for (int i = end.size() - 1; i >= 0; i--) {
          done.addFirst(end.get(i));
        }
      }
      begin.version.completeExceptionally(e);
    }
  }

  private static long wait(Begin begin, boolean mine) {
    try {
      return begin.version.get();
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new AmuletException(AmuletException.Kind.UNAVAILABLE, "interrupted");
    } catch (ExecutionException e) {
      Throwable cause = e.getCause();
      if (mine && cause instanceof RuntimeException) {
        throw (RuntimeException) cause;
      }
      // Another thread's begin failed: the same error, thrown here.
      if (cause instanceof AmuletException) {
        AmuletException a = (AmuletException) cause;
        AmuletException copy =
            new AmuletException(a.kind(), "the shared begin failed: " + a.getMessage());
        copy.initCause(a);
        throw copy;
      }
      if (cause instanceof IllegalArgumentException) {
        throw new IllegalArgumentException(cause.getMessage(), cause);
      }
      throw new AmuletException(AmuletException.Kind.PROTOCOL, "the begin failed: " + cause);
    }
  }

  /** A transaction is done with its read version. */
  void release(Held held) {
    release(held.begin);
  }

  private synchronized void release(Begin begin) {
    if (--begin.holders > 0) {
      return;
    }
    Long version = begin.version.isDone() && !begin.version.isCompletedExceptionally()
        ? begin.version.join()
        : null;
    if (version != null) {
      done.addLast(version);
    }
  }

  /** BeginTransaction commands sent so far (tests). */
  synchronized long beginsSent() {
    return beginsSent;
  }

  /** Read versions ended through a begin so far (tests). */
  synchronized long versionsEnded() {
    return versionsEnded;
  }

  /** Read versions waiting to be ended in the next begin (tests). */
  synchronized int waitingToEnd() {
    return done.size();
  }
}
