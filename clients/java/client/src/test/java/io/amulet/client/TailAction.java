package io.amulet.client;

import io.grpc.Status;
import java.util.concurrent.CountDownLatch;

/**
 * What {@link TailHook} does to one TailLog call: let it through, refuse
 * it (a status, with an {@code amulet-error} kind or none, without
 * reaching a node), break it (UNAVAILABLE, as when its node goes away)
 * after it delivered a number of messages with entries, swallow its
 * messages (a silent stream), or hold its opening until released.
 */
final class TailAction {
  final Status refusal;
  final String kind;
  final int breakAfter;
  final boolean swallow;
  final CountDownLatch held;
  final CountDownLatch release;

  private TailAction(
      Status refusal, String kind, int breakAfter, boolean swallow, CountDownLatch held,
      CountDownLatch release) {
    this.refusal = refusal;
    this.kind = kind;
    this.breakAfter = breakAfter;
    this.swallow = swallow;
    this.held = held;
    this.release = release;
  }

  static TailAction pass() {
    return new TailAction(null, null, -1, false, null, null);
  }

  static TailAction refuse(Status status, String kind) {
    return new TailAction(status, kind, -1, false, null, null);
  }

  static TailAction breakAfter(int messagesWithEntries) {
    return new TailAction(null, null, messagesWithEntries, false, null, null);
  }

  static TailAction swallow() {
    return new TailAction(null, null, -1, true, null, null);
  }

  /** Counts {@code held} down when the call is being opened, then waits for {@code release}. */
  static TailAction hold(CountDownLatch held, CountDownLatch release) {
    return new TailAction(null, null, -1, false, held, release);
  }
}
