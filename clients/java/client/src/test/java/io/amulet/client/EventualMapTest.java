package io.amulet.client;

import static java.nio.charset.StandardCharsets.UTF_8;
import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertThrows;
import static org.junit.Assert.assertTrue;

import io.amulet.testing.DevCluster;
import io.amulet.testing.NodeCluster;
import io.amulet.testing.SharedClusterTest;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import java.util.UUID;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.Test;

/**
 * Eventual maps live: siblings, contexts kept as hex and given back,
 * deletes, concurrent updates of a union-merged set that lose nothing,
 * refusals and their reasons (on the shared {@link DevCluster}); and
 * fail-over from a killed node, {@code quorum-not-reached} with a replica
 * down, and the write reaching the restarted replica (a {@link
 * NodeCluster} of the test's own).
 */
public class EventualMapTest extends SharedClusterTest {
  private static String fresh(String what) {
    return what + "-" + UUID.randomUUID().toString().substring(0, 8);
  }

  private static byte[] utf8(String s) {
    return s.getBytes(UTF_8);
  }

  /** The values as strings, sorted. */
  private static List<String> sorted(Versioned v) {
    List<String> out = new ArrayList<>();
    for (byte[] b : v.values()) {
      out.add(new String(b, UTF_8));
    }
    out.sort(null);
    return out;
  }

  /** A comma-separated set; siblings merge by union. */
  private static byte[] union(List<byte[]> siblings, String add) {
    Set<String> items = new TreeSet<>();
    if (add != null) {
      items.add(add);
    }
    for (byte[] s : siblings) {
      if (s.length > 0) {
        items.addAll(List.of(new String(s, UTF_8).split(",")));
      }
    }
    return utf8(String.join(",", items));
  }

  @Test
  public void siblingsAndContexts() {
    EventualMap m = client.createEventualMap(fresh("carts"), 3);
    byte[] k = utf8("alice");
    Versioned first = m.put(k, utf8("book"), Context.EMPTY, 3);
    assertEquals(List.of("book"), sorted(first));
    m.put(k, utf8("pen"), Context.EMPTY, 3);
    Versioned both = m.get(k, 3);
    assertEquals(List.of("book", "pen"), sorted(both));
    // A context kept as hex and given back later is the same context.
    Context kept = Context.fromHex(both.context().toString());
    assertEquals(both.context(), kept);
    assertEquals(List.of("book,pen"), sorted(m.put(k, utf8("book,pen"), kept, 3)));
    assertEquals(List.of("book,pen"), sorted(m.get(k, 3)));
    assertEquals(List.of("book,pen"), sorted(m.get(k)));
    // A stale context (the first write's) leaves the later value as a sibling.
    assertEquals(List.of("book,pen", "ink"), sorted(m.put(k, utf8("ink"), first.context(), 3)));
    Versioned all = m.get(k, 3);
    assertEquals(List.of(), sorted(m.delete(k, all.context(), 3)));
    Versioned gone = m.get(k, 3);
    assertTrue(gone.isEmpty());
    assertEquals(List.of("z"), sorted(m.put(k, utf8("z"), gone.context(), 3)));
  }

  @Test
  public void updateMergesSiblings() {
    EventualMap m = client.createEventualMap(fresh("carts"), 3, 8);
    byte[] k = utf8("bob");
    m.put(k, utf8("a"), Context.EMPTY, 3);
    m.put(k, utf8("b"), Context.EMPTY, 3);
    Versioned merged = m.update(k, values -> union(values, "c"), 3, 3);
    assertEquals(List.of("a,b,c"), sorted(merged));
    assertEquals(List.of(), sorted(m.update(k, values -> null, 3, 3)));
    assertTrue(m.get(k, 3).isEmpty());
  }

  @Test
  public void concurrentUpdatesLoseNothing() throws Exception {
    EventualMap m = client.createEventualMap(fresh("sets"), 3);
    byte[] k = utf8("set");
    int threads = 4;
    int each = 25;
    ExecutorService pool = Executors.newFixedThreadPool(threads);
    try {
      List<Future<?>> done = new ArrayList<>();
      for (int t = 0; t < threads; t++) {
        int thread = t;
        done.add(
            pool.submit(
                () -> {
                  for (int i = 0; i < each; i++) {
                    String item = String.format("t%d-%02d", thread, i);
                    m.update(k, values -> union(values, item));
                  }
                }));
      }
      for (Future<?> f : done) {
        f.get(120, TimeUnit.SECONDS);
      }
    } finally {
      pool.shutdownNow();
    }
    Versioned end = m.get(k, 3);
    Set<String> items = new TreeSet<>(List.of(new String(union(end.values(), null), UTF_8).split(",")));
    assertEquals(threads * each, items.size());
    // One more update merges whatever siblings are left into one value.
    Versioned one = m.update(k, values -> union(values, null), 3, 3);
    assertEquals(1, one.size());
  }

  @Test
  public void refusalsAndReasons() {
    String name = fresh("kinds");
    EventualMap m = client.createEventualMap(name, 2, 4);
    byte[] k = utf8("k");
    IllegalArgumentException quorum =
        assertThrows(IllegalArgumentException.class, () -> m.get(k, 3));
    assertTrue(quorum.getMessage(), quorum.getMessage().contains("quorum-out-of-bounds"));
    IllegalArgumentException context =
        assertThrows(
            IllegalArgumentException.class,
            () -> m.put(k, utf8("v"), Context.fromHex("ff00"), 2));
    assertTrue(context.getMessage(), context.getMessage().contains("bad-context"));
    // Ordered ops on the eventual map, eventual ops on an ordered map.
    AmuletException ordered =
        assertThrows(AmuletException.class, () -> client.byteMap(name).get(k));
    assertEquals(AmuletException.Kind.FAILED_PRECONDITION, ordered.kind());
    String hash = fresh("hash");
    client.createMap(hash);
    AmuletException notEventual =
        assertThrows(AmuletException.class, () -> client.eventualMap(hash).get(k));
    assertEquals(AmuletException.Kind.FAILED_PRECONDITION, notEventual.kind());
    assertEquals("not-eventual", notEventual.reason());
    AmuletException missing =
        assertThrows(AmuletException.class, () -> client.eventualMap(fresh("nope")).get(k));
    assertEquals(AmuletException.Kind.NOT_FOUND, missing.kind());
    AmuletException exists =
        assertThrows(AmuletException.class, () -> client.createEventualMap(name, 2));
    assertEquals(AmuletException.Kind.ALREADY_EXISTS, exists.kind());
    assertThrows(IllegalArgumentException.class, () -> client.createEventualMap(fresh("z"), 4));
    assertThrows(IllegalArgumentException.class, () -> client.createEventualMap(fresh("z"), 3, 1025));
  }

  @Test
  public void failOverFromAKilledNodeAndQuorumNotReached() {
    try (NodeCluster cluster = NodeCluster.start();
        AmuletClient c = cluster.client(Duration.ofSeconds(20))) {
      EventualMap m = c.createEventualMap(fresh("carts"), 3);
      byte[] k = utf8("k");
      m.put(k, utf8("a"), Context.EMPTY, 3);
      c.eventualRequests().useNode(cluster.addresses().get(0));
      cluster.killNode(1);
      // The current node is gone: the read goes to another node.
      Versioned read = m.get(k, 2);
      assertEquals(List.of("a"), sorted(read));
      assertTrue(!c.eventualRequests().currentNode().equals(cluster.addresses().get(0)));
      // A write whose connection is refused goes elsewhere too.
      c.eventualRequests().useNode(cluster.addresses().get(0));
      assertEquals(List.of("b"), sorted(m.put(k, utf8("b"), read.context(), 2)));
      // Two replicas of three answer: w = 3 cannot be reached.
      long start = System.nanoTime();
      AmuletException e =
          assertThrows(
              AmuletException.class, () -> m.put(k, utf8("c"), Context.EMPTY, 3));
      assertEquals(AmuletException.Kind.UNAVAILABLE, e.kind());
      assertEquals("quorum-not-reached", e.reason());
      assertTrue(System.nanoTime() - start < TimeUnit.SECONDS.toNanos(10));
      AmuletException r = assertThrows(AmuletException.class, () -> m.get(k, 3));
      assertEquals("quorum-not-reached", r.reason());
      // The write that did not reach its quorum still took effect where it
      // was taken: a sibling of b.
      assertEquals(List.of("b", "c"), sorted(m.get(k, 2)));
      // The restarted replica catches up (anti-entropy): every replica answers.
      cluster.startNode(1);
      cluster.waitCaughtUp(1, Duration.ofSeconds(60));
      long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
      List<String> seen = List.of();
      while (System.nanoTime() < deadline) {
        try {
          seen = sorted(m.get(k, 3));
          if (seen.equals(List.of("b", "c"))) {
            break;
          }
        } catch (AmuletException again) {
          seen = List.of(again.toString());
        }
        AmuletClient.sleepNanos(TimeUnit.MILLISECONDS.toNanos(200));
      }
      assertEquals(List.of("b", "c"), seen);
    }
  }
}
