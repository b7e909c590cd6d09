package io.amulet.map;

import static org.junit.Assert.assertArrayEquals;
import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertFalse;
import static org.junit.Assert.assertNull;
import static org.junit.Assert.assertTrue;
import static org.junit.Assert.fail;

import io.amulet.client.AmuletClient;
import io.amulet.client.AmuletException;
import io.amulet.client.Transaction;
import io.amulet.codec.KeyCodecs;
import io.amulet.codec.ValueCodecs;
import io.amulet.testing.DevCluster;
import io.amulet.testing.SharedClusterTest;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.NavigableMap;
import java.util.TreeMap;
import java.util.UUID;
import java.util.concurrent.ThreadLocalRandom;
import org.junit.BeforeClass;
import org.junit.Test;

/**
 * TransactionMap beyond the Guava suite: typed keys over many small pages
 * mixing the cluster's entries with buffered writes, against a TreeMap
 * model; what a commit applies; the view of a finished transaction.
 */
public class TransactionMapTest extends SharedClusterTest {
  /** Shadows {@link SharedClusterTest#connect}: a client with small pages. */
  @BeforeClass
  public static void connect() {
    // Small pages, so that iteration crosses many pages and partitions.
    client =
        AmuletClient.connect(
            DevCluster.get().addresses(),
            DevCluster.get().config().withRangeEntries(4).withOperationTimeout(Duration.ofSeconds(20)));
  }

  static String fresh() {
    return "jtm-" + UUID.randomUUID().toString().substring(0, 8);
  }

  static <K, V> void check(NavigableMap<K, V> model, NavigableMap<K, V> m, List<K> probes) {
    assertEquals(new ArrayList<>(model.entrySet()), new ArrayList<>(m.entrySet()));
    assertEquals(new ArrayList<>(model.descendingMap().keySet()), new ArrayList<>(m.descendingKeySet()));
    assertEquals(model.size(), m.size());
    assertEquals(model.isEmpty(), m.isEmpty());
    assertEquals(model.firstEntry(), m.firstEntry());
    assertEquals(model.lastEntry(), m.lastEntry());
    for (K k : probes) {
      assertEquals("floor " + k, model.floorEntry(k), m.floorEntry(k));
      assertEquals("ceiling " + k, model.ceilingEntry(k), m.ceilingEntry(k));
      assertEquals("higher " + k, model.higherEntry(k), m.higherEntry(k));
      assertEquals("lower " + k, model.lowerEntry(k), m.lowerEntry(k));
      assertEquals("get " + k, model.get(k), m.get(k));
    }
    assertEquals(model, m);
    assertEquals(model.hashCode(), m.hashCode());
  }

  @Test
  public void aViewMixingTheClusterAndBufferedWritesMatchesATreeMapAndCommits() {
    String name = fresh();
    client.createMap(name);
    AmuletMap<Long, String> stored = client.map(name, KeyCodecs.longs(), ValueCodecs.strings());
    TreeMap<Long, String> model = new TreeMap<>();
    for (long k = -40; k <= 40; k += 2) {
      model.put(k * 7, "c" + k);
    }
    stored.putAll(model);
    List<Long> probes = new ArrayList<>();
    for (long p = -300; p <= 300; p += 13) {
      probes.add(p);
    }

    Transaction tx = client.transaction();
    TransactionMap<Long, String> m = tx.map(name, KeyCodecs.longs(), ValueCodecs.strings());
    check(model, m, probes);
    ThreadLocalRandom r = ThreadLocalRandom.current();
    for (int i = 0; i < 60; i++) {
      long k = 7L * (r.nextInt(100) - 50) + (r.nextBoolean() ? 0 : 1);
      switch (r.nextInt(4)) {
        case 0:
        case 1:
          assertEquals(model.put(k, "t" + i), m.put(k, "t" + i));
          break;
        case 2:
          assertEquals(model.remove(k), m.remove(k));
          break;
        default:
          assertEquals(model.pollFirstEntry(), m.pollFirstEntry());
          break;
      }
    }
    check(model, m, probes);
    check(model.descendingMap(), m.descendingMap(), probes);
    check(model.subMap(-100L, true, 120L, false), m.subMap(-100L, true, 120L, false), probes);
    check(model.headMap(0L, true).descendingMap(), m.headMap(0L, true).descendingMap(), probes);
    check(model.tailMap(49L, false), m.tailMap(49L, false), probes);

    // Iterator removal and setValue through a view, and clear of a range.
    Iterator<Map.Entry<Long, String>> it = m.tailMap(100L, true).entrySet().iterator();
    Iterator<Map.Entry<Long, String>> modelIt = model.tailMap(100L, true).entrySet().iterator();
    for (int i = 0; it.hasNext(); i++) {
      Map.Entry<Long, String> e = it.next();
      assertEquals(modelIt.next(), e);
      if (i % 3 == 0) {
        it.remove();
        modelIt.remove();
      } else {
        e.setValue("set" + i);
        model.put(e.getKey(), "set" + i);
      }
    }
    m.subMap(-50L, 50L).clear();
    model.subMap(-50L, 50L).clear();
    check(model, m, probes);
    assertTrue(m.containsValue(model.firstEntry().getValue()));
    assertFalse(m.containsValue("nowhere"));

    // Nothing is in the cluster before the commit; exactly the model after.
    assertEquals(41, stored.size());
    tx.commit();
    assertEquals(model, new TreeMap<>(stored));
    try {
      m.get(0L);
      fail("a finished transaction's view was read");
    } catch (IllegalStateException expected) {
      // Over.
    }
  }

  @Test
  public void aViewsReadsCountForConflicts() {
    String name = fresh();
    client.createMap(name);
    AmuletMap<String, Long> stored = client.map(name, KeyCodecs.strings(), ValueCodecs.longs());
    stored.put("a", 1L);
    stored.put("m", 2L);
    Transaction tx = client.transaction();
    TransactionMap<String, Long> m = tx.map(name, KeyCodecs.strings(), ValueCodecs.longs());
    assertEquals(2, m.headMap("z").size()); // reads the range below "z"
    stored.put("b", 3L); // a phantom in it
    m.put("total", 3L); // a put reads its key too
    try {
      tx.commit();
      fail("committed over a phantom in a range the view read");
    } catch (AmuletException e) {
      assertEquals(AmuletException.Kind.CONFLICT, e.kind());
      assertEquals(name, e.conflictMap());
      assertArrayEquals(KeyCodecs.strings().encode("b"), e.conflictKey());
    }
    assertNull(stored.get("total"));

    // A blind putAll reads nothing: it never conflicts.
    Transaction blind = client.transaction();
    TransactionMap<String, Long> bm = blind.map(name, KeyCodecs.strings(), ValueCodecs.longs());
    bm.putAll(Map.of("x", 1L, "y", 2L));
    stored.put("x", 9L);
    blind.commit();
    assertEquals(Long.valueOf(1L), stored.get("x"));
  }
}
