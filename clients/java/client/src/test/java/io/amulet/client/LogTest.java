package io.amulet.client;

import static org.junit.Assert.assertArrayEquals;
import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertFalse;
import static org.junit.Assert.assertNotNull;
import static org.junit.Assert.assertNull;
import static org.junit.Assert.assertThrows;
import static org.junit.Assert.assertTrue;

import io.amulet.testing.DevCluster;
import io.amulet.testing.SharedClusterTest;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.AbstractMap.SimpleImmutableEntry;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Flow;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.Test;

/** DLog's logs ({@link AmuletLog}, {@link LogTail}, multi-append) against a live cluster. */
public class LogTest extends SharedClusterTest {
  static byte[] b(String s) {
    return s.getBytes(StandardCharsets.UTF_8);
  }

  static String s(byte[] b) {
    return new String(b, StandardCharsets.UTF_8);
  }

  static List<String> strings(List<byte[]> entries) {
    List<String> out = new ArrayList<>();
    for (byte[] e : entries) {
      out.add(s(e));
    }
    return out;
  }

  static String fresh() {
    return ByteMapTest.fresh();
  }

  /** A client of the shared cluster whose TailLog calls go through {@code hook}. */
  static AmuletClient hooked(TailHook hook, Duration operationTimeout) {
    return AmuletClient.connect(
        DevCluster.get().addresses(),
        DevCluster.get().config().withOperationTimeout(operationTimeout),
        hook);
  }

  @Test
  public void appendReadTrimAndBounds() {
    AmuletLog log = client.createLog(fresh());
    assertEquals(new LogBounds(0, 0), log.bounds());
    assertEquals(new LogEntries(0, List.of(), 0, 0), log.read(0, 10));
    for (int i = 0; i < 5; i++) {
      assertEquals(i, log.append(b("e" + i)));
    }
    LogEntries all = log.read(0, 100);
    assertEquals(List.of("e0", "e1", "e2", "e3", "e4"), strings(all.entries()));
    assertEquals(new LogBounds(0, 5), all.bounds());
    assertEquals(5, all.next());
    assertEquals(new LogEntry(3, b("e3")), all.entry(3));
    LogEntries some = log.read(1, 2);
    assertEquals(1, some.from());
    assertEquals(List.of("e1", "e2"), strings(some.entries()));
    assertEquals(List.of(), log.read(5, 3).entries());

    assertEquals(new LogBounds(3, 5), log.trim(3));
    assertEquals(2, log.bounds().size());
    AmuletException trimmed = assertThrows(AmuletException.class, () -> log.read(2, 1));
    assertEquals(AmuletException.Kind.OUT_OF_RANGE, trimmed.kind());
    assertEquals(List.of("e3", "e4"), strings(log.read(3, 10).entries()));
    // Below the first position: nothing changes; past the end: refused.
    assertEquals(new LogBounds(3, 5), log.trim(1));
    assertEquals(
        AmuletException.Kind.OUT_OF_RANGE,
        assertThrows(AmuletException.class, () -> log.trim(6)).kind());
    assertEquals(
        AmuletException.Kind.OUT_OF_RANGE,
        assertThrows(AmuletException.class, () -> log.read(6, 1)).kind());
    // Positions are never reused after a trim.
    assertEquals(new LogBounds(5, 5), log.trim(5));
    assertEquals(5, log.append(b("e5")));
    assertEquals(new LogEntries(5, List.of(b("e5")), 5, 6), log.read(5, 10));
  }

  @Test
  public void errorsAndNames() {
    String name = fresh();
    AmuletLog log = client.log(name);
    assertEquals(name, log.name());
    assertEquals(
        AmuletException.Kind.NOT_FOUND,
        assertThrows(AmuletException.class, () -> log.append(b("x"))).kind());
    assertEquals(
        AmuletException.Kind.NOT_FOUND, assertThrows(AmuletException.class, log::bounds).kind());
    assertEquals(
        AmuletException.Kind.NOT_FOUND,
        assertThrows(AmuletException.class, () -> client.dropLog(name)).kind());
    client.createLog(name);
    assertEquals(
        AmuletException.Kind.ALREADY_EXISTS,
        assertThrows(AmuletException.class, () -> client.createLog(name)).kind());
    // Maps and logs share one namespace.
    assertEquals(
        AmuletException.Kind.ALREADY_EXISTS,
        assertThrows(AmuletException.class, () -> client.createMap(name)).kind());
    String map = fresh();
    client.createMap(map);
    assertEquals(
        AmuletException.Kind.ALREADY_EXISTS,
        assertThrows(AmuletException.class, () -> client.createLog(map)).kind());
    assertEquals(0, client.createLogIfAbsent(name).append(b("a")));
    assertEquals(1, log.append(b("b")));

    assertThrows(IllegalArgumentException.class, () -> client.log("bad name"));
    assertThrows(IllegalArgumentException.class, () -> client.createLog(""));
    assertThrows(IllegalArgumentException.class, () -> log.read(0, 0));
    assertThrows(IllegalArgumentException.class, () -> log.read(0, 10_001));
    assertThrows(IllegalArgumentException.class, () -> log.read(-1, 1));
    assertThrows(IllegalArgumentException.class, () -> log.read(0, -1));
    assertThrows(IllegalArgumentException.class, () -> log.trim(-1));
    assertThrows(IllegalArgumentException.class, () -> log.append(new byte[1024 * 1024 + 1]));
    assertThrows(NullPointerException.class, () -> log.append(null));
    assertEquals(new LogBounds(0, 2), log.bounds());

    client.dropLog(name);
    assertEquals(
        AmuletException.Kind.NOT_FOUND,
        assertThrows(AmuletException.class, () -> log.read(0, 1)).kind());
    // The name is free again; a new log there starts at 0.
    assertEquals(0, client.createLogIfAbsent(name).append(b("again")));
    client.dropLog(name);
    client.dropMap(map);
  }

  /** Names of {@code count} logs that live in at least two partitions. */
  private static List<String> logsOverPartitions(int count) {
    for (int attempt = 0; attempt < 100; attempt++) {
      List<String> names = new ArrayList<>();
      Set<Integer> partitions = new HashSet<>();
      for (int i = 0; i < count; i++) {
        String n = fresh();
        names.add(n);
        partitions.add(client.routing().partitionOf(n, b(n)));
      }
      if (partitions.size() >= 2) {
        return names;
      }
    }
    throw new AssertionError("no names over two partitions in 100 attempts");
  }

  @Test
  public void multiAppendAcrossPartitions() {
    List<String> names = logsOverPartitions(3);
    for (String n : names) {
      client.createLog(n);
    }
    String a = names.get(0);
    String bName = names.get(1);
    String c = names.get(2);
    assertEquals(0, client.log(bName).append(b("b0")));
    long[] positions =
        client.multiAppend(
            List.of(
                Map.entry(a, b("a0")),
                Map.entry(bName, b("b1")),
                Map.entry(a, b("a1")),
                Map.entry(c, b("c0"))));
    assertArrayEquals(new long[] {0, 1, 1, 0}, positions);
    assertEquals(List.of("a0", "a1"), strings(client.log(a).read(0, 10).entries()));
    assertEquals(List.of("b0", "b1"), strings(client.log(bName).read(0, 10).entries()));
    assertEquals(List.of("c0"), strings(client.log(c).read(0, 10).entries()));

    // All or none: a log that does not exist appends nothing to the others.
    List<Map.Entry<String, byte[]>> withMissing = new ArrayList<>();
    withMissing.add(new SimpleImmutableEntry<>(a, b("x")));
    withMissing.add(new SimpleImmutableEntry<>(fresh(), b("y")));
    assertEquals(
        AmuletException.Kind.NOT_FOUND,
        assertThrows(AmuletException.class, () -> client.multiAppend(withMissing)).kind());
    assertEquals(new LogBounds(0, 2), client.log(a).bounds());
    assertThrows(IllegalArgumentException.class, () -> client.multiAppend(List.of()));
    assertThrows(
        IllegalArgumentException.class,
        () -> client.multiAppend(List.of(Map.entry("bad name", b("x")))));
    for (String n : names) {
      client.dropLog(n);
    }
  }

  /** Multi-appends from several threads: every log sees them in one order. */
  @Test
  public void concurrentMultiAppendsAreOrderedAlikeInEveryLog() throws Exception {
    List<String> names = logsOverPartitions(2);
    for (String n : names) {
      client.createLog(n);
    }
    ExecutorService pool = Executors.newFixedThreadPool(4);
    try {
      List<Future<?>> futures = new ArrayList<>();
      for (int t = 0; t < 4; t++) {
        int thread = t;
        futures.add(
            pool.submit(
                () -> {
                  for (int i = 0; i < 10; i++) {
                    byte[] v = b(thread + "-" + i);
                    long[] p =
                        client.multiAppend(
                            List.of(Map.entry(names.get(0), v), Map.entry(names.get(1), v)));
                    assertEquals(2, p.length);
                  }
                  return null;
                }));
      }
      for (Future<?> f : futures) {
        f.get(60, TimeUnit.SECONDS);
      }
    } finally {
      pool.shutdownNow();
    }
    List<String> first = strings(client.log(names.get(0)).read(0, 100).entries());
    assertEquals(40, first.size());
    assertEquals(first, strings(client.log(names.get(1)).read(0, 100).entries()));
  }

  @Test
  public void aTailSeesEntriesAppendedAfterItStarted() throws Exception {
    AmuletLog log = client.createLog(fresh());
    log.append(b("before"));
    ExecutorService appender = Executors.newSingleThreadExecutor();
    try (LogTail tail = log.tail(0, Duration.ofMillis(20))) {
      assertEquals(new LogEntry(0, b("before")), tail.next());
      assertEquals(1, tail.position());
      // Caught up: nothing yet.
      assertNull(tail.poll(Duration.ofMillis(30)));
      CountDownLatch polling = new CountDownLatch(1);
      Future<?> appends =
          appender.submit(
              () -> {
                polling.await(10, TimeUnit.SECONDS);
                Thread.sleep(100);
                for (int i = 0; i < 3; i++) {
                  log.append(b("after" + i));
                }
                return null;
              });
      polling.countDown();
      List<LogEntry> seen = new ArrayList<>();
      long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
      while (seen.size() < 3 && System.nanoTime() < deadline) {
        LogEntry e = tail.poll(Duration.ofSeconds(1));
        if (e != null) {
          seen.add(e);
        }
      }
      appends.get(20, TimeUnit.SECONDS);
      assertEquals(
          List.of(
              new LogEntry(1, b("after0")), new LogEntry(2, b("after1")), new LogEntry(3, b("after2"))),
          seen);
      assertEquals(4, tail.position());
      // One stream, from a replica of the log's partition, served it all.
      assertFalse(tail.isPolling());
      assertEquals(0, tail.reconnects());
      Routing routing = client.routing();
      assertTrue(
          tail.streamAddress(),
          routing
              .replicaAddresses(routing.partitionOf(log.name(), b(log.name())))
              .contains(tail.streamAddress()));
    } finally {
      appender.shutdownNow();
    }
  }

  @Test
  public void aTailIsIterableAndResumesWithoutGapOrDuplicate() {
    AmuletLog log = client.createLog(fresh());
    int count = LogTail.READ_ENTRIES + 10;
    List<Map.Entry<String, byte[]>> batch = new ArrayList<>();
    for (int i = 0; i < count; i++) {
      batch.add(Map.entry(log.name(), b("v" + i)));
    }
    client.multiAppend(batch);
    List<String> seen = new ArrayList<>();
    LogTail tail = log.tail(0);
    for (LogEntry e : tail) {
      assertEquals(seen.size(), e.position());
      seen.add(s(e.value()));
      if (seen.size() == 700) {
        break;
      }
    }
    long resumeAt = tail.position();
    assertEquals(700, resumeAt);
    try (LogTail again = log.tail(resumeAt)) {
      while (seen.size() < count) {
        LogEntry e = again.poll(Duration.ofSeconds(5));
        assertNotNull(e);
        assertEquals(seen.size(), e.position());
        seen.add(s(e.value()));
      }
    }
    for (int i = 0; i < count; i++) {
      assertEquals("v" + i, seen.get(i));
    }
  }

  @Test
  public void aTailBelowATrimIsOutOfRangeAndAClosedTailEnds() throws Exception {
    AmuletLog log = client.createLog(fresh());
    for (int i = 0; i < 4; i++) {
      log.append(b("v" + i));
    }
    LogTail tail = log.tail(1);
    log.trim(3);
    AmuletException e = assertThrows(AmuletException.class, tail::next);
    assertEquals(AmuletException.Kind.OUT_OF_RANGE, e.kind());
    assertEquals(1, tail.position());

    // close() from another thread stops a waiting next().
    LogTail waiting = log.tail(4, Duration.ofSeconds(1));
    ExecutorService t = Executors.newSingleThreadExecutor();
    try {
      Future<Throwable> f =
          t.submit(
              () -> {
                try {
                  waiting.next();
                  return null;
                } catch (Throwable x) {
                  return x;
                }
              });
      Thread.sleep(200);
      waiting.close();
      assertTrue(f.get(10, TimeUnit.SECONDS) instanceof java.util.NoSuchElementException);
      assertFalse(waiting.hasNext());
    } finally {
      t.shutdownNow();
    }
  }

  /**
   * The first {@code next} checks the start with one read of the log's
   * bounds: below the first position or past the end is OUT_OF_RANGE at
   * once, without a stream; the check is not repeated when the stream is
   * reopened. Every TailLog call carries the cached map's version.
   */
  @Test
  public void aTailChecksItsStartOnceAgainstTheBounds() {
    AmuletLog log = client.createLog(fresh());
    for (int i = 0; i < 4; i++) {
      log.append(b("c" + i));
    }
    log.trim(2);
    TailHook hook = new TailHook();
    hook.plan = n -> n < 2 ? TailAction.breakAfter(1) : TailAction.pass();
    try (AmuletClient hooked = hooked(hook, Duration.ofSeconds(20))) {
      long before = hooked.partitionMapVersion();
      assertTrue("map version " + before, before > 0);
      AmuletLog h = hooked.log(log.name());
      for (long from : new long[] {1, 5}) {
        try (LogTail tail = h.tail(from)) {
          long start = System.nanoTime();
          AmuletException e =
              assertThrows(AmuletException.class, () -> tail.poll(Duration.ofSeconds(20)));
          assertEquals(AmuletException.Kind.OUT_OF_RANGE, e.kind());
          assertTrue(
              e.getMessage(),
              e.getMessage().contains(log.name())
                  && e.getMessage().contains(" " + from + " ")
                  && e.getMessage().contains("2..4"));
          assertTrue(System.nanoTime() - start < TimeUnit.SECONDS.toNanos(5));
          assertEquals(from, tail.position());
        }
      }
      assertEquals(0, hook.calls.get());
      assertEquals(2, hook.boundsReads.get());
      hook.boundsReads.set(0);
      // From the first position, then at the end waiting for appends, on
      // streams broken twice: one read of the bounds in all.
      try (LogTail tail = h.tail(2)) {
        assertEquals(List.of("c2", "c3"), take(tail, 2));
        log.append(b("c4"));
        assertEquals(List.of("c4"), take(tail, 1));
        log.append(b("c5"));
        assertEquals(List.of("c5"), take(tail, 1));
        assertTrue("reconnects " + tail.reconnects(), tail.reconnects() >= 2);
        assertEquals(1, hook.boundsReads.get());
      }
      long after = hooked.partitionMapVersion();
      assertTrue(hook.mapVersions.toString(), hook.mapVersions.size() >= 3);
      for (long v : hook.mapVersions) {
        assertTrue(hook.mapVersions + " in " + before + ".." + after, before <= v && v <= after);
      }
    }
  }

  @Test
  public void aPublisherDeliversAsRequestedThenCancels() throws Exception {
    AmuletLog log = client.createLog(fresh());
    log.append(b("p0"));
    log.append(b("p1"));
    List<LogEntry> got = Collections.synchronizedList(new ArrayList<>());
    CountDownLatch five = new CountDownLatch(5);
    AtomicReference<Throwable> error = new AtomicReference<>();
    AtomicReference<Flow.Subscription> subscription = new AtomicReference<>();
    ExecutorService executor = Executors.newCachedThreadPool();
    try {
      log.publisher(0, Duration.ofMillis(20), executor)
          .subscribe(
              new Flow.Subscriber<LogEntry>() {
                @Override
                public void onSubscribe(Flow.Subscription s) {
                  subscription.set(s);
                  s.request(2);
                }

                @Override
                public void onNext(LogEntry item) {
                  got.add(item);
                  five.countDown();
                  // Two at a time.
                  if (got.size() % 2 == 0) {
                    subscription.get().request(2);
                  }
                }

                @Override
                public void onError(Throwable t) {
                  error.set(t);
                }

                @Override
                public void onComplete() {
                  error.set(new AssertionError("a tail never completes"));
                }
              });
      for (int i = 2; i < 5; i++) {
        Thread.sleep(20);
        log.append(b("p" + i));
      }
      assertTrue("entries " + got, five.await(20, TimeUnit.SECONDS));
      subscription.get().cancel();
      assertNull(error.get());
      List<LogEntry> expected = new ArrayList<>();
      for (int i = 0; i < 5; i++) {
        expected.add(new LogEntry(i, b("p" + i)));
      }
      assertEquals(expected, new ArrayList<>(got).subList(0, 5));
      // Nothing after the cancel.
      log.append(b("p5"));
      Thread.sleep(200);
      assertEquals(5, got.size());
    } finally {
      executor.shutdownNow();
      assertTrue(executor.awaitTermination(10, TimeUnit.SECONDS));
    }
  }

  /** A read stops at the node's byte limit (4 MiB); a tail reads on from there. */
  @Test
  public void aReadStopsAtTheByteLimitAndATailGoesOn() {
    AmuletLog log = client.createLog(fresh());
    byte[] big = new byte[1024 * 1024];
    for (int i = 0; i < 5; i++) {
      big[0] = (byte) i;
      assertEquals(i, log.append(big));
    }
    LogEntries read = log.read(0, 10);
    assertTrue("read " + read.entries().size(), read.entries().size() >= 1);
    assertTrue("read " + read.entries().size(), read.entries().size() < 5);
    assertEquals(5, read.end());
    try (LogTail tail = log.tail(0)) {
      for (int i = 0; i < 5; i++) {
        LogEntry e = tail.poll(Duration.ofSeconds(5));
        assertNotNull(e);
        assertEquals(i, e.position());
        assertEquals(1024 * 1024, e.value().length);
        assertEquals(i, e.value()[0]);
      }
    }
  }

  @Test
  public void aPublisherSignalsAFailedRead() throws Exception {
    AmuletLog log = client.log(fresh());
    CountDownLatch failed = new CountDownLatch(1);
    AtomicReference<Throwable> error = new AtomicReference<>();
    log.publisher(0)
        .subscribe(
            new Flow.Subscriber<LogEntry>() {
              @Override
              public void onSubscribe(Flow.Subscription s) {
                s.request(Long.MAX_VALUE);
              }

              @Override
              public void onNext(LogEntry item) {}

              @Override
              public void onError(Throwable t) {
                error.set(t);
                failed.countDown();
              }

              @Override
              public void onComplete() {}
            });
    assertTrue(failed.await(20, TimeUnit.SECONDS));
    assertEquals(AmuletException.Kind.NOT_FOUND, ((AmuletException) error.get()).kind());
  }
  /** Reads {@code count} entries from {@code tail}, each within 20 s, checking their positions. */
  static List<String> take(LogTail tail, int count) {
    List<String> out = new ArrayList<>();
    for (int i = 0; i < count; i++) {
      long at = tail.position();
      LogEntry e = tail.poll(Duration.ofSeconds(20));
      assertNotNull("entry " + at, e);
      assertEquals(at, e.position());
      out.add(s(e.value()));
    }
    return out;
  }
}
