package io.amulet.map;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertFalse;
import static org.junit.Assert.assertNull;
import static org.junit.Assert.assertTrue;
import static org.junit.Assert.fail;

import io.amulet.client.AmuletClient;
import io.amulet.codec.KeyCodecs;
import io.amulet.codec.ValueCodecs;
import io.amulet.testing.DevCluster;
import io.amulet.testing.SharedClusterTest;
import io.amulet.tuple.Tuple;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.NavigableMap;
import java.util.TreeMap;
import java.util.UUID;
import java.util.concurrent.ConcurrentNavigableMap;
import org.junit.BeforeClass;
import org.junit.Test;

/** AmuletMap behaviour beyond the Guava suite: typed keys, paging, views over many pages. */
public class AmuletMapTest extends SharedClusterTest {
  /** Shadows {@link SharedClusterTest#connect}: a client with small pages. */
  @BeforeClass
  public static void connect() {
    // Small pages, so that iteration crosses many pages and partitions.
    client =
        AmuletClient.connect(
            DevCluster.get().addresses(),
            DevCluster.get().config()
                .withPageEntries(7)
                .withRangeEntries(5)
                .withOperationTimeout(Duration.ofSeconds(20)));
  }

  static String fresh() {
    return "jm-" + UUID.randomUUID().toString().substring(0, 8);
  }

  @Test
  public void longKeysSortNumericallyAndViewsMatchATreeMap() {
    String name = fresh();
    client.createMap(name);
    AmuletMap<Long, String> m = client.map(name, KeyCodecs.longs(), ValueCodecs.strings());
    TreeMap<Long, String> model = new TreeMap<>();
    for (long k = -60; k <= 60; k += 3) {
      long key = k * k * k;
      model.put(key, "v" + key);
    }
    m.putAll(model);
    assertEquals(model.size(), m.size());
    assertEquals(new ArrayList<>(model.keySet()), new ArrayList<>(m.keySet()));
    assertEquals(model.firstKey(), m.firstKey());
    assertEquals(model.lastKey(), m.lastKey());
    check(model, m);
    check(model.descendingMap(), m.descendingMap());
    check(model.subMap(-1000L, true, 5000L, false), m.subMap(-1000L, true, 5000L, false));
    check(model.headMap(-27L, true), m.headMap(-27L, true));
    check(model.tailMap(27L, false), m.tailMap(27L, false));
    check(
        model.descendingMap().subMap(5000L, false, -1000L, true),
        m.descendingMap().subMap(5000L, false, -1000L, true));
    check(model.subMap(10L, true, 10L, false), m.subMap(10L, true, 10L, false));
    for (long probe : new long[] {-300000, -1000, -27, 0, 1, 26, 27, 28, 200000, 300000}) {
      assertEquals(model.floorKey(probe), m.floorKey(probe));
      assertEquals(model.ceilingKey(probe), m.ceilingKey(probe));
      assertEquals(model.higherKey(probe), m.higherKey(probe));
      assertEquals(model.lowerKey(probe), m.lowerKey(probe));
      NavigableMap<Long, String> sub = model.subMap(-1000L, true, 5000L, false);
      ConcurrentNavigableMap<Long, String> msub = m.subMap(-1000L, true, 5000L, false);
      assertEquals(sub.floorKey(probe), msub.floorKey(probe));
      assertEquals(sub.higherKey(probe), msub.higherKey(probe));
    }
    try {
      m.subMap(-1000L, 5000L).put(6000L, "x");
      fail();
    } catch (IllegalArgumentException expected) {
      // out of the view's range
    }
    assertEquals(model.pollFirstEntry(), m.pollFirstEntry());
    assertEquals(model.pollLastEntry(), m.pollLastEntry());
    assertEquals(model.headMap(0L).size(), m.headMap(0L).size());
    m.headMap(0L).clear();
    model.headMap(0L).clear();
    check(model, m);
  }

  private static <K, V> void check(NavigableMap<K, V> model, NavigableMap<K, V> m) {
    assertEquals(new ArrayList<>(model.entrySet()), new ArrayList<>(m.entrySet()));
    assertEquals(new ArrayList<>(model.values()), new ArrayList<>(m.values()));
    assertEquals(model.size(), m.size());
    assertEquals(model.isEmpty(), m.isEmpty());
    assertEquals(model, m);
    assertEquals(model.firstEntry(), m.firstEntry());
    assertEquals(model.lastEntry(), m.lastEntry());
    assertEquals(
        new ArrayList<>(model.descendingKeySet()), new ArrayList<>(m.descendingKeySet()));
  }

  @Test
  public void tupleKeysAndIteratorRemove() {
    String name = fresh();
    client.createMap(name);
    AmuletMap<Tuple, Long> m = client.map(name, KeyCodecs.tuples(), ValueCodecs.longs());
    m.put(Tuple.of("user", 2L), 20L);
    m.put(Tuple.of("user", 10L), 100L);
    m.put(Tuple.of("user", 1L), 10L);
    m.put(Tuple.of("group", 1L), 1L);
    assertEquals(Tuple.of("group", 1L), m.firstKey());
    List<Tuple> users = new ArrayList<>(m.subMap(Tuple.of("user"), Tuple.of("user", Long.MAX_VALUE)).keySet());
    assertEquals(List.of(Tuple.of("user", 1L), Tuple.of("user", 2L), Tuple.of("user", 10L)), users);
    for (Iterator<Map.Entry<Tuple, Long>> it = m.entrySet().iterator(); it.hasNext(); ) {
      if (it.next().getValue() >= 20) {
        it.remove();
      }
    }
    assertEquals(2, m.size());
    assertTrue(m.replace(Tuple.of("user", 1L), 10L, 11L));
    assertFalse(m.replace(Tuple.of("user", 1L), 10L, 12L));
    assertEquals(Long.valueOf(11L), m.get(Tuple.of("user", 1L)));
    assertTrue(m.remove(Tuple.of("user", 1L), 11L));
    assertNull(m.get(Tuple.of("user", 1L)));
    assertEquals(Long.valueOf(5L), m.merge(Tuple.of("group", 1L), 4L, Long::sum));
  }

  /**
   * Iterators a TreeMap user starts and drops (as Guava's suites do) hold
   * no snapshot once the small map is buffered: more of them than the
   * user's share of open snapshots (snapshots_per_user_max = 256), all kept
   * reachable, each asked only hasNext, and a fresh iteration still works.
   */
  @Test
  public void droppedIteratorsOverASmallMapHoldNoSnapshot() {
    String name = fresh();
    client.createMap(name);
    AmuletMap<Long, String> m = client.map(name, KeyCodecs.longs(), ValueCodecs.strings());
    m.put(1L, "a");
    m.put(2L, "b");
    List<Iterator<Long>> kept = new ArrayList<>();
    for (int i = 0; i < 300; i++) {
      Iterator<Long> it = m.keySet().iterator();
      assertTrue(it.hasNext());
      kept.add(it);
    }
    assertEquals(List.of(1L, 2L), new ArrayList<>(m.keySet()));
    assertEquals(Long.valueOf(1L), kept.get(0).next());
  }

  @Test
  public void concurrentMergesAreAtomic() throws Exception {
    String name = fresh();
    client.createMap(name);
    AmuletMap<String, Long> m = client.map(name, KeyCodecs.strings(), ValueCodecs.longs());
    java.util.concurrent.ExecutorService pool = java.util.concurrent.Executors.newFixedThreadPool(6);
    try {
      List<java.util.concurrent.Future<?>> futures = new ArrayList<>();
      for (int t = 0; t < 6; t++) {
        futures.add(
            pool.submit(
                () -> {
                  for (int i = 0; i < 15; i++) {
                    m.merge("n", 1L, Long::sum);
                    m.compute("c", (k, v) -> v == null ? 1L : v + 1);
                  }
                  return null;
                }));
      }
      for (java.util.concurrent.Future<?> f : futures) {
        f.get(120, java.util.concurrent.TimeUnit.SECONDS);
      }
    } finally {
      pool.shutdownNow();
    }
    assertEquals(Long.valueOf(90), m.get("n"));
    assertEquals(Long.valueOf(90), m.get("c"));
  }

  @Test
  public void stringKeysAndNullsAreRefused() {
    String name = fresh();
    client.createMap(name);
    AmuletMap<String, String> m = client.map(name, KeyCodecs.strings(), ValueCodecs.strings());
    m.put("b", "2");
    m.put("a\u0000", "1");
    m.put("a", "0");
    m.put("\uD83D\uDE00", "emoji");
    m.put("\uFFFF", "ffff");
    assertEquals(List.of("a", "a\u0000", "b", "\uFFFF", "\uD83D\uDE00"), new ArrayList<>(m.keySet()));
    try {
      m.put(null, "x");
      fail();
    } catch (NullPointerException expected) {
      // no null keys
    }
    try {
      m.put("x", null);
      fail();
    } catch (NullPointerException expected) {
      // no null values
    }
  }
}
