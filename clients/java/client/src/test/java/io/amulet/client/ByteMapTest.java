package io.amulet.client;

import static org.junit.Assert.assertArrayEquals;
import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertFalse;
import static org.junit.Assert.assertNull;
import static org.junit.Assert.assertThrows;
import static org.junit.Assert.assertTrue;
import static org.junit.Assert.fail;

import io.amulet.testing.DevCluster;
import io.amulet.testing.SharedClusterTest;
import java.nio.charset.StandardCharsets;
import java.util.AbstractMap.SimpleImmutableEntry;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.UUID;
import org.junit.Test;

/** The byte-level API against a live cluster. */
public class ByteMapTest extends SharedClusterTest {
  static byte[] b(String s) {
    return s.getBytes(StandardCharsets.UTF_8);
  }

  static String s(byte[] b) {
    return b == null ? null : new String(b, StandardCharsets.UTF_8);
  }

  static String fresh() {
    return "j-" + UUID.randomUUID().toString().substring(0, 8);
  }

  @Test
  public void singleKeyOperations() {
    ByteMap m = client.createMap(fresh());
    assertNull(m.get(b("k")));
    assertNull(m.put(b("k"), b("v1")));
    assertEquals("v1", s(m.get(b("k"))));
    assertTrue(m.containsKey(b("k")));
    assertEquals("v1", s(m.put(b("k"), b("v2"))));
    assertEquals("v2", s(m.putIfAbsent(b("k"), b("v3"))));
    assertNull(m.putIfAbsent(b("k2"), b("w")));
    assertEquals("w", s(m.replace(b("k2"), b("w2"))));
    assertNull(m.replace(b("absent"), b("x")));
    assertFalse(m.containsKey(b("absent")));
    assertFalse(m.replaceIfEquals(b("k2"), b("nope"), b("w3")));
    assertTrue(m.replaceIfEquals(b("k2"), b("w2"), b("w3")));
    assertFalse(m.removeIfEquals(b("k2"), b("w2")));
    assertTrue(m.removeIfEquals(b("k2"), b("w3")));
    assertEquals("v2", s(m.remove(b("k"))));
    assertNull(m.remove(b("k")));
    assertTrue(m.isEmpty());
    assertEquals(0, m.size());
  }

  @Test
  public void mergeFieldsChangesARecordInPlace() {
    String name = fresh();
    ByteMap m = client.createMap(name);
    Map<byte[], byte[]> set = new LinkedHashMap<>();
    set.put(b("a"), b("1"));
    // A missing record stays missing: an update is not an insert.
    assertFalse(m.mergeFields(b("absent"), set));
    assertNull(m.get(b("absent")));

    Map<byte[], byte[]> record = new LinkedHashMap<>();
    record.put(b("a"), b("1"));
    record.put(b("b"), b("2"));
    record.put(b("keep"), b("k"));
    m.put(b("r"), FieldRecord.encode(record));
    Map<byte[], byte[]> changes = new LinkedHashMap<>();
    changes.put(b("c"), b("3")); // added
    changes.put(b("a"), null); // removed
    changes.put(b("b"), b("two")); // replaced
    changes.put(b("gone"), null); // removing an absent field is no error
    assertTrue(m.mergeFields(b("r"), changes));
    Map<String, String> got = new TreeMap<>();
    FieldRecord.decode(m.get(b("r"))).forEach((k, v) -> got.put(s(k), s(v)));
    assertEquals(Map.of("b", "two", "c", "3", "keep", "k"), got);

    // The empty value is the empty record; removing its last field leaves it empty.
    m.put(b("e"), new byte[0]);
    assertTrue(m.mergeFields(b("e"), Map.of(b("x"), new byte[0])));
    assertArrayEquals(FieldRecord.encode(Map.of(b("x"), new byte[0])), m.get(b("e")));
    Map<byte[], byte[]> remove = new LinkedHashMap<>();
    remove.put(b("x"), null);
    assertTrue(m.mergeFields(b("e"), remove));
    assertArrayEquals(new byte[0], m.get(b("e")));

    // A value that is not a record is refused and kept.
    m.put(b("raw"), b("not a record"));
    AmuletException e = assertThrows(AmuletException.class, () -> m.mergeFields(b("raw"), set));
    assertEquals(AmuletException.Kind.FAILED_PRECONDITION, e.kind());
    assertEquals("not a record", s(m.get(b("raw"))));

    // Invalid requests change nothing.
    byte[] before = m.get(b("r"));
    assertThrows(IllegalArgumentException.class, () -> m.mergeFields(b("r"), Map.of()));
    Map<byte[], byte[]> twice = new LinkedHashMap<>();
    twice.put(b("a"), b("1"));
    twice.put(b("a"), b("2")); // another array of the same bytes
    assertThrows(IllegalArgumentException.class, () -> m.mergeFields(b("r"), twice));
    assertThrows(
        IllegalArgumentException.class,
        () -> m.mergeFields(b("r"), Map.of(b("big"), new byte[1024 * 1024 + 1])));
    assertArrayEquals(before, m.get(b("r")));

    AmuletException missing =
        assertThrows(AmuletException.class, () -> client.byteMap(fresh()).mergeFields(b("r"), set));
    assertEquals(AmuletException.Kind.NOT_FOUND, missing.kind());
  }

  @Test
  public void wholeMapOperations() {
    ByteMap m = client.createMap(fresh());
    List<Map.Entry<byte[], byte[]>> entries = new ArrayList<>();
    for (int i = 0; i < 100; i++) {
      entries.add(new SimpleImmutableEntry<>(b(String.format("k%03d", i)), b("v" + i)));
    }
    m.putAll(entries);
    assertEquals(100, m.size());
    assertFalse(m.isEmpty());
    assertTrue(m.containsValue(b("v42")));
    assertFalse(m.containsValue(b("v100")));
    assertEquals("k000", s(m.firstEntry().getKey()));
    assertEquals("k099", s(m.lastEntry().getKey()));
    assertEquals("k050", s(m.nearestEntry(b("k050"), ByteMap.Nearest.FLOOR).getKey()));
    assertEquals("k049", s(m.nearestEntry(b("k050"), ByteMap.Nearest.LOWER).getKey()));
    assertEquals("k051", s(m.nearestEntry(b("k050"), ByteMap.Nearest.HIGHER).getKey()));
    assertEquals("k051", s(m.nearestEntry(b("k0505"), ByteMap.Nearest.CEILING).getKey()));
    assertNull(m.nearestEntry(b("k"), ByteMap.Nearest.LOWER));
    ByteMap.RangeResult r = m.range(b("k010"), true, b("k020"), false, 5, false);
    assertEquals(5, r.entries.size());
    assertTrue(r.more);
    assertEquals("k010", s(r.entries.get(0).getKey()));
    r = m.range(null, false, null, false, 3, true);
    assertEquals("k099", s(r.entries.get(0).getKey()));
    assertEquals("k097", s(r.entries.get(2).getKey()));
    m.clear();
    assertEquals(0, m.size());
  }

  @Test
  public void errorsMapToExceptions() {
    String name = fresh();
    ByteMap m = client.createMap(name);
    try {
      client.createMap(name);
      fail();
    } catch (AmuletException e) {
      assertEquals(AmuletException.Kind.ALREADY_EXISTS, e.kind());
    }
    try {
      client.byteMap(fresh()).get(b("x"));
      fail();
    } catch (AmuletException e) {
      assertEquals(AmuletException.Kind.NOT_FOUND, e.kind());
    }
    try {
      m.put(new byte[16 * 1024 + 1], b("v"));
      fail();
    } catch (IllegalArgumentException expected) {
      // key above key_bytes_max
    }
    try {
      client.byteMap("bad name");
      fail();
    } catch (IllegalArgumentException expected) {
      // bad map name
    }
    client.dropMap(name);
    try {
      m.get(b("x"));
      fail();
    } catch (AmuletException e) {
      assertEquals(AmuletException.Kind.NOT_FOUND, e.kind());
    }
  }

  @Test
  public void snapshotMergesPartitionsInKeyOrderWithBoundedMemory() {
    try (AmuletClient small =
        AmuletClient.connect(
            DevCluster.get().addresses(), DevCluster.get().config().withPageEntries(50))) {
      ByteMap m = small.createMap(fresh());
      TreeMap<String, String> expected = new TreeMap<>();
      List<Map.Entry<byte[], byte[]>> batch = new ArrayList<>();
      for (int i = 0; i < 3000; i++) {
        String k = Integer.toHexString(i * 7919 % 100003);
        expected.put(k, "v" + i);
        batch.add(new SimpleImmutableEntry<>(b(k), b("v" + i)));
      }
      m.putAll(batch);
      int n = 0;
      int maxBuffered = 0;
      List<String> got = new ArrayList<>();
      try (Snapshot snap = m.snapshot()) {
        // Writes after the snapshot is opened are not in it.
        m.put(b("zzzz-after"), b("x"));
        m.remove(b(expected.firstKey()));
        while (snap.hasNext()) {
          Map.Entry<byte[], byte[]> e = snap.next();
          got.add(s(e.getKey()));
          assertEquals(expected.get(s(e.getKey())), s(e.getValue()));
          maxBuffered = Math.max(maxBuffered, snap.buffered());
          n++;
        }
      }
      assertEquals(new ArrayList<>(expected.keySet()), got);
      assertEquals(3000, n);
      assertTrue("buffered " + maxBuffered, maxBuffered <= 3 * 50);
      // A snapshot starting after a key.
      byte[] after = b(expected.firstKey());
      try (Snapshot snap = m.snapshot(after)) {
        assertArrayEquals(b(expected.higherKey(expected.firstKey())), snap.next().getKey());
      }
    }
  }

  @Test
  public void rangeMapRoutesByKeyRanges() {
    List<Integer> ids = client.partitionIds();
    String name = fresh();
    ByteMap m =
        client.createRangeMap(name, Arrays.asList(new byte[0], b("g"), b("p")), ids);
    for (String k : new String[] {"a", "f", "g", "h", "p", "z", ""}) {
      m.put(b(k), b(k));
    }
    assertEquals(7, m.size());
    assertEquals("h", s(m.nearestEntry(b("g"), ByteMap.Nearest.HIGHER).getKey()));
    assertEquals("f", s(m.nearestEntry(b("g"), ByteMap.Nearest.LOWER).getKey()));
    List<String> keys = new ArrayList<>();
    try (Snapshot snap = m.snapshot()) {
      snap.forEachRemaining(e -> keys.add(s(e.getKey())));
    }
    assertEquals(Arrays.asList("", "a", "f", "g", "h", "p", "z"), keys);
    ByteMap.RangeResult r = m.range(b("f"), false, b("p"), true, 100, false);
    assertEquals(3, r.entries.size());
  }
}
