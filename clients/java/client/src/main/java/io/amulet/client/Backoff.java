package io.amulet.client;

/**
 * The clock and the pauses of one operation's attempts, as the retry loops
 * of {@link AdminCall#call}, {@link Balancer#set(String, boolean)} and
 * {@link Reconfigure#with} share them: a deadline of the client's operation
 * timeout from when the operation starts, pauses from {@link
 * AmuletClient#BACKOFF_MIN_NANOS} doubling up to {@link
 * AmuletClient#BACKOFF_MAX_NANOS}, and no pause that would reach the
 * deadline. Which failures are worth another attempt, where it goes and
 * how each attempt's own deadline is set stay with each loop.
 */
final class Backoff {
  private final AmuletClient client;
  private final long deadline;
  private long pause = AmuletClient.BACKOFF_MIN_NANOS;

  /** Starts the operation's clock: its deadline is the operation timeout from now. */
  Backoff(AmuletClient client) {
    this.client = client;
    this.deadline = System.nanoTime() + client.config().operationTimeout().toNanos();
  }

  /** The operation's deadline, in {@link System#nanoTime} terms. */
  long deadline() {
    return deadline;
  }

  /**
   * Pauses before another attempt, and doubles the next pause (up to the
   * maximum); gives up instead when this pause would reach the deadline.
   *
   * @param described the last failure, for the message of giving up
   * @throws AmuletException {@code UNAVAILABLE} "gave up after" the
   *     operation timeout, with {@code described}
   */
  void pauseOrGiveUp(String described) {
    if (System.nanoTime() + pause >= deadline) {
      throw new AmuletException(
          AmuletException.Kind.UNAVAILABLE,
          "gave up after " + client.config().operationTimeout() + ": " + described);
    }
    AmuletClient.sleepNanos(pause);
    pause = Math.min(pause * 2, AmuletClient.BACKOFF_MAX_NANOS);
  }
}
