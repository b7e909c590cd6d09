package io.amulet.map;

import com.google.common.collect.testing.NavigableMapTestSuiteBuilder;
import com.google.common.collect.testing.TestStringSortedMapGenerator;
import com.google.common.collect.testing.features.CollectionFeature;
import com.google.common.collect.testing.features.CollectionSize;
import com.google.common.collect.testing.features.MapFeature;
import io.amulet.client.AmuletClient;
import io.amulet.client.ByteMap;
import io.amulet.client.Transaction;
import io.amulet.codec.KeyCodec;
import io.amulet.codec.KeyCodecs;
import io.amulet.codec.ValueCodec;
import io.amulet.codec.ValueCodecs;
import io.amulet.testing.DevCluster;
import java.util.AbstractMap.SimpleImmutableEntry;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.SortedMap;
import java.util.concurrent.atomic.AtomicLong;
import junit.framework.TestSuite;
import org.junit.AfterClass;

/**
 * Guava's testlib NavigableMap suite over {@link TransactionMap}<String,
 * String>, the typed view of a map inside a transaction, on the live
 * cluster, with the derived suites of the subMap/headMap/tailMap and
 * descending views, navigableKeySet, descendingKeySet, entrySet and values.
 *
 * <p>Every test's map is half in the cluster and half in the transaction,
 * so that every read merges the read version's entries with buffered
 * writes: the generator writes the even entries (in the order Guava gives
 * them), a stale value for each odd entry and two ghost keys (one below
 * and one above every sample) to a fresh map of the cluster; then a new
 * transaction puts the odd entries and deletes the ghosts, and the test
 * runs on its view. Nothing is committed (the transaction is abandoned
 * after the test). Fresh maps come as in {@link AmuletMapGuavaTest}: each
 * worker thread keeps a few maps and clears one before handing it out.
 *
 * <p>Features as in {@link AmuletMapGuavaTest}, without the concurrent-map
 * ones (a transaction's view is a NavigableMap, not a ConcurrentMap).
 * Guava's two exhaustive iterator testers ({@link
 * GuavaSuites#exhaustiveIteratorTesters()}) are always left out: they
 * create a collection for each of thousands of call sequences, here a
 * cleared map, a putAll and a transaction's read version each, which takes
 * over 20 minutes (more than the test cluster lives); iterator removal is
 * covered by the suite's testIteratorRemove_* testers and by {@link
 * TransactionMapTest}. Nothing else is suppressed.
 */
public class TransactionMapGuavaTest {
  static final int THREADS = 24;
  private static final AtomicLong COUNTER = new AtomicLong();
  private static final String RUN = Long.toHexString(System.nanoTime() & 0xFFFFFF);
  private static final KeyCodec<String> KEYS = KeyCodecs.strings();
  private static final ValueCodec<String> VALUES = ValueCodecs.strings();
  /** Below and above every key of the suite ("!! a" ... "~~ b"). */
  private static final List<String> GHOSTS = List.of("", "\uffff ghost");
  private static AmuletClient client;

  /** The maps and transactions of one worker thread. */
  private static final class Worker {
    final List<String> names = new ArrayList<>();
    final List<Transaction> open = new ArrayList<>();
    int used;

    /** Frees the maps and abandons the transactions of the test that ended. */
    void reset() {
      used = 0;
      for (Transaction t : open) {
        t.abandon();
      }
      open.clear();
    }
  }

  private static final ThreadLocal<Worker> WORKER = ThreadLocal.withInitial(Worker::new);

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
    Worker w = WORKER.get();
    AmuletClient c = client();
    if (w.used < w.names.size()) {
      ByteMap m = c.byteMap(w.names.get(w.used++));
      m.clear();
      return m;
    }
    String name = "gt" + RUN + "-" + COUNTER.incrementAndGet();
    ByteMap m = c.createMap(name);
    w.names.add(name);
    w.used++;
    return m;
  }

  /** A transaction's view holding exactly {@code entries}, half of them buffered. */
  static TransactionMap<String, String> create(Map.Entry<String, String>[] entries) {
    Map<String, String> init = new LinkedHashMap<>();
    for (Map.Entry<String, String> e : entries) {
      // As the map's own putAll: no null key or value.
      init.put(Objects.requireNonNull(e.getKey()), Objects.requireNonNull(e.getValue()));
    }
    ByteMap raw = freshMap();
    List<Map.Entry<byte[], byte[]>> committed = new ArrayList<>();
    List<Map.Entry<String, String>> buffered = new ArrayList<>();
    int i = 0;
    for (Map.Entry<String, String> e : init.entrySet()) {
      byte[] value = VALUES.encode(i % 2 == 0 ? e.getValue() : "stale " + e.getValue());
      committed.add(new SimpleImmutableEntry<>(KEYS.encode(e.getKey()), value));
      if (i % 2 == 1) {
        buffered.add(e);
      }
      i++;
    }
    for (String g : GHOSTS) {
      committed.add(new SimpleImmutableEntry<>(KEYS.encode(g), VALUES.encode("ghost")));
    }
    raw.putAll(committed);
    Transaction tx = client().transaction();
    WORKER.get().open.add(tx);
    TransactionMap<String, String> map = tx.map(raw.name(), KEYS, VALUES);
    Map<String, String> mine = new LinkedHashMap<>();
    for (Map.Entry<String, String> e : buffered) {
      mine.put(e.getKey(), e.getValue());
    }
    map.putAll(mine);
    for (String g : GHOSTS) {
      tx.delete(raw.name(), KEYS.encode(g));
    }
    return map;
  }

  static TestSuite guavaSuite() {
    return NavigableMapTestSuiteBuilder.using(
            new TestStringSortedMapGenerator() {
              @Override
              protected SortedMap<String, String> create(Map.Entry<String, String>[] entries) {
                return TransactionMapGuavaTest.create(entries);
              }
            })
        .named("TransactionMap")
        .withFeatures(
            MapFeature.GENERAL_PURPOSE,
            CollectionFeature.SUPPORTS_ITERATOR_REMOVE,
            CollectionFeature.KNOWN_ORDER,
            CollectionSize.ANY)
        .suppressing(GuavaSuites.exhaustiveIteratorTesters())
        .withTearDown(() -> WORKER.get().reset())
        .createTestSuite();
  }

  @org.junit.Test
  public void guavaTestlibSuite() throws Exception {
    GuavaSuites.run(
        "Guava testlib (TransactionMap)",
        guavaSuite(),
        THREADS,
        () -> WORKER.get().reset(),
        () -> WORKER.get().reset());
  }
}
