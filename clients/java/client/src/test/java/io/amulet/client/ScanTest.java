package io.amulet.client;

import static org.junit.Assert.assertArrayEquals;
import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertNotNull;
import static org.junit.Assert.assertNull;
import static org.junit.Assert.assertThrows;
import static org.junit.Assert.assertTrue;

import io.amulet.testing.NodeCluster;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.AbstractMap.SimpleImmutableEntry;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.UUID;
import org.junit.AfterClass;
import org.junit.BeforeClass;
import org.junit.Test;

/**
 * {@link ByteMap#scan} (docs/dynatree.md "Range scans"), as the Rust
 * client's scan in {@code dynatree_bulk_load_pre_splits_sorted_input_into_partitions}:
 * on a range map a bulk load pre-split into four partitions of 100 keys
 * (ranges at "", k100, k200, k300), every key between the bounds once, in
 * order, in pages of at most {@code page} entries, never empty, each
 * within one range partition (one read per page, one per range found
 * empty: the exact read counts fail if the scan ignored the partitions'
 * ends); bounds inclusive, exclusive and open; empty ranges; a hash map;
 * writes and a split between pages. The splits add partitions to the
 * cluster: this class runs on a {@link NodeCluster} of its own, as {@link
 * BulkLoadTest}.
 */
public class ScanTest {
  private static final int ENTRIES = 400;
  private static final int PER_PARTITION = 100;

  private static NodeCluster cluster;
  private static AmuletClient client;
  /** The range map of {@link #ENTRIES} keys in four ranges of {@link #PER_PARTITION}. */
  private static ByteMap loaded;

  @BeforeClass
  public static void start() {
    cluster = NodeCluster.start();
    client = cluster.client(Duration.ofSeconds(20));
    loaded =
        client.createRangeMap(fresh(), List.of(new byte[0]), List.of(client.partitionIds().get(0)));
    BulkLoaded done =
        loaded.bulkLoad(entries(0, ENTRIES), BulkLoad.defaults().withPartitionEntries(PER_PARTITION));
    assertEquals(3, done.splits());
    Routing.Range[] ranges = rangesOnce(loaded.name(), 4);
    assertEquals(4, ranges.length);
    for (int at = 0; at < 4; at++) {
      assertArrayEquals(at == 0 ? new byte[0] : key(at * PER_PARTITION), ranges[at].start);
    }
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
    return "scan-" + UUID.randomUUID().toString().substring(0, 8);
  }

  static List<Map.Entry<byte[], byte[]>> entries(int from, int to) {
    List<Map.Entry<byte[], byte[]>> out = new ArrayList<>();
    for (int i = from; i < to; i++) {
      out.add(new SimpleImmutableEntry<>(key(i), value(i)));
    }
    return out;
  }

  static List<Integer> ints(int from, int to) {
    List<Integer> out = new ArrayList<>();
    for (int i = from; i < to; i++) {
      out.add(i);
    }
    return out;
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

  /**
   * Every page of {@code scan}, checked: none empty, none above {@code page}
   * entries, keys strictly ascending across pages, and (for a range map)
   * each page within one partition of the client's map; then null again.
   */
  static List<List<Map.Entry<byte[], byte[]>>> pages(Scan scan, ByteMap m, int page) {
    List<List<Map.Entry<byte[], byte[]>>> pages = new ArrayList<>();
    byte[] previous = null;
    List<Map.Entry<byte[], byte[]>> p;
    while ((p = scan.nextPage()) != null) {
      assertTrue("an empty page", !p.isEmpty());
      assertTrue(p.size() + " entries in a page of " + page, p.size() <= page);
      for (Map.Entry<byte[], byte[]> e : p) {
        if (previous != null && Arrays.compareUnsigned(previous, e.getKey()) >= 0) {
          throw new AssertionError(
              BulkLoad.show(e.getKey()) + " after " + BulkLoad.show(previous));
        }
        previous = e.getKey();
      }
      Routing routing = client.routing();
      if (routing.keyspaces.get(m.name()) != null) {
        assertEquals(
            "a page across a partition's end",
            routing.partitionOf(m.name(), p.get(0).getKey()),
            routing.partitionOf(m.name(), p.get(p.size() - 1).getKey()));
      }
      pages.add(p);
    }
    long reads = scan.reads();
    assertNull(scan.nextPage());
    assertEquals("no read after the end", reads, scan.reads());
    return pages;
  }

  /** The keys of {@code pages}, checked against their values (key i holds v{i}). */
  static List<Integer> keys(List<List<Map.Entry<byte[], byte[]>>> pages) {
    List<Integer> out = new ArrayList<>();
    for (List<Map.Entry<byte[], byte[]>> p : pages) {
      for (Map.Entry<byte[], byte[]> e : p) {
        String k = new String(e.getKey(), StandardCharsets.UTF_8);
        int i = Integer.parseInt(k.substring(1));
        assertArrayEquals(k, key(i), e.getKey());
        assertArrayEquals(k, value(i), e.getValue());
        out.add(i);
      }
    }
    return out;
  }

  /**
   * The reads (and pages) a scan of {@link #loaded} returning {@code keys}
   * sends: each range's keys in pages of {@code page}, one read a page
   * (every range the tests' bounds cover holds some of its keys).
   */
  static long expectedReads(List<Integer> keys, int page) {
    TreeMap<Integer, Integer> perRange = new TreeMap<>();
    for (int k : keys) {
      perRange.merge(k / PER_PARTITION, 1, Integer::sum);
    }
    long reads = 0;
    for (int n : perRange.values()) {
      reads += (n + page - 1) / page;
    }
    return reads;
  }

  /** Scans {@link #loaded} and checks keys, pages and reads; returns the scan. */
  static Scan scanLoaded(
      byte[] from, boolean fromInclusive, byte[] to, boolean toInclusive, int page, List<Integer> want) {
    Scan scan = loaded.scan(from, fromInclusive, to, toInclusive, page);
    List<List<Map.Entry<byte[], byte[]>>> pages = pages(scan, loaded, page);
    assertEquals(want, keys(pages));
    assertEquals(expectedReads(want, page), pages.size());
    assertEquals(pages.size(), scan.reads());
    return scan;
  }

  @Test
  public void pagesInOrderWithinOnePartitionAcrossFourPartitions() {
    // [k50, k310) in pages of 16: 50, 100, 100 and 10 keys in 4 + 7 + 7 + 1 pages.
    Scan scan = scanLoaded(key(50), true, key(310), false, 16, ints(50, 310));
    assertEquals(19, scan.reads());
    // At least one read per partition the range covers.
    assertTrue(scan.toString(), scan.reads() >= 4);
  }

  @Test
  public void aPageStopsAtItsPartitionsEnd() {
    // Pages of 1,000 over the whole map: one page per partition, each
    // its 100 keys. Ignoring the partitions' ends would read one page of 400.
    Scan scan = loaded.scan(null, false, null, false, 1_000);
    List<List<Map.Entry<byte[], byte[]>>> pages = pages(scan, loaded, 1_000);
    assertEquals(4, pages.size());
    assertEquals(4, scan.reads());
    for (int at = 0; at < 4; at++) {
      assertEquals(PER_PARTITION, pages.get(at).size());
      assertArrayEquals(key(at * PER_PARTITION), pages.get(at).get(0).getKey());
    }
    assertEquals(ints(0, ENTRIES), keys(pages));
    // A page of exactly a partition's keys: the read says no more, and the
    // next read starts at the next range.
    scanLoaded(null, false, null, false, PER_PARTITION, ints(0, ENTRIES));
    // One key a page: a read per key.
    assertEquals(ENTRIES, scanLoaded(null, false, null, false, 1, ints(0, ENTRIES)).reads());
  }

  @Test
  public void inclusiveAndExclusiveBounds() {
    scanLoaded(key(100), false, key(300), true, 7, ints(101, 301));
    scanLoaded(key(100), true, key(300), false, 7, ints(100, 300));
    scanLoaded(key(100), true, key(300), true, 7, ints(100, 301));
    scanLoaded(key(100), false, key(300), false, 7, ints(101, 300));
    // Bounds between keys and inside one partition.
    scanLoaded(b("k00000120x"), true, b("k00000130x"), false, 3, ints(121, 131));
    scanLoaded(key(150), true, key(150), true, 5, List.of(150));
    // The end at a range's start, inclusive: that one key is read from the next range.
    Scan scan = scanLoaded(key(195), true, key(200), true, 100, ints(195, 201));
    assertEquals(2, scan.reads());
  }

  @Test
  public void openBounds() {
    scanLoaded(null, false, key(150), true, 32, ints(0, 151));
    scanLoaded(null, true, key(150), false, 32, ints(0, 150));
    scanLoaded(key(250), false, null, false, 32, ints(251, ENTRIES));
    scanLoaded(key(250), true, null, true, 32, ints(250, ENTRIES));
    scanLoaded(new byte[0], true, null, false, 64, ints(0, ENTRIES));
  }

  @Test
  public void anEmptyRangeGivesNoPage() {
    Scan scan = loaded.scan(key(150), false, key(150), false, 10);
    assertNull(scan.nextPage());
    assertEquals(1, scan.reads());
    assertNull(scan.nextPage());
    assertEquals(1, scan.reads());
    scan = loaded.scan(key(150), true, key(150), false, 10);
    assertNull(scan.nextPage());
    scan = loaded.scan(b("k00000150x"), true, key(151), false, 10);
    assertNull(scan.nextPage());
    assertEquals(1, scan.reads());
    // Past the last key, in the last range.
    scan = loaded.scan(b("z"), true, null, false, 10);
    assertNull(scan.nextPage());
    assertEquals(1, scan.reads());
    // A range map with no entries: one read per range found empty.
    List<Integer> ids = client.partitionIds();
    ByteMap empty =
        client.createRangeMap(
            fresh(), List.of(new byte[0], b("g"), b("p")), List.of(ids.get(0), ids.get(1), ids.get(2)));
    client.refreshMap(null);
    assertEquals(3, client.routing().keyspaces.get(empty.name()).length);
    scan = empty.scan(null, false, null, false, 10);
    assertNull(scan.nextPage());
    assertEquals(3, scan.reads());
    // Its one key in the middle range: found after the first range's empty read.
    empty.put(b("h"), b("x"));
    scan = empty.scan(null, false, null, false, 10);
    List<Map.Entry<byte[], byte[]>> page = scan.nextPage();
    assertNotNull(page);
    assertEquals(1, page.size());
    assertArrayEquals(b("h"), page.get(0).getKey());
    assertEquals(2, scan.reads());
    assertNull(scan.nextPage());
    assertEquals(3, scan.reads());
  }

  @Test
  public void scansAHashMapPageByPage() {
    ByteMap m = client.createMap(fresh());
    m.putAll(entries(0, 250));
    client.refreshMap(null);
    assertNull(client.routing().keyspaces.get(m.name()));
    Scan scan = m.scan(null, false, null, false, 64);
    List<List<Map.Entry<byte[], byte[]>>> pages = pages(scan, m, 64);
    assertEquals(ints(0, 250), keys(pages));
    // Over all its partitions at once: 64, 64, 64, 58.
    assertEquals(4, pages.size());
    assertEquals(4, scan.reads());
    scan = m.scan(key(10), true, key(20), false, 4);
    assertEquals(ints(10, 20), keys(pages(scan, m, 4)));
    assertEquals(3, scan.reads());
    scan = m.scan(key(10), false, key(10), false, 4);
    assertNull(scan.nextPage());
  }

  @Test
  public void writesAndASplitBetweenPages() {
    // A range map over the cluster's first partition, split between pages
    // by another client (the scanning client's map goes stale).
    ByteMap m =
        client.createRangeMap(fresh(), List.of(new byte[0]), List.of(client.partitionIds().get(0)));
    m.putAll(entries(0, 300));
    Scan scan = m.scan(null, false, null, false, 50);
    List<Map.Entry<byte[], byte[]>> first = scan.nextPage();
    assertEquals(50, first.size());
    assertArrayEquals(key(49), first.get(49).getKey());
    try (AmuletClient other = cluster.client(Duration.ofSeconds(20))) {
      Reconfigure.with(
          other, map -> BulkLoad.splitAt(map, m.name(), key(150), Reconfigure.runningStreams(other)));
    }
    // Behind the scan's position: not seen; ahead of it: seen.
    m.put(b("k00000010x"), b("behind"));
    m.put(b("k00000250x"), b("ahead"));
    List<String> rest = new ArrayList<>();
    List<Map.Entry<byte[], byte[]>> page;
    byte[] previous = key(49);
    while ((page = scan.nextPage()) != null) {
      assertTrue(!page.isEmpty() && page.size() <= 50);
      for (Map.Entry<byte[], byte[]> e : page) {
        assertTrue(Arrays.compareUnsigned(previous, e.getKey()) < 0);
        previous = e.getKey();
        rest.add(new String(e.getKey(), StandardCharsets.UTF_8));
      }
    }
    List<String> want = new ArrayList<>();
    for (int i = 50; i < 300; i++) {
      want.add(String.format("k%08d", i));
      if (i == 250) {
        want.add("k00000250x");
      }
    }
    assertEquals(want, rest);
    client.refreshMap(null);
    assertEquals(2, client.routing().keyspaces.get(m.name()).length);
    // Scanned again on the new map: the split's end cuts a page.
    scan = m.scan(key(100), true, key(200), false, 1_000);
    assertEquals(50, scan.nextPage().size());
    assertEquals(50, scan.nextPage().size());
    assertNull(scan.nextPage());
    assertEquals(2, scan.reads());
  }

  @Test
  public void refusesBadPagesAndBounds() {
    assertThrows(IllegalArgumentException.class, () -> loaded.scan(null, false, null, false, 0));
    assertThrows(IllegalArgumentException.class, () -> loaded.scan(null, false, null, false, -1));
    Scan scan = loaded.scan(key(300), true, key(100), true, 10);
    assertThrows(IllegalArgumentException.class, scan::nextPage);
    assertEquals(0, scan.reads());
    // The caller's bound arrays are copied.
    byte[] from = key(390);
    scan = loaded.scan(from, true, null, false, 100);
    from[1] = '9';
    assertEquals(ints(390, ENTRIES), keys(pages(scan, loaded, 100)));
  }
}
