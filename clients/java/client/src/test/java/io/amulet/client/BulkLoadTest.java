package io.amulet.client;

import static org.junit.Assert.assertArrayEquals;
import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertFalse;
import static org.junit.Assert.assertNull;
import static org.junit.Assert.assertThrows;
import static org.junit.Assert.assertTrue;

import amulet.v1.AmuletOuterClass.RangeCut;
import amulet.v1.AmuletOuterClass.ReconfigureRequest;
import amulet.v1.AmuletOuterClass.SplitPartition;
import com.google.protobuf.ByteString;
import io.amulet.testing.NodeCluster;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.AbstractMap.SimpleImmutableEntry;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.function.IntFunction;
import org.junit.AfterClass;
import org.junit.BeforeClass;
import org.junit.Test;

/**
 * {@link ByteMap#bulkLoad} (docs/dynatree.md "Bulk load"), as the Rust
 * client's {@code dynatree_bulk_load_pre_splits_sorted_input_into_partitions}:
 * sorted input pre-splits a range map into partitions of {@code
 * partitionEntries} as it goes, every entry reads back, and input that
 * stops being sorted is refused where it does, with nothing of its chunk
 * written; a hash map is loaded without splits. The splits add partitions
 * to the cluster, which the tests on the shared {@code DevCluster} (range
 * maps over {@code partitionIds()}) do not expect: this class runs on a
 * {@link NodeCluster} of its own.
 */
public class BulkLoadTest {
  private static final int ENTRIES = 3_000;
  private static final int PER_PARTITION = 1_000;

  private static NodeCluster cluster;
  private static AmuletClient client;

  @BeforeClass
  public static void start() {
    cluster = NodeCluster.start();
    client = cluster.client(Duration.ofSeconds(20));
  }

  @AfterClass
  public static void stop() {
    if (client != null) {
      client.close();
    }
    if (cluster != null) {
      cluster.close();
    }
  }

  static byte[] b(String s) {
    return s.getBytes(StandardCharsets.UTF_8);
  }

  static byte[] key(int i) {
    return b(String.format("k%08d", i));
  }

  static byte[] value(int i) {
    return b("v" + i);
  }

  static String fresh() {
    return "bulk-" + UUID.randomUUID().toString().substring(0, 8);
  }

  static List<Map.Entry<byte[], byte[]>> entries(int from, int to, IntFunction<byte[]> value) {
    List<Map.Entry<byte[], byte[]>> out = new ArrayList<>();
    for (int i = from; i < to; i++) {
      out.add(new SimpleImmutableEntry<>(key(i), value.apply(i)));
    }
    return out;
  }

  static Map.Entry<byte[], byte[]> entry(byte[] k, byte[] v) {
    return new SimpleImmutableEntry<>(k, v);
  }

  /** The map's ranges once the client's map has {@code count} of them (at most 30 s). */
  static Routing.Range[] rangesOnce(String name, int count) {
    long deadline = System.nanoTime() + Duration.ofSeconds(30).toNanos();
    while (true) {
      client.refreshMap(null);
      Routing.Range[] ranges = client.routing().keyspaces.get(name);
      if (ranges.length == count || System.nanoTime() > deadline) {
        return ranges;
      }
      AmuletClient.sleepNanos(100_000_000L);
    }
  }

  @Test
  public void preSplitsARangeMapAndRefusesUnsortedInput() {
    int first = client.partitionIds().get(0);
    int partitionsBefore = client.partitionIds().size();
    String name = fresh();
    ByteMap m = client.createRangeMap(name, List.of(new byte[0]), List.of(first));
    BulkLoaded loaded =
        m.bulkLoad(
            entries(0, ENTRIES, BulkLoadTest::value),
            BulkLoad.defaults().withPartitionEntries(PER_PARTITION));
    long bytes = 0;
    for (int i = 0; i < ENTRIES; i++) {
      bytes += key(i).length + value(i).length;
    }
    // The first chunk joins the map's first range: two cuts, three ranges.
    assertEquals(new BulkLoaded(ENTRIES, bytes, 2, 3), loaded);
    Routing.Range[] ranges = rangesOnce(name, 3);
    assertEquals(3, ranges.length);
    assertArrayEquals(new byte[0], ranges[0].start);
    assertArrayEquals(key(1000), ranges[1].start);
    assertArrayEquals(key(2000), ranges[2].start);
    assertEquals(first, ranges[0].partition);
    assertEquals(
        3, new HashSet<>(List.of(ranges[0].partition, ranges[1].partition, ranges[2].partition)).size());
    assertEquals(partitionsBefore + 2, client.partitionIds().size());
    // Each range holds its chunk, and every entry reads back.
    for (int at = 0; at < 3; at++) {
      byte[] from = at == 0 ? null : ranges[at].start;
      byte[] to = at == 2 ? null : ranges[at + 1].start;
      ByteMap.RangeResult r = m.range(from, true, to, false, PER_PARTITION + 1, false);
      assertEquals(PER_PARTITION, r.entries.size());
      assertFalse(r.more);
    }
    int n = 0;
    try (Snapshot snap = m.snapshot()) {
      while (snap.hasNext()) {
        Map.Entry<byte[], byte[]> e = snap.next();
        assertArrayEquals(key(n), e.getKey());
        assertArrayEquals(value(n), e.getValue());
        n++;
      }
    }
    assertEquals(ENTRIES, n);
    for (int i = 0; i < ENTRIES; i += 7) {
      assertArrayEquals(value(i), m.get(key(i)));
    }

    // Unsorted: refused at the key that goes back; the chunk before it is
    // written, nothing of its own chunk (k00005003 came before the bad key).
    List<Map.Entry<byte[], byte[]>> unsorted =
        List.of(
            entry(key(5001), b("a")),
            entry(key(5002), b("b")),
            entry(key(5003), b("c")),
            entry(key(5000), b("d")));
    IllegalArgumentException refused =
        assertThrows(
            IllegalArgumentException.class,
            () -> m.bulkLoad(unsorted, BulkLoad.defaults().withPartitionEntries(2)));
    assertTrue(refused.getMessage(), refused.getMessage().contains("sorted"));
    assertTrue(refused.getMessage(), refused.getMessage().contains("b\"k00005000\" after b\"k00005003\""));
    assertArrayEquals(b("a"), m.get(key(5001)));
    assertArrayEquals(b("b"), m.get(key(5002)));
    assertNull(m.get(key(5003)));
    assertNull(m.get(key(5000)));
    // A key given twice in the first chunk: nothing written at all.
    assertThrows(
        IllegalArgumentException.class,
        () -> m.bulkLoad(List.of(entry(key(6000), b("x")), entry(key(6000), b("y")))));
    assertNull(m.get(key(6000)));
    assertEquals(3, rangesOnce(name, 3).length);
    assertEquals(ENTRIES + 2, m.size());
  }

  @Test
  public void loadsAHashMapWithoutSplits() {
    List<Integer> before = client.partitionIds();
    String name = fresh();
    ByteMap m = client.createMap(name);
    BulkLoaded loaded =
        m.bulkLoad(
            entries(0, 2_500, BulkLoadTest::value),
            BulkLoad.defaults().withPartitionEntries(1_000).withBatchEntries(200));
    assertEquals(2_500, loaded.entries());
    assertEquals(0, loaded.splits());
    // Grouped by partition within each chunk (3 hash partitions): full
    // batches, not one per change of partition from key to key.
    assertTrue(loaded.toString(), loaded.batches() <= 3 * (3 + 1_000 / 200));
    client.refreshMap(null);
    assertEquals(before, client.partitionIds());
    assertNull(client.routing().keyspaces.get(name));
    assertEquals(2_500, m.size());
    for (int i = 0; i < 2_500; i += 11) {
      assertArrayEquals(value(i), m.get(key(i)));
    }
  }

  @Test
  public void batchesByBytesAndRefusesBadOptions() {
    ByteMap m = client.createMap(fresh());
    byte[] big = new byte[1000];
    BulkLoaded loaded =
        m.bulkLoad(
            entries(0, 10, i -> big), BulkLoad.defaults().withPartitionEntries(0).withBatchBytes(2_500));
    // 1,009 bytes an entry: two a batch within each partition's group.
    assertEquals(10, loaded.entries());
    assertEquals(10 * 1009, loaded.bytes());
    assertEquals(0, loaded.splits());
    assertTrue(loaded.toString(), loaded.batches() >= 5 && loaded.batches() <= 6);
    assertEquals(10, m.size());
    assertThrows(IllegalArgumentException.class, () -> BulkLoad.defaults().withBatchEntries(0));
    assertThrows(IllegalArgumentException.class, () -> BulkLoad.defaults().withBatchBytes(0));
    assertThrows(IllegalArgumentException.class, () -> BulkLoad.defaults().withInFlight(0));
    assertThrows(IllegalArgumentException.class, () -> BulkLoad.defaults().withPartitionEntries(-1));
    assertThrows(
        NullPointerException.class, () -> m.bulkLoad(List.of(entry(b("a"), null))));
  }

  @Test
  public void splitAtBuildsTheOperatorsSplit() {
    int first = client.partitionIds().get(0);
    String name = fresh();
    client.createRangeMap(name, List.of(new byte[0]), List.of(first));
    client.refreshMap(null);
    Routing map = client.routing();
    assertTrue(BulkLoad.needsCut(map, name, b("m")));
    assertFalse(BulkLoad.needsCut(map, name, new byte[0]));
    ReconfigureRequest request = BulkLoad.splitAt(map, name, b("m"), List.of(99));
    assertEquals(ReconfigureRequest.ChangeCase.SPLIT, request.getChangeCase());
    SplitPartition split = request.getSplit();
    assertEquals(first, split.getSource());
    assertEquals(map.partitions.lastKey() + 1, split.getNewPartition());
    assertEquals(100, split.getStream().getStream());
    assertEquals(map.partitions.get(first), split.getStream().getAcceptorsList());
    assertEquals("sync", split.getStream().getStorage());
    assertEquals(
        List.of(RangeCut.newBuilder().setMap(name).setKey(ByteString.copyFrom(b("m"))).build()),
        split.getAtKeysList());
    assertFalse(split.hasAtToken());
  }
}
