package io.amulet.ycsb;

import io.amulet.client.AmuletClient;
import io.amulet.client.AmuletException;
import io.amulet.client.ByteMap;
import io.amulet.client.ClientConfig;
import java.io.ByteArrayOutputStream;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.TreeMap;
import java.util.Vector;
import site.ycsb.ByteArrayByteIterator;
import site.ycsb.ByteIterator;
import site.ycsb.DB;
import site.ycsb.DBException;
import site.ycsb.Status;

/**
 * YCSB binding: a record is one entry of the map named like the YCSB table
 * (key: the YCSB key's UTF-8 bytes; value: the record's fields, sorted by
 * name, each as u32 length + name + u32 length + value). Reads are one get,
 * inserts one put, deletes one remove, scans one range read; an update reads
 * the record and writes the merged fields with a compare-and-set
 * (replaceIfEquals), retried if another writer got in between.
 *
 * <p>Properties: {@code amulet.addrs} (client API addresses, comma
 * separated; default 127.0.0.1:7101,127.0.0.1:7102,127.0.0.1:7103), {@code
 * amulet.create} (create the table's map if absent; default true). All the
 * DB instances of a YCSB run share one {@link AmuletClient}.
 */
public class AmuletYcsbClient extends DB {
  private static final Object LOCK = new Object();
  private static AmuletClient shared;
  private static int users;

  private AmuletClient client;
  private final Map<String, ByteMap> maps = new HashMap<>();

  @Override
  public void init() throws DBException {
    Properties p = getProperties();
    String addrs = p.getProperty("amulet.addrs", "127.0.0.1:7101,127.0.0.1:7102,127.0.0.1:7103");
    synchronized (LOCK) {
      if (shared == null) {
        try {
          shared =
              AmuletClient.connect(
                  Arrays.asList(addrs.split(",")),
                  ClientConfig.defaults().withOperationTimeout(Duration.ofSeconds(10)));
        } catch (RuntimeException e) {
          throw new DBException("cannot connect to " + addrs + ": " + e, e);
        }
        if (Boolean.parseBoolean(p.getProperty("amulet.create", "true"))) {
          String table = p.getProperty("table", "usertable");
          try {
            createTable(shared, table, p.getProperty("amulet.ranges", ""));
          } catch (RuntimeException e) {
            throw new DBException("cannot create the map " + table + ": " + e, e);
          }
        }
      }
      users++;
      client = shared;
    }
  }

  /**
   * Creates the table's map if absent: hash-partitioned, or, with
   * {@code amulet.ranges=k1,k2,...}, range-partitioned with partition 1
   * from the first key, partition 2 from {@code k1}, and so on, so that a
   * scan inside one range is a single-partition command (MRP-Store §3.5.1).
   */
  static void createTable(AmuletClient client, String table, String ranges) {
    try {
      if (ranges.isBlank()) {
        client.createMap(table);
        return;
      }
      java.util.List<byte[]> starts = new java.util.ArrayList<>();
      java.util.List<Integer> partitions = new java.util.ArrayList<>();
      starts.add(new byte[0]);
      partitions.add(1);
      for (String start : ranges.split(",")) {
        starts.add(start.trim().getBytes(java.nio.charset.StandardCharsets.UTF_8));
        partitions.add(partitions.size() + 1);
      }
      client.createRangeMap(table, starts, partitions);
    } catch (io.amulet.client.AmuletException e) {
      if (e.kind() != io.amulet.client.AmuletException.Kind.ALREADY_EXISTS) {
        throw e;
      }
    }
  }

  @Override
  public void cleanup() {
    synchronized (LOCK) {
      users--;
      if (users == 0 && shared != null) {
        shared.close();
        shared = null;
      }
    }
  }

  private ByteMap map(String table) {
    return maps.computeIfAbsent(table, client::byteMap);
  }

  private static byte[] key(String key) {
    return key.getBytes(StandardCharsets.UTF_8);
  }

  /** The record's bytes: fields sorted by name. */
  static byte[] encode(Map<String, byte[]> fields) {
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    for (Map.Entry<String, byte[]> f : new TreeMap<>(fields).entrySet()) {
      byte[] name = f.getKey().getBytes(StandardCharsets.UTF_8);
      out.writeBytes(ByteBuffer.allocate(4).putInt(name.length).array());
      out.writeBytes(name);
      out.writeBytes(ByteBuffer.allocate(4).putInt(f.getValue().length).array());
      out.writeBytes(f.getValue());
    }
    return out.toByteArray();
  }

  static Map<String, byte[]> decode(byte[] record) {
    Map<String, byte[]> fields = new TreeMap<>();
    ByteBuffer in = ByteBuffer.wrap(record);
    while (in.hasRemaining()) {
      byte[] name = new byte[in.getInt()];
      in.get(name);
      byte[] value = new byte[in.getInt()];
      in.get(value);
      fields.put(new String(name, StandardCharsets.UTF_8), value);
    }
    return fields;
  }

  private static Map<String, byte[]> bytesOf(Map<String, ByteIterator> values) {
    Map<String, byte[]> out = new TreeMap<>();
    for (Map.Entry<String, ByteIterator> e : values.entrySet()) {
      out.put(e.getKey(), e.getValue().toArray());
    }
    return out;
  }

  private static void copy(byte[] record, Set<String> fields, Map<String, ByteIterator> result) {
    for (Map.Entry<String, byte[]> f : decode(record).entrySet()) {
      if (fields == null || fields.contains(f.getKey())) {
        result.put(f.getKey(), new ByteArrayByteIterator(f.getValue()));
      }
    }
  }

  private static Status failed(RuntimeException e) {
    if (e instanceof AmuletException
        && ((AmuletException) e).kind() == AmuletException.Kind.UNAVAILABLE) {
      return Status.SERVICE_UNAVAILABLE;
    }
    return Status.ERROR;
  }

  @Override
  public Status read(
      String table, String key, Set<String> fields, Map<String, ByteIterator> result) {
    try {
      byte[] record = map(table).get(key(key));
      if (record == null) {
        return Status.NOT_FOUND;
      }
      copy(record, fields, result);
      return Status.OK;
    } catch (RuntimeException e) {
      return failed(e);
    }
  }

  @Override
  public Status scan(
      String table,
      String startkey,
      int recordcount,
      Set<String> fields,
      Vector<HashMap<String, ByteIterator>> result) {
    try {
      int limit = Math.max(1, Math.min(recordcount, 10_000));
      List<Map.Entry<byte[], byte[]>> entries =
          map(table).range(key(startkey), true, null, false, limit, false).entries;
      for (Map.Entry<byte[], byte[]> e : entries) {
        HashMap<String, ByteIterator> row = new HashMap<>();
        copy(e.getValue(), fields, row);
        result.add(row);
      }
      return Status.OK;
    } catch (RuntimeException e) {
      return failed(e);
    }
  }

  @Override
  public Status update(String table, String key, Map<String, ByteIterator> values) {
    try {
      ByteMap m = map(table);
      byte[] k = key(key);
      Map<String, byte[]> changes = bytesOf(values);
      for (int round = 0; round < 100; round++) {
        byte[] old = m.get(k);
        if (old == null) {
          return Status.NOT_FOUND;
        }
        Map<String, byte[]> merged = decode(old);
        merged.putAll(changes);
        if (m.replaceIfEquals(k, old, encode(merged))) {
          return Status.OK;
        }
      }
      return Status.ERROR;
    } catch (RuntimeException e) {
      return failed(e);
    }
  }

  @Override
  public Status insert(String table, String key, Map<String, ByteIterator> values) {
    try {
      map(table).put(key(key), encode(bytesOf(values)));
      return Status.OK;
    } catch (RuntimeException e) {
      return failed(e);
    }
  }

  @Override
  public Status delete(String table, String key) {
    try {
      return map(table).remove(key(key)) == null ? Status.NOT_FOUND : Status.OK;
    } catch (RuntimeException e) {
      return failed(e);
    }
  }
}
