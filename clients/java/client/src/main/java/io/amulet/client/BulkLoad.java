package io.amulet.client;

import amulet.v1.AmuletOuterClass.RangeCut;
import amulet.v1.AmuletOuterClass.ReconfigureRequest;
import amulet.v1.AmuletOuterClass.SplitPartition;
import amulet.v1.AmuletOuterClass.StreamSpec;
import com.google.protobuf.ByteString;
import java.util.AbstractMap.SimpleImmutableEntry;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.CompletionService;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorCompletionService;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;

/**
 * How a bulk load ({@link ByteMap#bulkLoad}) cuts and batches its input;
 * the defaults are the Rust client's {@code BulkLoad}. Immutable: the
 * {@code with} methods return a changed copy.
 *
 * <p>Bulk loading sorted input (docs/dynatree.md, "Bulk load"), as the
 * Rust client's {@code DMap::bulk_load} (crates/amulet-client/src/bulk_load.rs):
 * the B+tree surface DynaTree lists, with what a B+tree's bulk load buys:
 * the input arrives in key order, so the tree is built leaf by leaf instead
 * of by splitting full leaves. Here the leaves are range partitions: before
 * each chunk of {@link #partitionEntries()} entries after the first is
 * written, the range holding the chunk's first key is split there (the
 * same {@code Split} an operator's {@code amulet split} orders), so every
 * chunk lands in its own partition and no partition is filled and then
 * split with its data in it. The entries go in {@code putAll} batches that
 * each stay within one partition (ordered on that partition's stream, not
 * the global one), several in flight. A map not in ranges is loaded the
 * same way, never split.
 *
 * <p>Not atomic: a load that fails part way leaves what it wrote, and the
 * same load run again overwrites it with the same values. Input that is
 * not strictly increasing (unsigned byte order) is refused ({@link
 * IllegalArgumentException}) where it stops being so, before anything of
 * its chunk is written.
 */
public final class BulkLoad {
  /** Entries read at a time when nothing is pre-split ({@code partitionEntries} 0). */
  private static final int UNSPLIT_CHUNK = 10_000;

  private static final BulkLoad DEFAULTS =
      // Half the balancer's default bound: room to grow before the balancer
      // splits a loaded partition.
      new BulkLoad(500_000, 1_000, 1024 * 1024, 8);

  private final long partitionEntries;
  private final int batchEntries;
  private final int batchBytes;
  private final int inFlight;

  private BulkLoad(long partitionEntries, int batchEntries, int batchBytes, int inFlight) {
    this.partitionEntries = partitionEntries;
    this.batchEntries = batchEntries;
    this.batchBytes = batchBytes;
    this.inFlight = inFlight;
  }

  /** 500,000 entries a partition, {@code putAll}s of 1,000 entries and 1 MiB, 8 in flight. */
  public static BulkLoad defaults() {
    return DEFAULTS;
  }

  /**
   * Entries per partition the load pre-splits the map into (0: no
   * pre-split; a map not in ranges is never split). Below the nodes'
   * balancer bound ({@code [balancer] split_entries}), or the balancer
   * splits each chunk again.
   */
  public long partitionEntries() {
    return partitionEntries;
  }

  /** Most entries in one {@code putAll} (the nodes accept 10,000). */
  public int batchEntries() {
    return batchEntries;
  }

  /** Most key and value bytes in one {@code putAll} (the nodes accept 3 MiB). */
  public int batchBytes() {
    return batchBytes;
  }

  /** {@code putAll}s in flight at once. */
  public int inFlight() {
    return inFlight;
  }

  /** @throws IllegalArgumentException below 0 */
  public BulkLoad withPartitionEntries(long n) {
    if (n < 0) {
      throw new IllegalArgumentException("bulk load: partition entries " + n + " < 0");
    }
    return new BulkLoad(n, batchEntries, batchBytes, inFlight);
  }

  /** @throws IllegalArgumentException below 1 */
  public BulkLoad withBatchEntries(int n) {
    return new BulkLoad(partitionEntries, positive(n, "batch entries"), batchBytes, inFlight);
  }

  /** @throws IllegalArgumentException below 1 */
  public BulkLoad withBatchBytes(int n) {
    return new BulkLoad(partitionEntries, batchEntries, positive(n, "batch bytes"), inFlight);
  }

  /** @throws IllegalArgumentException below 1 */
  public BulkLoad withInFlight(int n) {
    return new BulkLoad(partitionEntries, batchEntries, batchBytes, positive(n, "batches in flight"));
  }

  private static int positive(int n, String what) {
    if (n < 1) {
      throw new IllegalArgumentException("bulk load: " + what + " " + n + " < 1");
    }
    return n;
  }

  @Override
  public boolean equals(Object o) {
    if (!(o instanceof BulkLoad)) {
      return false;
    }
    BulkLoad b = (BulkLoad) o;
    return partitionEntries == b.partitionEntries
        && batchEntries == b.batchEntries
        && batchBytes == b.batchBytes
        && inFlight == b.inFlight;
  }

  @Override
  public int hashCode() {
    return Objects.hash(partitionEntries, batchEntries, batchBytes, inFlight);
  }

  @Override
  public String toString() {
    return "BulkLoad(partition entries " + partitionEntries + ", batch entries " + batchEntries
        + ", batch bytes " + batchBytes + ", in flight " + inFlight + ")";
  }

  // ---- the load ------------------------------------------------------------

  /** What a load did so far. */
  private static final class Counts {
    long entries;
    long bytes;
    long splits;
    long batches;
  }

  /** Loads {@code input} into {@code map} as {@link ByteMap#bulkLoad} says. */
  static BulkLoaded run(
      ByteMap map, Iterator<? extends Map.Entry<byte[], byte[]>> input, BulkLoad options) {
    Objects.requireNonNull(options, "options");
    long chunkEntries = options.partitionEntries == 0 ? UNSPLIT_CHUNK : options.partitionEntries;
    Counts loaded = new Counts();
    byte[] previous = null;
    ExecutorService pool =
        Executors.newFixedThreadPool(
            options.inFlight,
            r -> {
              Thread t = new Thread(r, "amulet-bulk-load-" + map.name());
              t.setDaemon(true);
              return t;
            });
    try {
      while (input.hasNext()) {
        List<Map.Entry<byte[], byte[]>> chunk = new ArrayList<>();
        while (chunk.size() < chunkEntries && input.hasNext()) {
          Map.Entry<byte[], byte[]> e = input.next();
          byte[] key = Objects.requireNonNull(e.getKey(), "key");
          byte[] value = Objects.requireNonNull(e.getValue(), "value");
          if (previous != null && Arrays.compareUnsigned(key, previous) <= 0) {
            throw new IllegalArgumentException(
                "bulk load: key " + show(key) + " after " + show(previous)
                    + ": the input must be sorted by key, each key once (" + loaded.entries
                    + " entries loaded)");
          }
          previous = key;
          chunk.add(new SimpleImmutableEntry<>(key, value));
        }
        // The first chunk joins the range it falls in: a cut before it
        // would leave a range with nothing of the load.
        boolean first = loaded.entries == 0;
        if (options.partitionEntries > 0
            && !first
            && cutAt(map.client(), map.name(), chunk.get(0).getKey())) {
          loaded.splits++;
        }
        writeChunk(map, pool, chunk, options, loaded);
      }
    } finally {
      pool.shutdownNow();
    }
    return new BulkLoaded(loaded.entries, loaded.bytes, loaded.splits, loaded.batches);
  }

  /**
   * Splits the range of map {@code name} holding {@code key} at {@code
   * key}, unless it starts one (or the map is not in ranges); whether it
   * split.
   */
  private static boolean cutAt(AmuletClient client, String name, byte[] key) {
    client.refreshMap(null);
    if (!needsCut(client.routing(), name, key)) {
      return false;
    }
    List<Integer> configured = Reconfigure.runningStreams(client);
    try {
      Reconfigure.with(client, map -> splitAt(map, name, key, configured));
      return true;
    } catch (RuntimeException e) {
      // The balancer (or another loader) may have cut there first: then
      // the load goes on.
      client.refreshMap(null);
      if (needsCut(client.routing(), name, key)) {
        throw e;
      }
      return false;
    }
  }

  /**
   * Writes a sorted chunk in {@code putAll}s that each stay within one
   * partition of the client's map, {@code inFlight} at a time; throws the
   * first failure once every batch sent has ended (none is sent after it).
   * The entries are grouped by partition first, each group in key order: a
   * range map's chunk is a run of keys per partition anyway, and a hash
   * map's sorted keys, whose partitions alternate from key to key, still
   * fill whole batches.
   */
  private static void writeChunk(
      ByteMap map,
      ExecutorService pool,
      List<Map.Entry<byte[], byte[]>> chunk,
      BulkLoad options,
      Counts loaded) {
    Routing routing = map.client().routing();
    boolean known = routing.knows(map.name());
    Map<Integer, List<Map.Entry<byte[], byte[]>>> groups = new LinkedHashMap<>();
    for (Map.Entry<byte[], byte[]> e : chunk) {
      Integer partition = known ? routing.partitionOf(map.name(), e.getKey()) : null;
      groups.computeIfAbsent(partition, p -> new ArrayList<>()).add(e);
    }
    Sender sender = new Sender(map, pool, options.inFlight, loaded);
    try {
      batches:
      for (List<Map.Entry<byte[], byte[]>> group : groups.values()) {
        List<Map.Entry<byte[], byte[]>> batch = new ArrayList<>();
        long size = 0;
        for (Map.Entry<byte[], byte[]> e : group) {
          long entryBytes = (long) e.getKey().length + e.getValue().length;
          if (!batch.isEmpty()
              && (batch.size() >= options.batchEntries || size + entryBytes > options.batchBytes)) {
            if (!sender.send(batch, size)) {
              break batches;
            }
            batch = new ArrayList<>();
            size = 0;
          }
          batch.add(e);
          size += entryBytes;
        }
        if (!batch.isEmpty() && !sender.send(batch, size)) {
          break;
        }
      }
    } finally {
      sender.awaitBelow(1);
    }
    if (sender.failure != null) {
      throw sender.failure;
    }
  }

  /** The {@code putAll}s of one chunk in flight, and the first that failed. */
  private static final class Sender {
    private final ByteMap map;
    private final CompletionService<long[]> done;
    private final int inFlight;
    private final Counts loaded;
    private int pending;
    RuntimeException failure;

    Sender(ByteMap map, ExecutorService pool, int inFlight, Counts loaded) {
      this.map = map;
      this.done = new ExecutorCompletionService<>(pool);
      this.inFlight = inFlight;
      this.loaded = loaded;
    }

    /** Sends {@code batch} once fewer than {@code inFlight} are; false after a failure. */
    boolean send(List<Map.Entry<byte[], byte[]>> batch, long size) {
      awaitBelow(inFlight);
      if (failure != null) {
        return false;
      }
      done.submit(() -> {
        map.putAll(batch);
        return new long[] {batch.size(), size};
      });
      pending++;
      loaded.batches++;
      return true;
    }

    /** Waits until fewer than {@code most} batches are in flight, keeping the first failure. */
    void awaitBelow(int most) {
      while (pending > 0 && pending >= most) {
        try {
          Future<long[]> ended = done.take();
          pending--;
          // Counted once acknowledged: after an error, what is known to
          // be in the map.
          long[] written = ended.get();
          loaded.entries += written[0];
          loaded.bytes += written[1];
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
          throw new AmuletException(AmuletException.Kind.UNAVAILABLE, "interrupted");
        } catch (ExecutionException e) {
          if (failure == null) {
            failure =
                e.getCause() instanceof RuntimeException
                    ? (RuntimeException) e.getCause()
                    : new AmuletException(
                        AmuletException.Kind.PROTOCOL, "a batch failed: " + e.getCause());
          }
        }
      }
    }
  }

  /** Whether {@code key} falls inside a range of map {@code name} without starting it. */
  static boolean needsCut(Routing map, String name, byte[] key) {
    Routing.Range[] ranges = map.keyspaces.get(name);
    if (ranges == null) {
      return false;
    }
    for (Routing.Range r : ranges) {
      if (Arrays.equals(r.start, key)) {
        return false;
      }
    }
    return true;
  }

  /**
   * The split of the range of map {@code name} holding {@code key} at
   * {@code key}, on {@code map}: a new partition on a new stream (above
   * {@code configured}, the streams nodes run) with the same replicas,
   * synchronously durable (a client's map does not say the source stream's
   * storage; the Rust client's default is {@code sync}).
   */
  static ReconfigureRequest splitAt(Routing map, String name, byte[] key, List<Integer> configured) {
    if (!map.knows(name)) {
      throw new IllegalArgumentException(
          "bulk load into " + name + ": no such map in the partition map");
    }
    int source = map.partitionOf(name, key);
    return ReconfigureRequest.newBuilder()
        .setSplit(
            SplitPartition.newBuilder()
                .setSource(source)
                .setNewPartition(map.nextPartitionId())
                .setStream(
                    StreamSpec.newBuilder()
                        .setStream(map.nextStreamId(configured))
                        .addAllAcceptors(map.partitions.get(source))
                        .setStorage("sync"))
                .addAtKeys(RangeCut.newBuilder().setMap(name).setKey(ByteString.copyFrom(key))))
        .build();
  }

  /** {@code key} as the Rust client shows bytes: {@code b"k1\x00"}. */
  static String show(byte[] key) {
    StringBuilder s = new StringBuilder("b\"");
    for (byte b : key) {
      int c = b & 0xff;
      if (c == '"' || c == '\\') {
        s.append('\\').append((char) c);
      } else if (c >= 0x20 && c < 0x7f) {
        s.append((char) c);
      } else {
        s.append(String.format("\\x%02x", c));
      }
    }
    return s.append('"').toString();
  }
}
