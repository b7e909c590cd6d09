package io.amulet.client;

import static java.nio.charset.StandardCharsets.UTF_8;
import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertFalse;
import static org.junit.Assert.assertTrue;

import io.amulet.codec.KeyCodecs;
import io.amulet.codec.ValueCodecs;
import io.amulet.map.AmuletMap;
import io.amulet.testing.DevCluster;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.NavigableMap;
import java.util.TreeSet;
import java.util.UUID;
import org.junit.Test;

/**
 * The transactions, logs and eventual maps examples of
 * clients/java/README.md, verbatim but for the addresses and the names, so
 * that they compile and do what the README says.
 */
public class ReadmeExampleTest {
  /** The README's {@code transfer}. */
  static boolean transfer(
      AmuletClient client, String accountsMap, String from, String to, long amount) {
    return client.transact(tx -> {
      NavigableMap<String, Long> accounts =
          tx.map(accountsMap, KeyCodecs.strings(), ValueCodecs.longs());
      long balance = accounts.getOrDefault(from, 0L);
      if (balance < amount) {
        return false;                        // commits nothing (no writes)
      }
      accounts.put(from, balance - amount);  // buffered until the commit
      accounts.merge(to, amount, Long::sum);
      return true;
    });
  }

  /** The README's {@code follow}. */
  static List<String> follow(AmuletClient client, String events, String audit) {
    AmuletLog log = client.createLogIfAbsent(events);
    client.createLogIfAbsent(audit);
    long first = log.append("signed up".getBytes(UTF_8));  // the entry's position
    long[] paid = client.multiAppend(List.of(               // all or none, in one step
        Map.entry(events, "paid".getBytes(UTF_8)),
        Map.entry(audit, "paid".getBytes(UTF_8))));         // positions, in entry order
    LogEntries page = log.read(first, 100);                 // page.entries(), .first(), .end()
    List<String> seen = new ArrayList<>();
    try (LogTail tail = log.tail(first)) {                  // a stream from a replica
      for (LogEntry e : tail) {                             // blocks until entries come
        seen.add(e.position() + ": " + new String(e.value(), UTF_8));
        if (e.position() == paid[0]) {
          break;
        }
      }
    }
    log.trim(paid[0]);                                      // drops the entries below
    return seen;                                            // [0: signed up, 1: paid]
  }

  /** The README's {@code union}. */
  static byte[] union(List<byte[]> siblings, String... add) {  // a cart: "book,pen"
    TreeSet<String> items = new TreeSet<>(List.of(add));
    for (byte[] s : siblings) {
      if (s.length > 0) {
        items.addAll(List.of(new String(s, UTF_8).split(",")));
      }
    }
    return String.join(",", items).getBytes(UTF_8);
  }

  /** The README's {@code shop}. */
  static String shop(AmuletClient client, String carts) {
    EventualMap cart = client.createEventualMap(carts, 3);     // 3 replicas a key
    byte[] alice = "alice".getBytes(UTF_8);
    cart.put(alice, "book".getBytes(UTF_8), Context.EMPTY);    // no context: adds a value
    cart.put(alice, "pen".getBytes(UTF_8), Context.EMPTY);     // concurrent with it: a sibling
    Versioned read = cart.get(alice);                          // [book, pen] and their context
    cart.put(alice, union(read.values()), read.context());     // supersedes both: [book,pen]
    Versioned now = cart.update(alice, v -> union(v, "ink"));  // get, merge, put with its context
    return new String(now.values().get(0), UTF_8);             // "book,ink,pen"
  }

  @Test
  public void theReadmeEventualExampleMergesSiblings() {
    String carts = "carts-" + UUID.randomUUID().toString().substring(0, 8);
    try (AmuletClient client = AmuletClient.connect(DevCluster.get().addresses(), DevCluster.get().config())) {
      assertEquals("book,ink,pen", shop(client, carts));
      Versioned now = client.eventualMap(carts).get("alice".getBytes(UTF_8), 3);
      assertEquals(1, now.size());
      assertEquals("book,ink,pen", new String(now.values().get(0), UTF_8));
    }
  }

  @Test
  public void theReadmeLogExampleFollowsTheLog() {
    String suffix = UUID.randomUUID().toString().substring(0, 8);
    String events = "events-" + suffix;
    String audit = "audit-" + suffix;
    try (AmuletClient client = AmuletClient.connect(DevCluster.get().addresses(), DevCluster.get().config())) {
      assertEquals(List.of("0: signed up", "1: paid"), follow(client, events, audit));
      assertEquals(new LogBounds(1, 2), client.log(events).bounds());
      assertEquals(new LogBounds(0, 1), client.log(audit).bounds());
    }
  }

  @Test
  public void theReadmeTransferCompilesAndMovesMoney() {
    List<String> seeds = DevCluster.get().addresses();
    String name = "accounts-" + UUID.randomUUID().toString().substring(0, 8);
    try (AmuletClient client = AmuletClient.connect(seeds, DevCluster.get().config())) {
      client.createMapIfAbsent(name);
      AmuletMap<String, Long> accounts = client.map(name, KeyCodecs.strings(), ValueCodecs.longs());
      accounts.put("alice", 100L);

      assertTrue(transfer(client, name, "alice", "bob", 30));
      assertFalse(transfer(client, name, "alice", "bob", 500));

      // A read-only transaction: one snapshot, no commit sent, never a conflict.
      long total = client.transact(tx -> {
        long sum = 0;
        for (long balance : tx.map(name, KeyCodecs.strings(), ValueCodecs.longs()).values()) {
          sum += balance;
        }
        return sum;
      });

      assertEquals(Long.valueOf(70L), accounts.get("alice"));
      assertEquals(Long.valueOf(30L), accounts.get("bob"));
      assertEquals(100L, total);
    }
  }
}
