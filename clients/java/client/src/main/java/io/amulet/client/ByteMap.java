package io.amulet.client;

import amulet.v1.AmuletOuterClass;
import amulet.v1.AmuletOuterClass.MapRequest;
import amulet.v1.AmuletOuterClass.MapResponse;
import com.google.protobuf.ByteString;
import java.util.AbstractMap.SimpleImmutableEntry;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Map;

/**
 * The byte-level API of one map: one request per call (the map operations of
 * proto/amulet/v1/amulet.proto, plus snapshots), keys and values as byte
 * arrays. {@link io.amulet.map.AmuletMap} builds the typed map on it; the
 * conformance scenarios (spec/conformance) run it directly. Cheap and
 * thread-safe.
 *
 * <p>Errors: {@link IllegalArgumentException} for an invalid request (key
 * above 16 KiB, bad range, ...), {@link AmuletException} for the rest
 * ({@code NOT_FOUND} if the map does not exist).
 */
public final class ByteMap {
  /** Which entry {@link #nearestEntry} finds. */
  public enum Nearest {
    /** Greatest key at or below. */
    FLOOR,
    /** Least key at or above. */
    CEILING,
    /** Least key above. */
    HIGHER,
    /** Greatest key below. */
    LOWER
  }

  /** The reply of {@link #range}: entries, and whether the limit cut the range short. */
  public static final class RangeResult {
    public final List<Map.Entry<byte[], byte[]>> entries;
    public final boolean more;

    RangeResult(List<Map.Entry<byte[], byte[]>> entries, boolean more) {
      this.entries = entries;
      this.more = more;
    }
  }

  private final AmuletClient client;
  private final String name;

  ByteMap(AmuletClient client, String name) {
    this.client = client;
    this.name = name;
  }

  /** The map's name. */
  public String name() {
    return name;
  }

  /** The client. */
  public AmuletClient client() {
    return client;
  }

  @Override
  public String toString() {
    return "ByteMap(" + name + ")";
  }

  private static ByteString bs(byte[] b) {
    if (b == null) {
      throw new NullPointerException();
    }
    return ByteString.copyFrom(b);
  }

  private MapResponse one(MapRequest request, byte[] key) {
    return client.execute(request, Placement.key(name, key));
  }

  private MapResponse all(MapRequest request) {
    return client.execute(request, Placement.all(name));
  }

  private static MapResponse expect(MapResponse r, MapResponse.ResultCase want) {
    if (r.getResultCase() != want) {
      throw new AmuletException(
          AmuletException.Kind.PROTOCOL, "expected a " + want + " reply, got " + r.getResultCase());
    }
    return r;
  }

  private static byte[] value(MapResponse r) {
    AmuletOuterClass.OptionalValue v = expect(r, MapResponse.ResultCase.VALUE).getValue();
    return v.hasValue() ? v.getValue().toByteArray() : null;
  }

  private static boolean flag(MapResponse r) {
    return expect(r, MapResponse.ResultCase.FLAG).getFlag();
  }

  private static Map.Entry<byte[], byte[]> entry(MapResponse r) {
    AmuletOuterClass.OptionalEntry e = expect(r, MapResponse.ResultCase.ENTRY).getEntry();
    return e.hasEntry() ? entry(e.getEntry()) : null;
  }

  static Map.Entry<byte[], byte[]> entry(AmuletOuterClass.Entry e) {
    return new SimpleImmutableEntry<>(e.getKey().toByteArray(), e.getValue().toByteArray());
  }

  /** The value of {@code key}, or null. */
  public byte[] get(byte[] key) {
    return value(
        one(
            MapRequest.newBuilder()
                .setGet(AmuletOuterClass.Get.newBuilder().setMap(name).setKey(bs(key)))
                .build(),
            key));
  }

  public boolean containsKey(byte[] key) {
    return flag(
        one(
            MapRequest.newBuilder()
                .setContainsKey(AmuletOuterClass.ContainsKey.newBuilder().setMap(name).setKey(bs(key)))
                .build(),
            key));
  }

  /** Sets {@code key}; returns the previous value or null. */
  public byte[] put(byte[] key, byte[] value) {
    return value(
        one(
            MapRequest.newBuilder()
                .setPut(
                    AmuletOuterClass.Put.newBuilder().setMap(name).setKey(bs(key)).setValue(bs(value)))
                .build(),
            key));
  }

  /** Removes {@code key}; returns the removed value or null. */
  public byte[] remove(byte[] key) {
    return value(
        one(
            MapRequest.newBuilder()
                .setRemove(AmuletOuterClass.Remove.newBuilder().setMap(name).setKey(bs(key)))
                .build(),
            key));
  }

  /** Sets {@code key} only if absent; returns the existing value (null: it was set). */
  public byte[] putIfAbsent(byte[] key, byte[] value) {
    return value(
        one(
            MapRequest.newBuilder()
                .setPutIfAbsent(
                    AmuletOuterClass.PutIfAbsent.newBuilder()
                        .setMap(name)
                        .setKey(bs(key))
                        .setValue(bs(value)))
                .build(),
            key));
  }

  /** Sets {@code key} only if present; returns the previous value (null: nothing changed). */
  public byte[] replace(byte[] key, byte[] value) {
    return value(
        one(
            MapRequest.newBuilder()
                .setReplace(
                    AmuletOuterClass.Replace.newBuilder().setMap(name).setKey(bs(key)).setValue(bs(value)))
                .build(),
            key));
  }

  /** Compare-and-set: sets {@code key} to {@code value} if it holds {@code expected}. */
  public boolean replaceIfEquals(byte[] key, byte[] expected, byte[] value) {
    return flag(
        one(
            MapRequest.newBuilder()
                .setReplaceIfEquals(
                    AmuletOuterClass.ReplaceIfEquals.newBuilder()
                        .setMap(name)
                        .setKey(bs(key))
                        .setExpected(bs(expected))
                        .setValue(bs(value)))
                .build(),
            key));
  }

  /** Removes {@code key} if it holds {@code expected}. */
  public boolean removeIfEquals(byte[] key, byte[] expected) {
    return flag(
        one(
            MapRequest.newBuilder()
                .setRemoveIfEquals(
                    AmuletOuterClass.RemoveIfEquals.newBuilder()
                        .setMap(name)
                        .setKey(bs(key))
                        .setExpected(bs(expected)))
                .build(),
            key));
  }

  /**
   * Sets and removes fields of the field record stored at {@code key}
   * (docs/field-records.md, {@link FieldRecord}) in one ordered command,
   * keeping its other fields: a field with a value is set, one whose value
   * is {@code null} removed. The server applies them in the map's iteration
   * order, so use a map that keeps nulls and an order, such as a {@link
   * java.util.LinkedHashMap} or a {@link java.util.TreeMap} over {@link
   * java.util.Arrays#compareUnsigned} ({@code Map.of} refuses nulls). Like
   * every write it is applied at most once, however often it is resent.
   *
   * @return whether the key had a value (a missing key stays missing)
   * @throws AmuletException of kind {@code FAILED_PRECONDITION} if the value
   *     stored is not a field record (it is left as it is)
   * @throws IllegalArgumentException for no fields, a name given twice, or
   *     fields above the cluster's limits
   */
  public boolean mergeFields(byte[] key, Map<byte[], byte[]> fields) {
    AmuletOuterClass.MergeFields.Builder b =
        AmuletOuterClass.MergeFields.newBuilder().setMap(name).setKey(bs(key));
    for (Map.Entry<byte[], byte[]> f : fields.entrySet()) {
      AmuletOuterClass.Field.Builder field =
          AmuletOuterClass.Field.newBuilder().setName(bs(f.getKey()));
      if (f.getValue() != null) {
        field.setValue(bs(f.getValue()));
      }
      b.addFields(field);
    }
    return flag(one(MapRequest.newBuilder().setMergeFields(b).build(), key));
  }

  /** Sets every entry, atomically across partitions (one request). */
  public void putAll(Collection<? extends Map.Entry<byte[], byte[]>> entries) {
    AmuletOuterClass.PutAll.Builder b = AmuletOuterClass.PutAll.newBuilder().setMap(name);
    List<byte[]> keys = new ArrayList<>(entries.size());
    for (Map.Entry<byte[], byte[]> e : entries) {
      b.addEntries(AmuletOuterClass.Entry.newBuilder().setKey(bs(e.getKey())).setValue(bs(e.getValue())));
      keys.add(e.getKey());
    }
    // An empty putAll involves every partition (as in the Rust client).
    Placement p = keys.isEmpty() ? Placement.all(name) : Placement.keys(name, keys);
    expect(client.execute(MapRequest.newBuilder().setPutAll(b).build(), p), MapResponse.ResultCase.DONE);
  }

  /** {@link #bulkLoad(Iterable, BulkLoad)} with {@link BulkLoad#defaults()}. */
  public BulkLoaded bulkLoad(Iterable<? extends Map.Entry<byte[], byte[]>> entries) {
    return bulkLoad(entries, BulkLoad.defaults());
  }

  /**
   * Loads {@code entries}, sorted by key (unsigned byte order) with no key
   * twice, into this map: DynaTree's B+tree bulk load ({@link BulkLoad}). A
   * range map is pre-split as it goes: the range holding the first key of
   * each chunk of {@link BulkLoad#partitionEntries()} entries after the
   * first is split at that key (unless it starts a range already); a map
   * not in ranges is never split. Each chunk is written in {@code putAll}s
   * of at most {@link BulkLoad#batchEntries()} entries and {@link
   * BulkLoad#batchBytes()} key and value bytes that each stay within one
   * partition, {@link BulkLoad#inFlight()} at once. The input is read a
   * chunk at a time (its arrays are kept until written: do not change
   * them). Not atomic: a failure leaves what was written, and running the
   * same load again writes the same values.
   *
   * @throws IllegalArgumentException for a key not above the one before it
   *     (naming both), before anything of its chunk is written (the chunks
   *     before it stay written); for a split or batch the cluster refuses
   * @throws NullPointerException for a null key or value
   * @throws AmuletException as {@link #putAll} for a batch, or for a split
   *     ({@code OUTCOME_UNKNOWN} without an answer in time)
   */
  public BulkLoaded bulkLoad(
      Iterable<? extends Map.Entry<byte[], byte[]>> entries, BulkLoad options) {
    return BulkLoad.run(this, entries.iterator(), options);
  }

  public boolean containsValue(byte[] value) {
    return flag(
        all(
            MapRequest.newBuilder()
                .setContainsValue(
                    AmuletOuterClass.ContainsValue.newBuilder().setMap(name).setValue(bs(value)))
                .build()));
  }

  public long size() {
    return expect(
            all(MapRequest.newBuilder().setSize(AmuletOuterClass.Size.newBuilder().setMap(name)).build()),
            MapResponse.ResultCase.COUNT)
        .getCount();
  }

  public boolean isEmpty() {
    return flag(
        all(MapRequest.newBuilder().setIsEmpty(AmuletOuterClass.IsEmpty.newBuilder().setMap(name)).build()));
  }

  public void clear() {
    expect(
        all(MapRequest.newBuilder().setClear(AmuletOuterClass.Clear.newBuilder().setMap(name)).build()),
        MapResponse.ResultCase.DONE);
  }

  /** The entry of the least key, or null. */
  public Map.Entry<byte[], byte[]> firstEntry() {
    return entry(
        all(
            MapRequest.newBuilder()
                .setFirstEntry(AmuletOuterClass.FirstEntry.newBuilder().setMap(name))
                .build()));
  }

  /** The entry of the greatest key, or null. */
  public Map.Entry<byte[], byte[]> lastEntry() {
    return entry(
        all(
            MapRequest.newBuilder()
                .setLastEntry(AmuletOuterClass.LastEntry.newBuilder().setMap(name))
                .build()));
  }

  /** The floor, ceiling, higher or lower entry of {@code key}, or null. */
  public Map.Entry<byte[], byte[]> nearestEntry(byte[] key, Nearest nearest) {
    AmuletOuterClass.Nearest n;
    Placement p;
    switch (nearest) {
      case FLOOR:
        n = AmuletOuterClass.Nearest.NEAREST_FLOOR;
        p = Placement.range(name, null, false, key, true);
        break;
      case LOWER:
        n = AmuletOuterClass.Nearest.NEAREST_LOWER;
        p = Placement.range(name, null, false, key, false);
        break;
      case CEILING:
        n = AmuletOuterClass.Nearest.NEAREST_CEILING;
        p = Placement.range(name, key, true, null, false);
        break;
      case HIGHER:
        n = AmuletOuterClass.Nearest.NEAREST_HIGHER;
        p = Placement.range(name, key, false, null, false);
        break;
      default:
        throw new AssertionError(nearest);
    }
    return entry(
        client.execute(
            MapRequest.newBuilder()
                .setNearestEntry(
                    AmuletOuterClass.NearestEntry.newBuilder().setMap(name).setKey(bs(key)).setNearest(n))
                .build(),
            p));
  }

  /**
   * At most {@code limit} entries between the bounds ({@code from}/{@code
   * to} null: open), ascending, or with {@code reverse} the highest ones
   * descending. One linearizable read.
   */
  public RangeResult range(
      byte[] from, boolean fromInclusive, byte[] to, boolean toInclusive, int limit, boolean reverse) {
    AmuletOuterClass.Range.Builder b =
        AmuletOuterClass.Range.newBuilder().setMap(name).setLimit(limit).setReverse(reverse);
    if (from != null) {
      b.setFrom(AmuletOuterClass.KeyBound.newBuilder().setKey(bs(from)).setInclusive(fromInclusive));
    }
    if (to != null) {
      b.setTo(AmuletOuterClass.KeyBound.newBuilder().setKey(bs(to)).setInclusive(toInclusive));
    }
    AmuletOuterClass.Entries entries =
        expect(
                client.execute(
                    MapRequest.newBuilder().setRange(b).build(),
                    Placement.range(name, from, fromInclusive, to, toInclusive)),
                MapResponse.ResultCase.ENTRIES)
            .getEntries();
    List<Map.Entry<byte[], byte[]>> out = new ArrayList<>(entries.getEntriesCount());
    for (AmuletOuterClass.Entry e : entries.getEntriesList()) {
      out.add(entry(e));
    }
    return new RangeResult(out, entries.getMore());
  }

  /**
   * A scan of the entries between the bounds ({@code from}/{@code to} null:
   * open; each inclusive or exclusive) in ascending key order, read {@code
   * page} entries at a time with {@link Scan#nextPage} (the Rust client's
   * {@code DMap::scan}). Nothing is read until the first page is asked for.
   *
   * <p>Each page is one linearizable {@code range} read. On a range map it
   * stays within one range partition (by the client's cached map), so it is
   * ordered on that partition's stream alone; a map not in ranges is read a
   * page at a time over all its partitions. The scan as a whole is not one
   * point of the order: a key written behind its position is not seen, one
   * written ahead of it is; for a consistent view of the whole map use
   * {@link #snapshot()}. See {@link Scan}.
   *
   * @throws IllegalArgumentException for a page below 1
   */
  public Scan scan(byte[] from, boolean fromInclusive, byte[] to, boolean toInclusive, int page) {
    return new Scan(this, from, fromInclusive, to, toInclusive, page);
  }

  /**
   * Opens a snapshot of the whole map at one point of the order; iterate it
   * for entries in key order and close it to release it early.
   */
  public Snapshot snapshot() {
    return snapshot(null);
  }

  /** A snapshot iterated from the first key above {@code after} (null: from the start). */
  public Snapshot snapshot(byte[] after) {
    long id =
        expect(
                all(
                    MapRequest.newBuilder()
                        .setOpenSnapshot(
                            AmuletOuterClass.OpenSnapshot.newBuilder()
                                .setMap(name)
                                .setLeaseMicros(client.config().snapshotLease().toNanos() / 1000))
                        .build()),
                MapResponse.ResultCase.SNAPSHOT)
            .getSnapshot();
    // After the command, so that a map refreshed on the way counts.
    List<Integer> partitions = client.routing().partitionsFor(Placement.all(name));
    return new Snapshot(client, id, partitions, after);
  }

  /** Releases the snapshot {@code id}. */
  public void releaseSnapshot(long id) {
    Snapshot.release(client, id);
  }
}
