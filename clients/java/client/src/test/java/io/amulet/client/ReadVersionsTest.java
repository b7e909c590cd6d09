package io.amulet.client;

import static org.junit.Assert.assertArrayEquals;
import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertTrue;

import io.amulet.testing.DevCluster;
import io.amulet.testing.SharedClusterTest;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import org.junit.Test;

/**
 * Read versions shared by a client's transactions ({@link ReadVersions}) on
 * the live cluster: transactions that start together share a begin, the
 * versions they are done with are ended by the next begin, and sharing
 * keeps strictness (a transaction never uses a begin created before it
 * started). Every loop is bounded in count and time.
 */
public class ReadVersionsTest extends SharedClusterTest {
  static String fresh(String what) {
    return TransactionTest.fresh(what);
  }

  static byte[] b(String s) {
    return TransactionTest.b(s);
  }

  static byte[] num(long n) {
    return TransactionTest.num(n);
  }

  static long num(byte[] b) {
    return TransactionTest.num(b);
  }

  /**
   * Transactions that started before a begin was sent share it; the
   * versions they are done with are ended in the next begin.
   */
  @Test
  public void transactionsStartedTogetherShareAReadVersionEndedByTheNextBegin() throws Exception {
    String name = fresh("share");
    client.createMap(name).put(b("k"), b("v"));
    int n = 16;
    try (AmuletClient own = DevCluster.get().client()) {
      ReadVersions versions = own.readVersions();
      List<Transaction> txs = new ArrayList<>();
      for (int i = 0; i < n; i++) {
        txs.add(own.transaction());
      }
      CyclicBarrier together = new CyclicBarrier(n);
      ExecutorService pool = Executors.newFixedThreadPool(n);
      List<Future<Long>> read = new ArrayList<>();
      try {
        for (Transaction tx : txs) {
          read.add(
              pool.submit(
                  () -> {
                    together.await(20, TimeUnit.SECONDS);
                    assertArrayEquals(b("v"), tx.get(name, b("k")));
                    return tx.readVersion().orElseThrow();
                  }));
        }
        Set<Long> seen = new HashSet<>();
        for (Future<Long> f : read) {
          seen.add(f.get(30, TimeUnit.SECONDS));
        }
        long begins = versions.beginsSent();
        System.out.printf("%d transactions started together used %d begins%n", n, begins);
        assertEquals(begins, seen.size());
        assertTrue("the transactions shared begins (" + begins + " for " + n + ")", begins < n);
      } finally {
        pool.shutdownNow();
      }
      for (Transaction tx : txs) {
        tx.commit(); // read-only
      }
      assertEquals(versions.beginsSent(), versions.waitingToEnd());
      long ended = versions.versionsEnded();
      Transaction next = own.transaction();
      next.get(name, b("k"));
      next.abandon();
      assertEquals(0, ended);
      assertTrue("the next begin ended the old versions", versions.versionsEnded() > ended);
      assertEquals(1, versions.waitingToEnd());
    }
  }

  /**
   * Strict serializability with shared begins: a transaction started after
   * a write finished sees it, while other threads keep begins in flight.
   */
  @Test
  public void aTransactionStartedAfterAWriteSeesItWhileOthersShareBegins() throws Exception {
    String name = fresh("strict");
    ByteMap m = client.createMap(name);
    m.put(b("k"), num(0));
    AtomicBoolean stop = new AtomicBoolean();
    ExecutorService readers = Executors.newFixedThreadPool(4);
    List<Future<?>> busy = new ArrayList<>();
    try {
      for (int t = 0; t < 4; t++) {
        busy.add(
            readers.submit(
                () -> {
                  long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
                  for (int i = 0; i < 100_000 && !stop.get() && System.nanoTime() < deadline; i++) {
                    client.transact(tx -> tx.get(name, b("other")));
                  }
                  return null;
                }));
      }
      for (long i = 1; i <= 40; i++) {
        m.put(b("k"), num(i));
        Transaction tx = client.transaction();
        assertEquals(i, num(tx.get(name, b("k"))));
        tx.commit();
      }
    } finally {
      stop.set(true);
      for (Future<?> f : busy) {
        f.get(60, TimeUnit.SECONDS);
      }
      readers.shutdownNow();
    }
  }
}
