package io.amulet.client;

import static org.junit.Assert.assertArrayEquals;
import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertFalse;
import static org.junit.Assert.assertNotNull;
import static org.junit.Assert.assertNull;
import static org.junit.Assert.assertTrue;
import static org.junit.Assert.fail;

import io.amulet.codec.KeyCodec;
import io.amulet.codec.KeyCodecs;
import io.amulet.codec.ValueCodecs;
import io.amulet.map.TransactionMap;
import io.amulet.testing.DevCluster;
import io.amulet.testing.SharedClusterTest;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.Test;

/**
 * Transactions on the live cluster: concurrent bank transfers with audits,
 * a read-only transaction's snapshot while a writer goes on, conflicts (at
 * the commit with the map and key, and early at a read), ended read
 * versions, commits across maps and partitions, navigation over the
 * transaction's own writes. Every loop is bounded in count and time.
 * Shared read versions: {@link ReadVersionsTest}.
 */
public class TransactionTest extends SharedClusterTest {
  static String fresh(String what) {
    return "jt-" + what + "-" + UUID.randomUUID().toString().substring(0, 8);
  }

  static byte[] b(String s) {
    return s.getBytes(StandardCharsets.UTF_8);
  }

  static byte[] num(long n) {
    return ByteBuffer.allocate(8).putLong(n).array();
  }

  static long num(byte[] b) {
    return ByteBuffer.wrap(b).getLong();
  }

  // ---- bank transfers ----------------------------------------------------------

  static final int THREADS = 8;
  static final int ACCOUNTS = 10;
  static final long OPENING = 1_000;
  static final long RUN_NANOS = TimeUnit.SECONDS.toNanos(4);
  static final int TRANSFERS_MAX_PER_THREAD = 5_000;

  static byte[] account(int i) {
    return b("acct-" + i);
  }

  /**
   * 8 threads move random amounts between 10 accounts (spread over the
   * partitions) for a few seconds through transact, while audits (read-only
   * transactions, half by gets and half through the typed view's range
   * reads) always find the opening total; conflicts happen and are run
   * again; the final balances add up, and match what the transfers did.
   */
  @Test
  public void concurrentTransfersKeepTheTotalAndConflictsAreRetried() throws Exception {
    String bank = fresh("bank");
    ByteMap accounts = client.createMap(bank);
    Set<Integer> partitions = new HashSet<>();
    for (int i = 0; i < ACCOUNTS; i++) {
      accounts.put(account(i), num(OPENING));
      partitions.add(client.routing().partitionOf(bank, account(i)));
    }
    assertTrue("the accounts span partitions: " + partitions, partitions.size() > 1);
    long total = OPENING * ACCOUNTS;

    AtomicLong bodies = new AtomicLong();
    AtomicLong committed = new AtomicLong();
    AtomicLong audits = new AtomicLong();
    AtomicLong[] net = new AtomicLong[ACCOUNTS];
    for (int i = 0; i < ACCOUNTS; i++) {
      net[i] = new AtomicLong();
    }
    ConcurrentLinkedQueue<String> wrong = new ConcurrentLinkedQueue<>();
    long until = System.nanoTime() + RUN_NANOS;
    ExecutorService pool = Executors.newFixedThreadPool(THREADS + 2);
    List<Future<?>> running = new ArrayList<>();
    try {
      for (int t = 0; t < THREADS; t++) {
        running.add(
            pool.submit(
                () -> {
                  ThreadLocalRandom r = ThreadLocalRandom.current();
                  for (int n = 0; n < TRANSFERS_MAX_PER_THREAD && System.nanoTime() < until; n++) {
                    int from = r.nextInt(ACCOUNTS);
                    int to = (from + 1 + r.nextInt(ACCOUNTS - 1)) % ACCOUNTS;
                    long amount = 1 + r.nextInt(50);
                    boolean moved =
                        client.transact(
                            tx -> {
                              bodies.incrementAndGet();
                              long a = num(tx.get(bank, account(from)));
                              long c = num(tx.get(bank, account(to)));
                              if (a < amount) {
                                return false;
                              }
                              tx.put(bank, account(from), num(a - amount));
                              tx.put(bank, account(to), num(c + amount));
                              return true;
                            });
                    committed.incrementAndGet();
                    if (moved) {
                      net[from].addAndGet(-amount);
                      net[to].addAndGet(amount);
                    }
                  }
                  return null;
                }));
      }
      for (int t = 0; t < 2; t++) {
        boolean typed = t == 1;
        running.add(
            pool.submit(
                () -> {
                  for (int n = 0; n < 2_000 && System.nanoTime() < until; n++) {
                    long sum =
                        client.transact(
                            tx -> {
                              long s = 0;
                              if (typed) {
                                TransactionMap<byte[], Long> m =
                                    tx.map(bank, KeyCodecs.raw(), ValueCodecs.longs());
                                for (long v : m.values()) {
                                  s += v;
                                }
                              } else {
                                for (int i = 0; i < ACCOUNTS; i++) {
                                  s += num(tx.get(bank, account(i)));
                                }
                              }
                              return s;
                            });
                    audits.incrementAndGet();
                    if (sum != total) {
                      wrong.add("audit " + (typed ? "(range reads)" : "(gets)") + " found " + sum);
                    }
                  }
                  return null;
                }));
      }
      for (Future<?> f : running) {
        f.get(RUN_NANOS / 1_000_000 + 60_000, TimeUnit.MILLISECONDS);
      }
    } finally {
      pool.shutdownNow();
      assertTrue(pool.awaitTermination(30, TimeUnit.SECONDS));
    }
    assertTrue("audits saw other totals: " + wrong, wrong.isEmpty());
    long sum = 0;
    for (int i = 0; i < ACCOUNTS; i++) {
      long balance = num(accounts.get(account(i)));
      assertEquals("account " + i, OPENING + net[i].get(), balance);
      assertTrue(balance >= 0);
      sum += balance;
    }
    assertEquals(total, sum);
    long retried = bodies.get() - committed.get();
    System.out.printf(
        "bank: %d transfers committed, %d bodies run (%d run again after a conflict), %d audits%n",
        committed.get(), bodies.get(), retried, audits.get());
    assertTrue("some transfers committed", committed.get() > THREADS);
    assertTrue("at least one audit", audits.get() > 0);
    assertTrue("at least one conflict was run again", retried >= 1);
  }

  // ---- snapshots -----------------------------------------------------------------

  /**
   * A read-only transaction reads one snapshot (by gets and range reads)
   * while a writer keeps changing every key together, and commits without
   * conflict.
   */
  @Test
  public void readOnlyTransactionSeesOneSnapshotWhileAWriterGoesOn() throws Exception {
    String name = fresh("snap");
    ByteMap m = client.createMap(name);
    int keys = 8;
    for (int i = 0; i < keys; i++) {
      m.put(b("k" + i), num(0));
    }
    AtomicBoolean stop = new AtomicBoolean();
    AtomicLong generation = new AtomicLong();
    ExecutorService writer = Executors.newSingleThreadExecutor();
    Future<?> writing =
        writer.submit(
            () -> {
              long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
              for (long g = 1; g <= 10_000 && !stop.get() && System.nanoTime() < deadline; g++) {
                long gen = g;
                client.transact(
                    tx -> {
                      for (int i = 0; i < keys; i++) {
                        tx.put(name, b("k" + i), num(gen));
                      }
                      return null;
                    });
                generation.set(g);
              }
              return null;
            });
    try {
      // Wait for the writer to be going.
      long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
      while (generation.get() < 2 && System.nanoTime() < deadline) {
        Thread.sleep(5);
      }
      assertTrue("the writer writes", generation.get() >= 2);
      Transaction tx = client.transaction();
      long seen = num(tx.get(name, b("k0")));
      for (int round = 0; round < 6; round++) {
        if (round == 5) {
          // Make sure the writer has committed past the snapshot (bounded).
          long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
          while (generation.get() <= seen && System.nanoTime() < until) {
            Thread.sleep(5);
          }
          assertTrue("the writer went on past " + seen, generation.get() > seen);
          assertTrue("the cluster moved on", num(m.get(b("k0"))) > seen);
        }
        Thread.sleep(60);
        // (A key is got from the cluster once; the range reads go every round.)
        for (int i = 0; i < keys; i++) {
          assertEquals("key " + i + " in round " + round, seen, num(tx.get(name, b("k" + i))));
        }
        ByteMap.RangeResult all = tx.range(name, null, false, null, false, 100, round % 2 == 1);
        assertEquals(keys, all.entries.size());
        for (Map.Entry<byte[], byte[]> e : all.entries) {
          assertEquals(seen, num(e.getValue()));
        }
        TransactionMap<String, Long> typed = tx.map(name, stringsRaw(), ValueCodecs.longs());
        for (long v : typed.values()) {
          assertEquals(seen, v);
        }
      }
      tx.commit(); // read-only: nothing sent, never a conflict
      assertTrue(tx.isFinished());
    } finally {
      stop.set(true);
      writing.get(60, TimeUnit.SECONDS);
      writer.shutdownNow();
    }
    // All keys were always written together.
    Transaction after = client.transaction();
    long last = num(after.get(name, b("k0")));
    for (int i = 1; i < keys; i++) {
      assertEquals(last, num(after.get(name, b("k" + i))));
    }
    after.abandon();
  }

  /** Keys that are UTF-8 strings as raw bytes (the test's keys were written as raw bytes). */
  static KeyCodec<String> stringsRaw() {
    return KeyCodecs.of(
        String.class,
        TransactionTest::b,
        bytes -> new String(bytes, StandardCharsets.UTF_8),
        Comparator.comparing(TransactionTest::b, Arrays::compareUnsigned));
  }

  // ---- conflicts --------------------------------------------------------------------

  @Test
  public void aConflictAtTheCommitNamesTheMapAndKeyAndAppliesNothing() {
    String name = fresh("conflict");
    ByteMap m = client.createMap(name);
    m.put(b("read"), b("1"));
    Transaction tx = client.transaction();
    assertArrayEquals(b("1"), tx.get(name, b("read")));
    m.put(b("read"), b("2"));
    tx.put(name, b("written"), b("x"));
    try {
      tx.commit();
      fail("committed over a changed read");
    } catch (AmuletException e) {
      assertEquals(AmuletException.Kind.CONFLICT, e.kind());
      assertTrue(e.isTransactionRetryable());
      assertEquals(name, e.conflictMap());
      assertArrayEquals(b("read"), e.conflictKey());
    }
    assertNull(m.get(b("written")));
    assertTrue(tx.isFinished());
    try {
      tx.get(name, b("read"));
      fail("read after the end");
    } catch (IllegalStateException expected) {
      // The transaction is over.
    }
  }

  /**
   * The read goes to a random replica past the read version; one that has
   * not executed the later put yet serves the snapshot without knowing of
   * it (the early answer is a "may"), and the commit's validation then
   * refuses. So each attempt checks both outcomes, and some attempt of a
   * bounded number must take the early one: a client that never did would
   * fail here.
   */
  @Test
  public void aReadOfAKeyWrittenSinceFailsAtOnceWhenTheTransactionWrites() {
    String name = fresh("fast");
    ByteMap m = client.createMap(name);
    m.put(b("k"), num(0));
    int early = 0;
    int attempts = 0;
    for (long n = 1; n <= 20 && early == 0; n++) {
      attempts++;
      Transaction tx = client.transaction();
      tx.put(name, b("mine"), b("x"));
      assertNull(tx.get(name, b("other"))); // takes the read version
      m.put(b("k"), num(n));
      try {
        // A replica behind the put serves the snapshot's value...
        assertArrayEquals(num(n - 1), tx.get(name, b("k")));
        try {
          tx.commit();
          fail("committed over a key written since its read version");
        } catch (AmuletException e) {
          assertEquals(AmuletException.Kind.CONFLICT, e.kind());
        }
      } catch (AmuletException e) {
        // ...one that executed it says so at once.
        assertEquals(AmuletException.Kind.CONFLICT, e.kind());
        assertEquals(name, e.conflictMap());
        early++;
        tx.abandon();
      }
      assertTrue(tx.isFinished());
      assertNull(m.get(b("mine")));
    }
    assertTrue("no read of " + attempts + " failed at once", early > 0);

    // Without writes the same read is served (the old value) and the commit is fine.
    Transaction ro = client.transaction();
    byte[] now = m.get(b("k"));
    assertArrayEquals(now, ro.get(name, b("k")));
    m.put(b("k"), b("later"));
    assertArrayEquals(now, ro.get(name, b("k")));
    ro.commit();
  }

  @Test
  public void transactRunsAConflictedBodyAgainAndPropagatesOtherErrors() {
    String name = fresh("again");
    ByteMap m = client.createMap(name);
    m.put(b("n"), num(0));
    AtomicLong runs = new AtomicLong();
    long result =
        client.transact(
            tx -> {
              long n = num(tx.get(name, b("n")));
              if (runs.incrementAndGet() == 1) {
                m.put(b("n"), num(100)); // another writer, between read and commit
              }
              tx.put(name, b("n"), num(n + 1));
              return n + 1;
            });
    assertEquals(2, runs.get());
    assertEquals(101, result);
    assertEquals(101, num(m.get(b("n"))));

    runs.set(0);
    try {
      client.transact(
          tx -> {
            runs.incrementAndGet();
            tx.put(name, b("n"), num(-1));
            throw new IllegalStateException("the body gave up");
          });
      fail("the body's exception was swallowed");
    } catch (IllegalStateException e) {
      assertEquals("the body gave up", e.getMessage());
    }
    assertEquals(1, runs.get());
    assertEquals(101, num(m.get(b("n"))));
    try {
      client.transact(tx -> tx.get("jt-no-such-map-" + UUID.randomUUID(), b("k")));
      fail("read a map that does not exist");
    } catch (AmuletException e) {
      assertEquals(AmuletException.Kind.NOT_FOUND, e.kind());
    }
  }

  @Test
  public void anEndedReadVersionIsTooOldAndTransactRunsAgain() throws Exception {
    String name = fresh("lease");
    client.createMap(name).put(b("k"), b("v"));
    try (AmuletClient shortLease =
        AmuletClient.connect(
            DevCluster.get().addresses(),
            DevCluster.get().config()
                .withOperationTimeout(Duration.ofSeconds(20))
                .withTransactionLease(Duration.ofMillis(300)))) {
      Transaction tx = shortLease.transaction();
      assertArrayEquals(b("v"), tx.get(name, b("k")));
      Thread.sleep(1_500);
      tx.put(name, b("k"), b("w"));
      try {
        tx.commit();
        fail("committed at an ended read version");
      } catch (AmuletException e) {
        assertEquals(AmuletException.Kind.READ_VERSION_TOO_OLD, e.kind());
        assertTrue(e.isTransactionRetryable());
      }
      assertArrayEquals(b("v"), client.byteMap(name).get(b("k")));

      Transaction reader = shortLease.transaction();
      reader.get(name, b("k"));
      Thread.sleep(1_500);
      // Leases run in replicated time: a replica ends the version when it
      // next executes a command, and a replica that has not yet may still
      // serve a read at it (the snapshot is the same). Order a command on
      // every partition; then reads fail as soon as they reach replicas
      // past it.
      client.createMap(fresh("tick"));
      AmuletException tooOld = null;
      for (int i = 0; i < 100 && tooOld == null; i++) {
        try {
          reader.get(name, b("other-" + i));
          Thread.sleep(20);
        } catch (AmuletException e) {
          tooOld = e;
        }
      }
      assertNotNull("no read at the ended read version failed", tooOld);
      assertEquals(AmuletException.Kind.READ_VERSION_TOO_OLD, tooOld.kind());
      reader.abandon();

      AtomicLong runs = new AtomicLong();
      shortLease.transact(
          t -> {
            t.get(name, b("k"));
            if (runs.incrementAndGet() == 1) {
              AmuletClient.sleepNanos(TimeUnit.MILLISECONDS.toNanos(1_500));
            }
            t.put(name, b("k"), b("w"));
            return null;
          });
      assertEquals(2, runs.get());
      assertArrayEquals(b("w"), client.byteMap(name).get(b("k")));
    }
  }

  // ---- across maps and partitions --------------------------------------------------------

  @Test
  public void aCommitAcrossMapsAndPartitionsAppliesAllOrNothing() {
    List<Integer> ids = client.partitionIds();
    String ranged = fresh("ranged");
    client.createRangeMap(
        ranged, List.of(new byte[0], b("g"), b("p")), List.of(ids.get(0), ids.get(1), ids.get(2)));
    String hashed = fresh("hashed");
    client.createMap(hashed);
    ByteMap r = client.byteMap(ranged);
    r.put(b("a"), b("0"));

    Transaction tx = client.transaction();
    assertArrayEquals(b("0"), tx.get(ranged, b("a")));
    assertEquals(1, tx.range(ranged, b("a"), true, b("z"), true, 10, false).entries.size());
    tx.put(ranged, b("a"), b("1"));
    tx.put(ranged, b("h"), b("1"));
    tx.put(ranged, b("q"), b("1"));
    tx.put(hashed, b("x"), b("1"));
    tx.delete(hashed, b("absent"));
    tx.commit();
    assertArrayEquals(b("1"), r.get(b("a")));
    assertArrayEquals(b("1"), r.get(b("h")));
    assertArrayEquals(b("1"), r.get(b("q")));
    assertArrayEquals(b("1"), client.byteMap(hashed).get(b("x")));

    // One partition's read changed: nothing applies in any of them.
    Transaction late = client.transaction();
    assertEquals(3, late.range(ranged, null, false, null, false, 10, false).entries.size());
    r.put(b("r"), b("phantom"));
    late.put(ranged, b("a"), b("2"));
    late.put(ranged, b("h"), b("2"));
    late.put(hashed, b("x"), b("2"));
    try {
      late.commit();
      fail("committed over a phantom");
    } catch (AmuletException e) {
      assertEquals(AmuletException.Kind.CONFLICT, e.kind());
      assertEquals(ranged, e.conflictMap());
      assertArrayEquals(b("r"), e.conflictKey());
    }
    assertArrayEquals(b("1"), r.get(b("a")));
    assertArrayEquals(b("1"), r.get(b("h")));
    assertArrayEquals(b("1"), client.byteMap(hashed).get(b("x")));
  }

  @Test
  public void navigationReadsTheTransactionsOwnWrites() {
    String name = fresh("nav");
    ByteMap m = client.createMap(name);
    for (String k : new String[] {"b", "d", "f"}) {
      m.put(b(k), b(k));
    }
    Transaction tx = client.transaction();
    tx.put(name, b("a"), b("A"));
    tx.delete(name, b("f"));
    tx.put(name, b("e"), b("E"));
    assertArrayEquals(b("a"), tx.firstEntry(name).getKey());
    assertArrayEquals(b("e"), tx.lastEntry(name).getKey());
    assertArrayEquals(b("e"), tx.floorEntry(name, b("z")).getKey());
    assertArrayEquals(b("d"), tx.lowerEntry(name, b("e")).getKey());
    assertArrayEquals(b("e"), tx.ceilingEntry(name, b("e")).getKey());
    assertNull(tx.higherEntry(name, b("e")));
    assertArrayEquals(b("b"), tx.higherEntry(name, b("a")).getKey());
    assertNotNull(tx.get(name, b("e")));
    assertNull(tx.get(name, b("f")));
    assertFalse(tx.containsKey(name, b("f")));
    ByteMap.RangeResult page = tx.range(name, null, false, null, false, 2, false);
    assertEquals(2, page.entries.size());
    assertTrue(page.more);
    tx.abandon();
    assertNull(m.get(b("a")));
    assertArrayEquals(b("f"), m.get(b("f")));
  }
}
