package io.amulet.client;

import java.time.Duration;
import java.util.NoSuchElementException;
import java.util.Objects;
import java.util.concurrent.Executor;
import java.util.concurrent.Flow;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

/**
 * {@link AmuletLog#publisher}: a {@link LogTail} per subscriber, drained on
 * the executor as far as the subscriber's demand goes. The tail asks its
 * stream for a message only when it has handed out the entries of the last
 * one, so without demand the stream (and the node sending it) waits: a slow
 * subscriber holds a message or two, not the log. Signals to one subscriber
 * are serial: onSubscribe and every drain run in tasks that never overlap (a
 * task is submitted only when none is running or queued). A failure of the
 * tail is onError (and closes it); cancel closes the tail, which cancels its
 * stream and wakes a drain waiting in it.
 */
final class LogPublisher implements Flow.Publisher<LogEntry> {
  /** A new daemon thread per task (a task runs while there is demand). */
  static final Executor THREAD_PER_RUN =
      task -> {
        Thread t = new Thread(task, "amulet-log-publisher");
        t.setDaemon(true);
        t.start();
      };

  private final AmuletLog log;
  private final long from;
  private final Duration maxPoll;
  private final Executor executor;

  LogPublisher(AmuletLog log, long from, Duration maxPoll, Executor executor) {
    this.log = log;
    this.from = from;
    this.maxPoll = maxPoll;
    this.executor = executor;
  }

  @Override
  public void subscribe(Flow.Subscriber<? super LogEntry> subscriber) {
    Objects.requireNonNull(subscriber, "subscriber");
    Subscription s = new Subscription(subscriber, new LogTail(log, from, maxPoll), executor);
    try {
      executor.execute(s::start);
    } catch (RuntimeException e) {
      // Rule 1.9: onSubscribe before onError.
      subscriber.onSubscribe(s);
      s.fail(e);
    }
  }

  private static final class Subscription implements Flow.Subscription {
    private final Flow.Subscriber<? super LogEntry> subscriber;
    private final LogTail tail;
    private final Executor executor;
    private final AtomicLong demand = new AtomicLong();
    /** Drains asked for; a task runs while it is above zero. Starts at 1: the start task. */
    private final AtomicInteger pending = new AtomicInteger(1);
    private volatile boolean done;
    private volatile Throwable badRequest;

    Subscription(Flow.Subscriber<? super LogEntry> subscriber, LogTail tail, Executor executor) {
      this.subscriber = subscriber;
      this.tail = tail;
      this.executor = executor;
    }

    void start() {
      subscriber.onSubscribe(this);
      drain();
    }

    @Override
    public void request(long n) {
      if (n <= 0) {
        // Rule 3.9.
        badRequest = new IllegalArgumentException("request(" + n + "): demand must be positive");
      } else {
        demand.getAndUpdate(d -> d + n < 0 ? Long.MAX_VALUE : d + n);
      }
      schedule();
    }

    @Override
    public void cancel() {
      done = true;
      tail.close();
    }

    private void schedule() {
      if (pending.getAndIncrement() == 0) {
        try {
          executor.execute(this::drain);
        } catch (RuntimeException e) {
          fail(e);
        }
      }
    }

    void fail(Throwable t) {
      if (!done) {
        done = true;
        tail.close();
        subscriber.onError(t);
      }
    }

    private void drain() {
      int missed = 1;
      while (true) {
        while (!done) {
          Throwable bad = badRequest;
          if (bad != null) {
            fail(bad);
            return;
          }
          if (demand.get() == 0) {
            break;
          }
          LogEntry e;
          try {
            e = tail.next();
          } catch (NoSuchElementException closed) {
            return;
          } catch (RuntimeException failed) {
            fail(failed);
            return;
          }
          if (done) {
            return;
          }
          demand.getAndUpdate(d -> d == Long.MAX_VALUE ? d : d - 1);
          subscriber.onNext(e);
        }
        if (done) {
          return;
        }
        missed = pending.addAndGet(-missed);
        if (missed == 0) {
          return;
        }
      }
    }
  }
}
