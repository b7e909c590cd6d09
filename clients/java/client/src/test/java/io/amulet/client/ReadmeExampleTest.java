package io.amulet.client;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertFalse;
import static org.junit.Assert.assertTrue;

import io.amulet.codec.KeyCodecs;
import io.amulet.codec.ValueCodecs;
import io.amulet.map.AmuletMap;
import io.amulet.testing.DevCluster;
import java.util.List;
import java.util.NavigableMap;
import java.util.UUID;
import org.junit.Test;

/**
 * The transactions example of clients/java/README.md, verbatim but for the
 * addresses and the map's name, so that it compiles and does what the README
 * says.
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

  @Test
  public void theReadmeTransferCompilesAndMovesMoney() {
    List<String> seeds = DevCluster.get().addresses();
    String name = "accounts-" + UUID.randomUUID().toString().substring(0, 8);
    try (AmuletClient client = AmuletClient.connect(seeds)) {
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
