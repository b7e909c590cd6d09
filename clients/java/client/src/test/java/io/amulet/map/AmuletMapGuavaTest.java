package io.amulet.map;

import static org.junit.Assert.assertTrue;

import com.google.common.collect.testing.ConcurrentNavigableMapTestSuiteBuilder;
import com.google.common.collect.testing.TestStringSortedMapGenerator;
import com.google.common.collect.testing.features.CollectionFeature;
import com.google.common.collect.testing.features.CollectionSize;
import com.google.common.collect.testing.features.MapFeature;
import com.google.common.collect.testing.testers.CollectionIteratorTester;
import io.amulet.client.AmuletClient;
import io.amulet.client.ByteMap;
import io.amulet.codec.KeyCodecs;
import io.amulet.codec.ValueCodecs;
import io.amulet.testing.DevCluster;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.lang.reflect.Method;
import java.util.ArrayList;
import java.util.Enumeration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.SortedMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import junit.framework.AssertionFailedError;
import junit.framework.Test;
import junit.framework.TestCase;
import junit.framework.TestListener;
import junit.framework.TestResult;
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

  /**
   * Nothing is suppressed by default: every test of the suite runs (33,150
   * with the derived suites, about 6 minutes on 2 shared cores).
   * {@code -Damulet.guava.quick=true} skips Guava's two exhaustive iterator
   * testers (every sequence of five hasNext / next / remove calls, each on
   * a newly created collection), which take most of that time, for quick
   * local runs; what they check is also covered by the testIteratorRemove_*
   * testers and by AmuletMapTest.
   */
  static List<Method> suppressed() {
    List<Method> out = new ArrayList<>();
    if (!Boolean.getBoolean("amulet.guava.quick")) {
      return out;
    }
    try {
      out.add(CollectionIteratorTester.class.getMethod("testIterator_knownOrderRemoveSupported"));
      out.add(
          CollectionIteratorTester.class.getMethod("testIterator_unknownOrderRemoveSupported"));
    } catch (NoSuchMethodException e) {
      throw new IllegalStateException(e);
    }
    return out;
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

  static void flatten(Test t, List<TestCase> out) {
    if (t instanceof TestCase) {
      out.add((TestCase) t);
    } else if (t instanceof TestSuite) {
      for (Enumeration<Test> e = ((TestSuite) t).tests(); e.hasMoreElements(); ) {
        flatten(e.nextElement(), out);
      }
    } else {
      throw new IllegalStateException("unexpected test " + t);
    }
  }

  @org.junit.Test
  public void guavaTestlibSuite() throws Exception {
    TestSuite suite = guavaSuite();
    POOL.get().used = 0;
    List<TestCase> tests = new ArrayList<>();
    flatten(suite, tests);
    ConcurrentLinkedQueue<String> failures = new ConcurrentLinkedQueue<>();
    AtomicInteger run = new AtomicInteger();
    long start = System.nanoTime();
    ExecutorService pool = Executors.newFixedThreadPool(THREADS);
    try {
      for (TestCase test : tests) {
        pool.submit(
            () -> {
              TestResult result = new TestResult();
              result.addListener(
                  new TestListener() {
                    @Override
                    public void addError(Test t, Throwable e) {
                      failures.add(describe(t, e));
                    }

                    @Override
                    public void addFailure(Test t, AssertionFailedError e) {
                      failures.add(describe(t, e));
                    }

                    @Override
                    public void endTest(Test t) {}

                    @Override
                    public void startTest(Test t) {}
                  });
              // Each test starts with the thread's maps free (not every
              // derived suite runs the builder's tearDown).
              POOL.get().used = 0;
              test.run(result);
              int n = run.incrementAndGet();
              if (n % 5000 == 0) {
                System.out.printf(
                    "Guava testlib: %d of %d tests run, %d failed, %.0f s%n",
                    n, tests.size(), failures.size(), (System.nanoTime() - start) / 1e9);
              }
            });
      }
      pool.shutdown();
      assertTrue("the suite did not finish in time", pool.awaitTermination(30, TimeUnit.MINUTES));
    } finally {
      pool.shutdownNow();
    }
    double seconds = (System.nanoTime() - start) / 1e9;
    System.out.printf(
        "Guava testlib: %d tests run in %.1f s on %d threads, %d failed%n",
        run.get(), seconds, THREADS, failures.size());
    if (!failures.isEmpty()) {
      Map<String, Integer> byMethod = new java.util.TreeMap<>();
      for (String f : failures) {
        byMethod.merge(f.substring(0, Math.max(0, f.indexOf('['))), 1, Integer::sum);
      }
      StringBuilder s =
          new StringBuilder(
              failures.size() + " of " + tests.size() + " failed, by test: " + byMethod + "\n");
      int shown = 0;
      for (String f : failures) {
        if (shown++ == 60) {
          s.append("...\n");
          break;
        }
        s.append(f).append('\n');
      }
      throw new AssertionError(s.toString());
    }
  }

  static String describe(Test t, Throwable e) {
    StringWriter w = new StringWriter();
    e.printStackTrace(new PrintWriter(w));
    String trace = w.toString();
    String[] lines = trace.split("\n");
    StringBuilder s = new StringBuilder(t.toString()).append(": ");
    for (int i = 0; i < Math.min(lines.length, 6); i++) {
      s.append(lines[i].trim()).append(" | ");
    }
    return s.toString();
  }
}
