package io.amulet.ycsb;

import java.util.concurrent.atomic.AtomicLong;

/**
 * What the binding's transactions did in one YCSB run (one JVM, all its
 * threads): commits, runs again after a conflict, failures, and for the
 * YCSB+T-style validation the read-modify-writes that incremented a
 * counter. One instance is shared by every DB instance of the run, so the
 * validation at the last thread's cleanup sees every thread's commits.
 */
final class TransactionStats {
  /** Transactions that finished (read-only ones send no commit but count). */
  final AtomicLong committed = new AtomicLong();
  /** Of {@link #committed}, those without writes. */
  final AtomicLong readOnly = new AtomicLong();
  /**
   * Attempts that ended in CONFLICT or READ_VERSION_TOO_OLD and ran again
   * (what {@link io.amulet.client.AmuletClient#transact} retries).
   */
  final AtomicLong retries = new AtomicLong();
  /** Transactions given up: an error that is not retried, or retries past the deadline. */
  final AtomicLong failed = new AtomicLong();
  /** Committed read-modify-writes that incremented the record's counter. */
  final AtomicLong increments = new AtomicLong();
  /**
   * Read-modify-writes whose commit's outcome is unknown (OUTCOME_UNKNOWN):
   * each may or may not have incremented its counter.
   */
  final AtomicLong incrementsUnknown = new AtomicLong();

  void reset() {
    committed.set(0);
    readOnly.set(0);
    retries.set(0);
    failed.set(0);
    increments.set(0);
    incrementsUnknown.set(0);
  }

  /** The line printed at the end of a transactional run; scripts/ycsb-amulet parses it. */
  String summary() {
    return "amulet transactions: committed="
        + committed.get()
        + " read-only="
        + readOnly.get()
        + " conflict-retries="
        + retries.get()
        + " failed="
        + failed.get();
  }

  /** The outcome of the counter check: whether it passed, and the line to print. */
  static final class Validation {
    final boolean ok;
    final String line;

    Validation(boolean ok, String line) {
      this.ok = ok;
      this.line = line;
    }
  }

  /**
   * Compares the counters' growth during the run ({@code after - before},
   * summed over all records) with the read-modify-writes that committed an
   * increment. A lost update (two transactions incrementing from the same
   * value, both committed) makes the growth smaller; an increment applied
   * twice makes it larger. Commits whose outcome is unknown may or may not
   * have applied, so each widens the accepted range by one.
   */
  static Validation check(long before, long after, long committed, long unknown) {
    long got = after - before;
    if (got >= committed && got <= committed + unknown) {
      String extra =
          unknown == 0 ? "" : ", " + (got - committed) + " of " + unknown + " unknown outcomes applied";
      return new Validation(true, "validation: ok (" + got + " increments" + extra + ")");
    }
    String expected =
        unknown == 0 ? Long.toString(committed) : committed + " to " + (committed + unknown);
    return new Validation(false, "validation: FAILED expected " + expected + " got " + got);
  }
}
