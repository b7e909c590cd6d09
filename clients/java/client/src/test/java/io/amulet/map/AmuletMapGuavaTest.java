package io.amulet.map;

import com.google.common.collect.testing.ConcurrentNavigableMapTestSuiteBuilder;
import com.google.common.collect.testing.TestStringSortedMapGenerator;
import com.google.common.collect.testing.features.CollectionFeature;
import com.google.common.collect.testing.features.CollectionSize;
import com.google.common.collect.testing.features.MapFeature;
import io.amulet.client.AmuletClient;
import io.amulet.client.ByteMap;
import io.amulet.codec.KeyCodecs;
import io.amulet.codec.ValueCodecs;
import io.amulet.testing.DevCluster;
import java.lang.reflect.Method;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.SortedMap;
import java.util.concurrent.atomic.AtomicLong;
import junit.framework.TestSuite;
import org.junit.AfterClass;

/**
 * Guava's testlib ConcurrentNavigableMap suite over AmuletMap<String,
 * String> on the live cluster: 32,838 tests, including the derived suites of
 * the subMap/headMap/tailMap and descending views, navigableKeySet,
 * descendingKeySet, entrySet and values.
 *
 * <p>Every test gets a fresh map: an empty map of the cluster that no other
 * running test uses (each worker thread keeps a few maps and clears one
 * before handing it out, rather than creating and dropping 30,000 maps).
 * The tests run on {@link #THREADS} threads, since nearly all their time is
 * waiting for the cluster to order commands; failures are collected and
 * reported together by name.
 *
 * <p>Features left out, deliberately: ALLOWS_NULL_KEYS, ALLOWS_NULL_VALUES
 * and the ALLOWS_NULL_*_QUERIES (a remote map has no null key or value: the
 * suite then checks that nulls are refused with NullPointerException, as
 * ConcurrentSkipListMap does), SERIALIZABLE (a map is a handle on a
 * cluster), SUPPORTS_SET_VALUE (entries are immutable snapshots, as in
 * ConcurrentSkipListMap) and FAILS_FAST_ON_CONCURRENT_MODIFICATION
 * (iterators are weakly consistent snapshots, as the ConcurrentNavigableMap
 * contract allows).
 *
 * <p>No test is suppressed (see {@link #suppressed()} for the quick mode).
 */
public class AmuletMapGuavaTest {
  static final int THREADS = 24;
  private static final AtomicLong COUNTER = new AtomicLong();
  private static final String RUN = Long.toHexString(System.nanoTime() & 0xFFFFFF);
  private static AmuletClient client;

  /** The maps of one worker thread: handed out in order, reset after each test. */
  private static final class Pool {
    final List<String> names = new ArrayList<>();
    int used;
  }

  private static final ThreadLocal<Pool> POOL = ThreadLocal.withInitial(Pool::new);

  static synchronized AmuletClient client() {
    if (client == null) {
      client = DevCluster.get().client();
    }
    return client;
  }

  @AfterClass
  public static void closeClient() {
    if (client != null) {
      client.close();
      client = null;
    }
  }

  /** A fresh (empty, unshared) map for the current test. */
  static ByteMap freshMap() {
    Pool pool = POOL.get();
    AmuletClient c = client();
    if (pool.used < pool.names.size()) {
      String name = pool.names.get(pool.used++);
      ByteMap m = c.byteMap(name);
      m.clear();
      return m;
    }
    String name = "g" + RUN + "-" + COUNTER.incrementAndGet();
    ByteMap m = c.createMap(name);
    pool.names.add(name);
    pool.used++;
    return m;
  }

  /** See {@link GuavaSuites#suppressed()}: nothing unless -Damulet.guava.quick=true. */
  static List<Method> suppressed() {
    return GuavaSuites.suppressed();
  }

  static TestSuite guavaSuite() {
    return ConcurrentNavigableMapTestSuiteBuilder.using(
            new TestStringSortedMapGenerator() {
              @Override
              protected SortedMap<String, String> create(Map.Entry<String, String>[] entries) {
                AmuletMap<String, String> map =
                    AmuletMap.of(freshMap(), KeyCodecs.strings(), ValueCodecs.strings());
                Map<String, String> init = new LinkedHashMap<>();
                for (Map.Entry<String, String> e : entries) {
                  init.put(e.getKey(), e.getValue());
                }
                map.putAll(init);
                return map;
              }
            })
        .named("AmuletMap")
        .withFeatures(
            MapFeature.GENERAL_PURPOSE,
            CollectionFeature.SUPPORTS_ITERATOR_REMOVE,
            CollectionFeature.KNOWN_ORDER,
            CollectionSize.ANY)
        .suppressing(suppressed())
        .withTearDown(() -> POOL.get().used = 0)
        .createTestSuite();
  }

  @org.junit.Test
  public void guavaTestlibSuite() throws Exception {
    TestSuite suite = guavaSuite();
    POOL.get().used = 0;
    // Each test starts with the thread's maps free (not every derived
    // suite runs the builder's tearDown).
    GuavaSuites.run("Guava testlib", suite, THREADS, () -> POOL.get().used = 0, () -> {});
  }
}
