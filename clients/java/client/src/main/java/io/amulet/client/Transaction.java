package io.amulet.client;

import amulet.v1.AmuletOuterClass;
import amulet.v1.AmuletOuterClass.Commit;
import amulet.v1.AmuletOuterClass.KeyBound;
import amulet.v1.AmuletOuterClass.KeyRange;
import amulet.v1.AmuletOuterClass.MapRequest;
import amulet.v1.AmuletOuterClass.MapResponse;
import amulet.v1.AmuletOuterClass.ReadConflict;
import amulet.v1.AmuletOuterClass.TxnWrite;
import com.google.protobuf.ByteString;
import io.amulet.codec.KeyCodec;
import io.amulet.codec.ValueCodec;
import io.amulet.map.TransactionMap;
import java.util.AbstractMap.SimpleImmutableEntry;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.NavigableMap;
import java.util.Objects;
import java.util.Optional;
import java.util.TreeMap;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;

/**
 * An interactive, strictly serializable transaction across maps and
 * partitions (docs/transactions.md), as crates/amulet-client/src/transaction.rs.
 *
 * <p>It reads at one <em>read version</em>, taken at its first read (and
 * shared with the client's other transactions that start meanwhile), from
 * any replica, in parallel over the partitions a read involves; it buffers
 * its writes and reads its own (a range read overlays its puts and
 * deletes); and {@link #commit} sends the writes with what was read in one
 * command that every involved partition votes on: all apply it or none
 * does. If a key the transaction read (a single key, or the part of a range
 * a read covered, phantoms included) was written after the read version,
 * the commit fails with {@link AmuletException.Kind#CONFLICT} and nothing is
 * applied. A read that finds a key it covered written since then fails at
 * once with the same error when the transaction has writes (it could only
 * conflict). A transaction without writes sends no commit: its reads were
 * one snapshot, and it never conflicts.
 *
 * <p>Use {@link AmuletClient#transact}, which runs a transaction again on
 * conflicts; {@link AmuletClient#transaction()} starts one by hand. Keys and
 * values are byte arrays (copied in and out), as in {@link ByteMap}; {@link
 * #map} gives a typed {@link NavigableMap} view. Thread-safe.
 *
 * <p>Errors: a map name that is invalid fails the read at once, but a write
 * to one fails the commit ({@link IllegalArgumentException}), as do writes
 * over the cluster's limits; a read or a write of a map that does not exist
 * is {@code NOT_FOUND} (a write's at commit); a read version whose lease
 * (ClientConfig#transactionLease) passed before the commit is {@link
 * AmuletException.Kind#READ_VERSION_TOO_OLD}. Reading or writing after
 * {@link #commit} or {@link #abandon} throws {@link IllegalStateException}.
 */
public final class Transaction {
  /** The server's range_entries_max (default): a range read asks for no more. */
  static final int RANGE_ENTRIES_MAX = 10_000;
  private static final long BACKOFF_MIN_NANOS = TimeUnit.MILLISECONDS.toNanos(10);
  private static final long BACKOFF_MAX_NANOS = TimeUnit.MILLISECONDS.toNanos(500);

  private final AmuletClient client;
  private final long startedNanos = System.nanoTime();

  /** Guards the read version; held while taking it, so concurrent first reads share it. */
  private final Object versionLock = new Object();
  private ReadVersions.Held held;
  private RuntimeException versionError;
  private boolean released;

  // Guarded by this.
  private final List<ReadConflict> reads = new ArrayList<>();
  /** Buffered writes by map and key; a null value removes the key. The last write wins. */
  private final TreeMap<String, TreeMap<byte[], byte[]>> writes = new TreeMap<>();
  /**
   * Values got at the read version, by map and key (empty: absent): the
   * version never changes, so a key is got from the cluster once.
   */
  private final TreeMap<String, TreeMap<byte[], Optional<byte[]>>> got = new TreeMap<>();
  private int writeCount;
  /** A read found a key it covered written since the read version. */
  private AmuletException doomed;
  /** A write named an invalid map: the commit fails with this. */
  private IllegalArgumentException invalid;
  private boolean finished;

  Transaction(AmuletClient client) {
    this.client = client;
  }

  /** The client. */
  public AmuletClient client() {
    return client;
  }

  /** The read version this transaction reads at, if it has read from the cluster yet. */
  public Optional<Long> readVersion() {
    synchronized (versionLock) {
      return held == null ? Optional.empty() : Optional.of(held.version);
    }
  }

  /** Whether {@link #commit} or {@link #abandon} was called. */
  public synchronized boolean isFinished() {
    return finished;
  }

  /**
   * A typed, sorted view of the map {@code name} in this transaction: reads
   * at the read version with this transaction's writes, writes buffered
   * until the commit (see {@link TransactionMap}).
   */
  public <K, V> TransactionMap<K, V> map(String name, KeyCodec<K> keys, ValueCodec<V> values) {
    return TransactionMap.of(this, AmuletClient.checkMapName(name), keys, values);
  }

  // ---- reads ---------------------------------------------------------------

  /**
   * The value of {@code key} in {@code map} as of the read version or as
   * written here, or null. A key is read from the cluster once per
   * transaction.
   */
  public byte[] get(String map, byte[] key) {
    AmuletClient.checkMapName(map);
    Objects.requireNonNull(key, "key");
    Optional<byte[]> known = known(map, key);
    if (known != null) {
      return known.map(byte[]::clone).orElse(null);
    }
    MapRequest op =
        MapRequest.newBuilder()
            .setGet(AmuletOuterClass.Get.newBuilder().setMap(map).setKey(ByteString.copyFrom(key)))
            .build();
    MapResponse r = read(map, op, Placement.key(map, key));
    if (r.getResultCase() != MapResponse.ResultCase.VALUE) {
      throw new AmuletException(AmuletException.Kind.PROTOCOL, "a get answered " + r.getResultCase());
    }
    byte[] value = r.getValue().hasValue() ? r.getValue().getValue().toByteArray() : null;
    synchronized (this) {
      got.computeIfAbsent(map, m -> new TreeMap<>(Arrays::compareUnsigned))
          .put(key.clone(), Optional.ofNullable(value));
    }
    return value == null ? null : value.clone();
  }

  /** Whether {@code key} is in {@code map} (a get). */
  public boolean containsKey(String map, byte[] key) {
    return get(map, key) != null;
  }

  /**
   * At most {@code limit} entries of {@code map} between the bounds
   * ({@code from}/{@code to} null: open), ascending, or with {@code reverse}
   * the highest ones descending, as of the read version with this
   * transaction's writes applied; {@code more} says whether entries were
   * left out. A key another transaction inserts into the part of the range
   * that was read makes this one conflict (phantoms count). In the rare case
   * that this transaction removed so many keys of the range that the read
   * would ask the cluster for more than 10,000 entries, fewer than {@code
   * limit} entries may come back with {@code more} set.
   */
  public ByteMap.RangeResult range(
      String map, byte[] from, boolean fromInclusive, byte[] to, boolean toInclusive, int limit,
      boolean reverse) {
    AmuletClient.checkMapName(map);
    TreeMap<byte[], byte[]> mine = new TreeMap<>(Arrays::compareUnsigned);
    int removed = 0;
    synchronized (this) {
      checkOpen();
      TreeMap<byte[], byte[]> all = writes.get(map);
      if (all != null) {
        for (Map.Entry<byte[], byte[]> w : all.entrySet()) {
          if (inRange(w.getKey(), from, fromInclusive, to, toInclusive)) {
            mine.put(w.getKey(), w.getValue());
            removed += w.getValue() == null ? 1 : 0;
          }
        }
      }
    }
    // Ask for enough that this transaction's removals still leave `limit`
    // entries when there are (a limit the cluster refuses is sent as is).
    int asked =
        limit >= 1 && limit <= RANGE_ENTRIES_MAX
            ? (int) Math.min(RANGE_ENTRIES_MAX, (long) limit + removed)
            : limit;
    AmuletOuterClass.Range.Builder b =
        AmuletOuterClass.Range.newBuilder().setMap(map).setLimit(asked).setReverse(reverse);
    if (from != null) {
      b.setFrom(bound(from, fromInclusive));
    }
    if (to != null) {
      b.setTo(bound(to, toInclusive));
    }
    MapResponse r =
        read(
            map,
            MapRequest.newBuilder().setRange(b).build(),
            Placement.range(map, from, fromInclusive, to, toInclusive));
    if (r.getResultCase() != MapResponse.ResultCase.ENTRIES) {
      throw new AmuletException(
          AmuletException.Kind.PROTOCOL, "a range read answered " + r.getResultCase());
    }
    boolean more = r.getEntries().getMore();
    TreeMap<byte[], byte[]> merged = new TreeMap<>(Arrays::compareUnsigned);
    for (AmuletOuterClass.Entry e : r.getEntries().getEntriesList()) {
      merged.put(e.getKey().toByteArray(), e.getValue().toByteArray());
    }
    // Writes beyond the last entry read stay out when the read was cut
    // short: the entries in between are not known here.
    byte[] first = merged.isEmpty() ? null : merged.firstKey();
    byte[] last = merged.isEmpty() ? null : merged.lastKey();
    for (Map.Entry<byte[], byte[]> w : mine.entrySet()) {
      byte[] key = w.getKey();
      boolean beyond =
          more
              && (reverse
                  ? first != null && Arrays.compareUnsigned(key, first) < 0
                  : last != null && Arrays.compareUnsigned(key, last) > 0);
      if (beyond) {
        continue;
      }
      if (w.getValue() == null) {
        merged.remove(key);
      } else {
        merged.put(key, w.getValue());
      }
    }
    List<Map.Entry<byte[], byte[]>> out = new ArrayList<>(Math.min(merged.size(), Math.max(limit, 0)));
    for (Map.Entry<byte[], byte[]> e : (reverse ? merged.descendingMap() : merged).entrySet()) {
      if (out.size() == limit) {
        more = true;
        break;
      }
      out.add(new SimpleImmutableEntry<>(e.getKey().clone(), e.getValue().clone()));
    }
    return new ByteMap.RangeResult(out, more);
  }

  /** The entry of the least key of {@code map}, or null. */
  public Map.Entry<byte[], byte[]> firstEntry(String map) {
    return one(range(map, null, false, null, false, 1, false));
  }

  /** The entry of the greatest key of {@code map}, or null. */
  public Map.Entry<byte[], byte[]> lastEntry(String map) {
    return one(range(map, null, false, null, false, 1, true));
  }

  /** The floor, ceiling, higher or lower entry of {@code key} in {@code map}, or null. */
  public Map.Entry<byte[], byte[]> nearestEntry(String map, byte[] key, ByteMap.Nearest nearest) {
    Objects.requireNonNull(key, "key");
    switch (nearest) {
      case FLOOR:
        return one(range(map, null, false, key, true, 1, true));
      case LOWER:
        return one(range(map, null, false, key, false, 1, true));
      case CEILING:
        return one(range(map, key, true, null, false, 1, false));
      case HIGHER:
        return one(range(map, key, false, null, false, 1, false));
      default:
        throw new AssertionError(nearest);
    }
  }

  /** The entry of the greatest key at or below {@code key}, or null. */
  public Map.Entry<byte[], byte[]> floorEntry(String map, byte[] key) {
    return nearestEntry(map, key, ByteMap.Nearest.FLOOR);
  }

  /** The entry of the least key at or above {@code key}, or null. */
  public Map.Entry<byte[], byte[]> ceilingEntry(String map, byte[] key) {
    return nearestEntry(map, key, ByteMap.Nearest.CEILING);
  }

  /** The entry of the least key above {@code key}, or null. */
  public Map.Entry<byte[], byte[]> higherEntry(String map, byte[] key) {
    return nearestEntry(map, key, ByteMap.Nearest.HIGHER);
  }

  /** The entry of the greatest key below {@code key}, or null. */
  public Map.Entry<byte[], byte[]> lowerEntry(String map, byte[] key) {
    return nearestEntry(map, key, ByteMap.Nearest.LOWER);
  }

  private static Map.Entry<byte[], byte[]> one(ByteMap.RangeResult r) {
    return r.entries.isEmpty() ? null : r.entries.get(0);
  }

  /**
   * This transaction's own write of {@code key}, else the value got at the
   * read version: null if neither, empty if absent.
   */
  private synchronized Optional<byte[]> known(String map, byte[] key) {
    checkOpen();
    TreeMap<byte[], byte[]> m = writes.get(map);
    if (m != null && m.containsKey(key)) {
      return Optional.ofNullable(m.get(key));
    }
    TreeMap<byte[], Optional<byte[]>> g = got.get(map);
    return g == null ? null : g.get(key);
  }

  /**
   * Reads {@code op} at the read version and records what it covered; a
   * read that finds a covered key written since the version dooms the
   * transaction, and fails at once if it has writes.
   */
  private MapResponse read(String map, MapRequest op, Placement placement) {
    synchronized (this) {
      checkOpen();
    }
    long version = version();
    ReadAt.Answer a = ReadAt.read(client, version, map, op, placement);
    synchronized (this) {
      if (a.writtenSince && doomed == null) {
        doomed =
            AmuletException.conflict(
                map, null, "a key this transaction read was written after its read version");
      }
      reads.add(a.conflict);
      if (writeCount > 0 && doomed != null) {
        throw doomed;
      }
    }
    return a.response;
  }

  /** The read version, taken at the first read (a failure to take it stays). */
  private long version() {
    synchronized (versionLock) {
      if (held != null) {
        return held.version;
      }
      if (versionError != null) {
        throw versionError;
      }
      if (released) {
        throw new IllegalStateException("the transaction was committed or abandoned");
      }
      long leaseMicros = Math.max(1, client.config().transactionLease().toNanos() / 1000);
      try {
        held = client.readVersions().acquire(startedNanos, leaseMicros);
      } catch (RuntimeException e) {
        versionError = e;
        throw e;
      }
      return held.version;
    }
  }

  // ---- writes ----------------------------------------------------------------

  /** Sets {@code key} of {@code map} to {@code value} when the transaction commits. */
  public void put(String map, byte[] key, byte[] value) {
    write(map, Objects.requireNonNull(key, "key"), Objects.requireNonNull(value, "value"));
  }

  /** Removes {@code key} of {@code map} when the transaction commits. */
  public void delete(String map, byte[] key) {
    write(map, Objects.requireNonNull(key, "key"), null);
  }

  private synchronized void write(String map, byte[] key, byte[] value) {
    checkOpen();
    try {
      AmuletClient.checkMapName(map);
    } catch (IllegalArgumentException e) {
      // As the other clients: the commit fails with it.
      if (invalid == null) {
        invalid = e;
      }
      return;
    }
    TreeMap<byte[], byte[]> m = writes.computeIfAbsent(map, k -> new TreeMap<>(Arrays::compareUnsigned));
    byte[] k = key.clone();
    if (!m.containsKey(k)) {
      writeCount++;
    }
    m.put(k, value == null ? null : value.clone());
  }

  // ---- the end -----------------------------------------------------------------

  /**
   * Commits: nothing to send without writes (the reads were one snapshot;
   * it never conflicts); otherwise one command that every partition
   * holding a written key or part of a read range votes on, run in a
   * session like every write (a resend never applies twice). Throws
   * {@link AmuletException.Kind#CONFLICT} or {@link
   * AmuletException.Kind#READ_VERSION_TOO_OLD} (nothing applied: run the
   * transaction again), and IllegalStateException if it was committed or
   * abandoned already.
   */
  public void commit() {
    MapRequest op;
    Placement placement;
    synchronized (this) {
      checkOpen();
      finished = true;
      if (invalid != null) {
        release();
        throw invalid;
      }
      if (writeCount == 0) {
        release();
        return;
      }
      if (doomed != null) {
        release();
        throw doomed;
      }
      Commit.Builder c = Commit.newBuilder();
      if (!reads.isEmpty()) {
        // Without reads the writes are blind: they never conflict, and
        // need no read version (whose lease may have ended meanwhile).
        readVersion().ifPresent(c::setReadVersion);
      }
      List<Placement> parts = new ArrayList<>();
      for (Map.Entry<String, TreeMap<byte[], byte[]>> m : writes.entrySet()) {
        for (Map.Entry<byte[], byte[]> w : m.getValue().entrySet()) {
          TxnWrite.Builder tw =
              TxnWrite.newBuilder().setMap(m.getKey()).setKey(ByteString.copyFrom(w.getKey()));
          if (w.getValue() != null) {
            tw.setValue(ByteString.copyFrom(w.getValue()));
          }
          c.addWrites(tw);
          parts.add(Placement.key(m.getKey(), w.getKey()));
        }
      }
      for (ReadConflict r : reads) {
        c.addReads(r);
        parts.add(placementOf(r));
      }
      op = MapRequest.newBuilder().setCommit(c).build();
      placement = Placement.across(parts);
    }
    try {
      MapResponse r = client.execute(op, placement);
      if (r.getResultCase() != MapResponse.ResultCase.DONE) {
        throw new AmuletException(
            AmuletException.Kind.PROTOCOL, "a commit answered " + r.getResultCase());
      }
    } finally {
      release();
    }
  }

  /** Gives the transaction up: nothing is written. Idempotent. */
  public void abandon() {
    synchronized (this) {
      finished = true;
    }
    release();
  }

  /**
   * Where a read range is voted on (smr_machine.rs: an empty range involves the lowest partition,
   * a single key its own).
   */
  private static Placement placementOf(ReadConflict r) {
    KeyRange k = r.getRange();
    if (ReadAt.isEmpty(k)) {
      return Placement.keys(r.getMap(), List.of());
    }
    if (k.hasFrom()
        && k.hasTo()
        && k.getFrom().getInclusive()
        && k.getTo().getInclusive()
        && k.getFrom().getKey().equals(k.getTo().getKey())) {
      // One key lives in one partition, in a hash map too (a range there
      // spans every partition): KeyRange::single_key.
      return Placement.key(r.getMap(), k.getFrom().getKey().toByteArray());
    }
    return Placement.range(
        r.getMap(),
        k.hasFrom() ? k.getFrom().getKey().toByteArray() : null,
        k.hasFrom() && k.getFrom().getInclusive(),
        k.hasTo() ? k.getTo().getKey().toByteArray() : null,
        k.hasTo() && k.getTo().getInclusive());
  }

  /** Gives the read version back (once). */
  private void release() {
    synchronized (versionLock) {
      if (released) {
        return;
      }
      released = true;
      if (held != null) {
        client.readVersions().release(held);
      }
    }
  }

  private void checkOpen() {
    if (finished) {
      throw new IllegalStateException("the transaction was committed or abandoned");
    }
  }

  private static KeyBound bound(byte[] key, boolean inclusive) {
    return KeyBound.newBuilder().setKey(ByteString.copyFrom(key)).setInclusive(inclusive).build();
  }

  private static boolean inRange(
      byte[] key, byte[] from, boolean fromInclusive, byte[] to, boolean toInclusive) {
    if (from != null) {
      int c = Arrays.compareUnsigned(key, from);
      if (c < 0 || (c == 0 && !fromInclusive)) {
        return false;
      }
    }
    if (to != null) {
      int c = Arrays.compareUnsigned(key, to);
      if (c > 0 || (c == 0 && !toInclusive)) {
        return false;
      }
    }
    return true;
  }

  // ---- running transactions ----------------------------------------------------

  /** {@link AmuletClient#transact}: runs {@code body} until it commits, a conflict at a time. */
  static <T> T run(AmuletClient client, Function<? super Transaction, ? extends T> body) {
    long deadline = System.nanoTime() + client.config().operationTimeout().toNanos();
    long backoff = BACKOFF_MIN_NANOS;
    while (true) {
      Transaction tx = client.transaction();
      AmuletException conflict;
      try {
        T value = body.apply(tx);
        tx.commit();
        return value;
      } catch (AmuletException e) {
        tx.abandon();
        if (!e.isTransactionRetryable()) {
          throw e;
        }
        conflict = e;
      } catch (RuntimeException | Error e) {
        tx.abandon();
        throw e;
      }
      // Jittered, so that transactions that conflicted together do not
      // run again together.
      long pause = backoff / 2 + ThreadLocalRandom.current().nextLong(backoff / 2 + 1);
      if (System.nanoTime() + pause >= deadline) {
        throw conflict;
      }
      AmuletClient.sleepNanos(pause);
      backoff = Math.min(backoff * 2, BACKOFF_MAX_NANOS);
    }
  }
}
