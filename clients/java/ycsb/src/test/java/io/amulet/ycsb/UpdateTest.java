package io.amulet.ycsb;

import static org.junit.Assert.assertArrayEquals;
import static org.junit.Assert.assertEquals;

import io.amulet.client.AmuletClient;
import io.amulet.client.ByteMap;
import io.amulet.client.FieldRecord;
import io.amulet.testing.DevCluster;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.TreeMap;
import java.util.UUID;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.After;
import org.junit.Before;
import org.junit.Test;
import site.ycsb.ByteIterator;
import site.ycsb.DBException;
import site.ycsb.Status;
import site.ycsb.StringByteIterator;

/**
 * The binding's plain (non-transactional) update, one mergeFields, against
 * a live cluster (over TLS: {@code amulet.tlsdir}).
 */
public class UpdateTest {
  private String table;
  private Properties properties;
  private AmuletYcsbClient db;
  private AmuletClient client;
  private ByteMap raw;

  @Before
  public void start() throws DBException {
    table = "y-" + UUID.randomUUID().toString().substring(0, 8);
    properties = new Properties();
    properties.setProperty("amulet.addrs", String.join(",", DevCluster.get().addresses()));
    properties.setProperty("amulet.tlsdir", DevCluster.get().tlsDir().toString());
    properties.setProperty("table", table);
    db = connect();
    client = DevCluster.get().client();
    raw = client.byteMap(table);
  }

  /** A DB instance, as YCSB makes one per thread. */
  private AmuletYcsbClient connect() throws DBException {
    AmuletYcsbClient d = new AmuletYcsbClient();
    d.setProperties(properties);
    d.init();
    return d;
  }

  @After
  public void stop() {
    db.cleanup();
    client.close();
  }

  private static Map<String, ByteIterator> fields(String... namesAndValues) {
    Map<String, String> m = new LinkedHashMap<>();
    for (int i = 0; i < namesAndValues.length; i += 2) {
      m.put(namesAndValues[i], namesAndValues[i + 1]);
    }
    return StringByteIterator.getByteIteratorMap(m);
  }

  private static byte[] utf8(String s) {
    return s.getBytes(StandardCharsets.UTF_8);
  }

  private Map<String, String> read(String key) {
    Map<String, ByteIterator> got = new HashMap<>();
    assertEquals(Status.OK, db.read(table, key, null, got));
    return new TreeMap<>(StringByteIterator.getStringMap(got));
  }

  @Test
  public void anUpdateSetsItsFieldsAndKeepsTheOthers() {
    assertEquals(Status.OK, db.insert(table, "user1", fields("field0", "a", "field1", "b")));
    assertEquals(Status.OK, db.update(table, "user1", fields("field1", "B", "field2", "c")));
    assertEquals(Map.of("field0", "a", "field1", "B", "field2", "c"), read("user1"));
    // Stored as the field record mergeFields wrote.
    Map<byte[], byte[]> expected = new LinkedHashMap<>();
    expected.put(utf8("field0"), utf8("a"));
    expected.put(utf8("field1"), utf8("B"));
    expected.put(utf8("field2"), utf8("c"));
    assertArrayEquals(FieldRecord.encode(expected), raw.get(utf8("user1")));
    // An update of no fields changes nothing.
    assertEquals(Status.OK, db.update(table, "user1", fields()));
    assertEquals(Map.of("field0", "a", "field1", "B", "field2", "c"), read("user1"));
  }

  @Test
  public void anUpdateOfAMissingRecordIsNotFoundAndInsertsNothing() {
    assertEquals(Status.NOT_FOUND, db.update(table, "nobody", fields("field0", "x")));
    assertEquals(Status.NOT_FOUND, db.update(table, "nobody", fields()));
    assertEquals(Status.NOT_FOUND, db.read(table, "nobody", null, new HashMap<>()));
    assertEquals(null, raw.get(utf8("nobody")));
  }

  @Test
  public void anUpdateOfAValueThatIsNotARecordFailsAndKeepsIt() {
    raw.put(utf8("odd"), utf8("not a record"));
    assertEquals(Status.ERROR, db.update(table, "odd", fields("field0", "x")));
    assertArrayEquals(utf8("not a record"), raw.get(utf8("odd")));
  }

  /**
   * Threads (each with its DB instance, as in YCSB) updating their own
   * fields of one record at once: every thread's last write is there.
   */
  @Test
  public void concurrentUpdatesOfOtherFieldsAreAllKept() throws Exception {
    assertEquals(Status.OK, db.insert(table, "hot", fields("field0", "start")));
    int threads = 4;
    int rounds = 30;
    ExecutorService pool = Executors.newFixedThreadPool(threads);
    try {
      List<Future<?>> done = new ArrayList<>();
      for (int t = 0; t < threads; t++) {
        String field = "f" + t;
        done.add(
            pool.submit(
                () -> {
                  AmuletYcsbClient mine = connect();
                  try {
                    for (int i = 0; i < rounds; i++) {
                      assertEquals(
                          Status.OK, mine.update(table, "hot", fields(field, field + "-" + i)));
                    }
                  } finally {
                    mine.cleanup();
                  }
                  return null;
                }));
      }
      for (Future<?> f : done) {
        f.get(60, TimeUnit.SECONDS);
      }
    } finally {
      pool.shutdownNow();
    }
    Map<String, String> want = new TreeMap<>();
    want.put("field0", "start");
    for (int t = 0; t < threads; t++) {
      want.put("f" + t, "f" + t + "-" + (rounds - 1));
    }
    assertEquals(want, read("hot"));
  }
}
