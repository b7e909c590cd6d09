package io.amulet.ycsb;

import io.amulet.client.AmuletClient;
import io.amulet.client.AmuletException;
import io.amulet.client.ByteMap;
import io.amulet.client.ClientConfig;
import io.amulet.client.FieldRecord;
import io.amulet.client.TlsFiles;
import io.amulet.client.Transaction;
import java.nio.charset.StandardCharsets;
import java.nio.file.Paths;
import java.time.Duration;
import java.util.Arrays;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.TreeMap;
import java.util.Vector;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import java.util.function.Function;
import site.ycsb.ByteArrayByteIterator;
import site.ycsb.ByteIterator;
import site.ycsb.DB;
import site.ycsb.DBException;
import site.ycsb.Status;
import site.ycsb.measurements.Measurements;

/**
 * YCSB binding: a record is one entry of the map named like the YCSB table
 * (key: the YCSB key's UTF-8 bytes; value: a {@link FieldRecord} of the
 * record's fields, names as UTF-8, sorted by their bytes, each as u32
 * length + name + u32 length + value). Reads are one get, inserts one put,
 * deletes one remove, scans one range read, and an update one {@link
 * ByteMap#mergeFields} of the fields it changes (docs/field-records.md).
 *
 * <p>Properties: {@code amulet.addrs} (client API addresses, comma
 * separated; default 127.0.0.1:7101,127.0.0.1:7102,127.0.0.1:7103), {@code
 * amulet.create} (create the table's map if absent; default true), {@code
 * amulet.tlsdir} (connect over TLS with that directory's {@code ca.pem},
 * {@code <user>.pem} and {@code <user>.key}, as {@code amulet dev} and
 * {@code amulet cert} write them; default {@code $AMULET_TLS_DIR}, and
 * plaintext when neither is set) and {@code amulet.user} (default {@code
 * $AMULET_USER}, else {@code admin}). All the DB instances of a YCSB run
 * share one {@link AmuletClient}.
 *
 * <p>YCSB+T (Dey et al., ICDE workshops 2014): with {@code
 * amulet.transactional=true} every operation is one transaction run by
 * {@link AmuletClient#transact} (again after a conflict): a read or a scan
 * a read-only one, an update a get and a put in one transaction instead of
 * a mergeFields (so that a read-modify-write's read and write are one
 * transaction, and amulet.validate's counter can be incremented), an insert
 * a blind put, a delete a get and a delete. Under {@link
 * TransactionalWorkload} a read-modify-write (F) is one transaction too: its
 * read and its update. Each transaction is measured as TX-COMMIT (from its
 * first attempt to its end), each attempt run again as TX-RETRY, each given
 * up as TX-FAILED, and the last thread's cleanup prints a summary line.
 * With {@code amulet.validate=true} too, each read-modify-write also
 * increments a decimal counter in the record's first field ({@code field0})
 * in its transaction, and the last thread's cleanup checks that the
 * counters of all records grew by the number of such transactions
 * committed: a lost update would show.
 */
public class AmuletYcsbClient extends DB {
  private static final Object LOCK = new Object();
  private static AmuletClient shared;
  private static int users;
  /** The whole run's transactions, over all threads (read at the last cleanup). */
  static final TransactionStats STATS = new TransactionStats();
  /** The validated table and the sum of its counters before the run (guarded by LOCK). */
  private static String validatedTable;
  private static String validatedField;
  private static long countersBefore;

  /** Records read per range read when summing the counters (about 1 KB each with YCSB's defaults). */
  private static final int COUNTER_PAGE = 500;
  /**
   * The pause before a read-modify-write whose first attempt conflicted
   * runs again, at most (jittered down to half): transact's first pause.
   */
  private static final long RETRY_PAUSE_NANOS = TimeUnit.MILLISECONDS.toNanos(10);

  /** The read-modify-write TransactionalWorkload is running on this thread, if any. */
  private static final ThreadLocal<ReadModifyWrite> RMW = new ThreadLocal<>();

  /**
   * One read-modify-write's state between its read and its update: YCSB
   * calls them one after the other, so the read's transaction stays open
   * for the update to write and commit.
   */
  private static final class ReadModifyWrite {
    /** The read ran (whether it succeeded or not). */
    boolean readDone;
    String table;
    String key;
    /** The read's transaction, until the update takes it; null if the read failed. */
    Transaction tx;
    /** What tx read (null: the record is absent). */
    byte[] record;
    long startNanos;
  }

  private AmuletClient client;
  private final Map<String, ByteMap> maps = new HashMap<>();
  private boolean transactional;
  private boolean validate;
  /** The record field holding the counter in validate mode (YCSB's first field). */
  private String counterField;

  @Override
  public void init() throws DBException {
    Properties p = getProperties();
    String addrs = p.getProperty("amulet.addrs", "127.0.0.1:7101,127.0.0.1:7102,127.0.0.1:7103");
    transactional = Boolean.parseBoolean(p.getProperty("amulet.transactional", "false"));
    validate = Boolean.parseBoolean(p.getProperty("amulet.validate", "false"));
    counterField = p.getProperty("fieldnameprefix", "field") + "0";
    String table = p.getProperty("table", "usertable");
    // Only a transactions phase has read-modify-writes to validate (-load sets it false).
    boolean running = Boolean.parseBoolean(p.getProperty("dotransactions", "true"));
    if (validate) {
      checkValidatable(p);
    }
    ClientConfig config = clientConfig(p, System::getenv);
    synchronized (LOCK) {
      if (shared == null) {
        STATS.reset();
        validatedTable = null;
        try {
          shared =
              AmuletClient.connect(Arrays.asList(addrs.split(",")), config);
        } catch (RuntimeException e) {
          throw new DBException("cannot connect to " + addrs + ": " + e, e);
        }
        if (Boolean.parseBoolean(p.getProperty("amulet.create", "true"))) {
          try {
            createTable(shared, table, p.getProperty("amulet.ranges", ""));
          } catch (RuntimeException e) {
            throw new DBException("cannot create the map " + table + ": " + e, e);
          }
        }
        if (validate && running) {
          // Under LOCK, before this first thread returns from init: the
          // other threads wait here, so no operation of the run has started.
          try {
            countersBefore = sumCounters(shared, table, counterField);
          } catch (RuntimeException e) {
            throw new DBException("cannot sum the counters of " + table + " before the run: " + e, e);
          }
          validatedTable = table;
          validatedField = counterField;
        }
      }
      users++;
      client = shared;
    }
  }

  /**
   * The client's configuration: over TLS with the files of amulet.tlsdir
   * (else $AMULET_TLS_DIR) for the user amulet.user (else $AMULET_USER,
   * else admin), in plaintext when no directory is given. A missing file or
   * a bad user is refused here, before connecting.
   */
  static ClientConfig clientConfig(Properties p, Function<String, String> env)
      throws DBException {
    ClientConfig config = ClientConfig.defaults().withOperationTimeout(Duration.ofSeconds(10));
    String dir = p.getProperty("amulet.tlsdir", orEmpty(env.apply(TlsFiles.TLS_DIR_ENV)));
    if (dir.isEmpty()) {
      return config.withPlaintext();
    }
    String user = p.getProperty("amulet.user", orEmpty(env.apply(TlsFiles.USER_ENV)));
    try {
      return config.withTlsDir(Paths.get(dir), user.isEmpty() ? TlsFiles.DEFAULT_USER : user);
    } catch (IllegalArgumentException e) {
      throw new DBException("TLS (amulet.tlsdir, else $AMULET_TLS_DIR): " + e.getMessage(), e);
    }
  }

  private static String orEmpty(String s) {
    return s == null ? "" : s;
  }

  /**
   * The validation counts read-modify-writes that ran in one transaction;
   * refuse the settings under which it would count nothing or something
   * else, rather than report a meaningless "ok".
   */
  private static void checkValidatable(Properties p) throws DBException {
    if (!Boolean.parseBoolean(p.getProperty("amulet.transactional", "false"))) {
      throw new DBException(
          "amulet.validate=true needs amulet.transactional=true (it checks the"
              + " read-modify-writes' transactions)");
    }
    String workload = p.getProperty("workload", "");
    boolean grouped;
    try {
      grouped = TransactionalWorkload.class.isAssignableFrom(Class.forName(workload));
    } catch (ClassNotFoundException e) {
      grouped = false;
    }
    if (!grouped) {
      throw new DBException(
          "amulet.validate=true needs workload="
              + TransactionalWorkload.class.getName()
              + " (got '"
              + workload
              + "'): with CoreWorkload a read-modify-write's read and update are two transactions");
    }
    if (Boolean.parseBoolean(p.getProperty("dataintegrity", "false"))) {
      throw new DBException(
          "amulet.validate=true replaces a field's value with a counter, so YCSB's"
              + " dataintegrity check would fail: use one or the other");
    }
  }

  /**
   * Marks {@code body}, one read-modify-write of {@link TransactionalWorkload},
   * so that in transactional mode its read and update run as one
   * transaction (and, with amulet.validate, increment the counter).
   */
  public static void readModifyWrite(Runnable body) {
    ReadModifyWrite rmw = new ReadModifyWrite();
    RMW.set(rmw);
    try {
      body.run();
    } finally {
      RMW.remove();
      // A read whose update never came (CoreWorkload always calls it):
      // nothing was written, so nothing is lost.
      if (rmw.tx != null) {
        rmw.tx.abandon();
      }
    }
  }

  /** The decimal counter in a field's value; 0 for anything else (YCSB's random bytes). */
  static long counterOf(byte[] value) {
    if (value == null || value.length == 0 || value.length > 18) {
      return 0;
    }
    long n = 0;
    for (byte b : value) {
      if (b < '0' || b > '9') {
        return 0;
      }
      n = n * 10 + (b - '0');
    }
    return n;
  }

  static byte[] counterBytes(long n) {
    return Long.toString(n).getBytes(StandardCharsets.UTF_8);
  }

  /**
   * The record after an update: its fields with {@code changes} applied,
   * and with {@code counterField} non-null its counter incremented (the
   * counter wins over a random value YCSB chose for the same field).
   */
  static Map<String, byte[]> updated(
      byte[] record, Map<String, byte[]> changes, String counterField) {
    Map<String, byte[]> merged = decode(record);
    long counter = counterField == null ? 0 : counterOf(merged.get(counterField));
    merged.putAll(changes);
    if (counterField != null) {
      merged.put(counterField, counterBytes(counter + 1));
    }
    return merged;
  }

  /** The sum of the counters of every record of {@code table}, read page by page. */
  static long sumCounters(AmuletClient client, String table, String field) {
    ByteMap m = client.byteMap(table);
    long sum = 0;
    byte[] from = null;
    while (true) {
      ByteMap.RangeResult page = m.range(from, false, null, false, COUNTER_PAGE, false);
      for (Map.Entry<byte[], byte[]> e : page.entries) {
        sum += counterOf(decode(e.getValue()).get(field));
      }
      if (!page.more || page.entries.isEmpty()) {
        return sum;
      }
      from = page.entries.get(page.entries.size() - 1).getKey();
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
        // Every thread has finished its operations (each cleans up after
        // its last one), so the counts and the counters are final.
        if (transactional) {
          System.out.println(STATS.summary());
        }
        if (validatedTable != null) {
          String line;
          try {
            long after = sumCounters(shared, validatedTable, validatedField);
            line =
                TransactionStats.check(
                        countersBefore, after, STATS.increments.get(), STATS.incrementsUnknown.get())
                    .line;
          } catch (RuntimeException e) {
            line = "validation: FAILED cannot sum the counters of " + validatedTable + ": " + e;
          }
          // stdout for scripts/ycsb-amulet, which fails on FAILED; YCSB's
          // exit status does not change.
          System.out.println(line);
          if (line.startsWith("validation: FAILED")) {
            System.err.println(line);
          }
          validatedTable = null;
        }
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

  /**
   * The record's bytes: the field record of the fields with their names
   * as UTF-8, so that mergeFields (which orders names by their bytes, not
   * as Java orders strings) keeps the same encoding.
   */
  static byte[] encode(Map<String, byte[]> fields) {
    return FieldRecord.encode(fieldsByBytes(fields));
  }

  /** The fields of a record; IllegalArgumentException if it is not one. */
  static Map<String, byte[]> decode(byte[] record) {
    Map<String, byte[]> fields = new TreeMap<>();
    for (Map.Entry<byte[], byte[]> f : FieldRecord.decode(record).entrySet()) {
      fields.put(new String(f.getKey(), StandardCharsets.UTF_8), f.getValue());
    }
    return fields;
  }

  /** Fields named by their UTF-8 bytes, in the order given. */
  private static Map<byte[], byte[]> fieldsByBytes(Map<String, byte[]> fields) {
    Map<byte[], byte[]> out = new LinkedHashMap<>();
    for (Map.Entry<String, byte[]> f : fields.entrySet()) {
      out.put(f.getKey().getBytes(StandardCharsets.UTF_8), f.getValue());
    }
    return out;
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

  // ---- transactional mode ----------------------------------------------------

  /**
   * Runs {@code body} with {@link AmuletClient#transact} (again after a
   * conflict) and counts it: every attempt after the first is a retry, its
   * time measured as TX-RETRY from its start to the next one's (transact's
   * pause included); the whole, from {@code startNanos}, as TX-COMMIT or
   * TX-FAILED. With {@code increments} the body increments a counter, for
   * the validation.
   */
  private Status transaction(
      long startNanos, boolean readOnly, boolean increments, Function<Transaction, Status> body) {
    long[] attemptStart = {0};
    int[] attempts = {0};
    try {
      Status s =
          client.transact(
              tx -> {
                long now = System.nanoTime();
                if (attempts[0]++ > 0) {
                  retried(now - attemptStart[0]);
                }
                attemptStart[0] = now;
                return body.apply(tx);
              });
      committed(startNanos, readOnly, increments && s == Status.OK);
      return s;
    } catch (RuntimeException e) {
      return gaveUp(startNanos, increments, e);
    }
  }

  private static int micros(long nanos) {
    return (int) Math.min(Integer.MAX_VALUE, nanos / 1000);
  }

  private static void committed(long startNanos, boolean readOnly, boolean incremented) {
    Measurements.getMeasurements().measure("TX-COMMIT", micros(System.nanoTime() - startNanos));
    STATS.committed.incrementAndGet();
    if (readOnly) {
      STATS.readOnly.incrementAndGet();
    }
    if (incremented) {
      STATS.increments.incrementAndGet();
    }
  }

  private static void retried(long attemptNanos) {
    Measurements.getMeasurements().measure("TX-RETRY", micros(attemptNanos));
    STATS.retries.incrementAndGet();
  }

  private static Status gaveUp(long startNanos, boolean increments, RuntimeException e) {
    Measurements.getMeasurements().measure("TX-FAILED", micros(System.nanoTime() - startNanos));
    STATS.failed.incrementAndGet();
    if (increments
        && e instanceof AmuletException
        && ((AmuletException) e).kind() == AmuletException.Kind.OUTCOME_UNKNOWN) {
      // The commit may have applied: the validation allows for it.
      STATS.incrementsUnknown.incrementAndGet();
    }
    return failed(e);
  }

  private Status txRead(String table, String key, Set<String> fields, Map<String, ByteIterator> result) {
    long start = System.nanoTime();
    ReadModifyWrite rmw = RMW.get();
    if (rmw != null && !rmw.readDone) {
      // F's read: its transaction stays open for the update that follows.
      rmw.readDone = true;
      rmw.table = table;
      rmw.key = key;
      rmw.startNanos = start;
      Transaction tx = client.transaction();
      byte[] record;
      try {
        record = tx.get(table, key(key));
      } catch (RuntimeException e) {
        // The update runs the whole read-modify-write in a transaction of its own.
        tx.abandon();
        return failed(e);
      }
      rmw.tx = tx;
      rmw.record = record;
      if (record == null) {
        return Status.NOT_FOUND;
      }
      copy(record, fields, result);
      return Status.OK;
    }
    return transaction(
        start,
        true,
        false,
        tx -> {
          // A read-only transaction runs again only if its read version ended.
          result.clear();
          byte[] record = tx.get(table, key(key));
          if (record == null) {
            return Status.NOT_FOUND;
          }
          copy(record, fields, result);
          return Status.OK;
        });
  }

  private Status txScan(
      String table,
      String startkey,
      int recordcount,
      Set<String> fields,
      Vector<HashMap<String, ByteIterator>> result) {
    int limit = Math.max(1, Math.min(recordcount, 10_000));
    return transaction(
        System.nanoTime(),
        true,
        false,
        tx -> {
          result.clear();
          for (Map.Entry<byte[], byte[]> e :
              tx.range(table, key(startkey), true, null, false, limit, false).entries) {
            HashMap<String, ByteIterator> row = new HashMap<>();
            copy(e.getValue(), fields, row);
            result.add(row);
          }
          return Status.OK;
        });
  }

  private Status txUpdate(String table, String key, Map<String, ByteIterator> values) {
    Map<String, byte[]> changes = bytesOf(values);
    byte[] k = key(key);
    ReadModifyWrite rmw = RMW.get();
    // Only a read-modify-write increments: F's only updates are its own.
    String counter = validate && rmw != null ? counterField : null;
    long start = System.nanoTime();
    if (rmw != null && rmw.tx != null && table.equals(rmw.table) && key.equals(rmw.key)) {
      // The first attempt: the transaction the read ran in, so that YCSB's
      // read and this write are one transaction.
      Transaction tx = rmw.tx;
      rmw.tx = null;
      start = rmw.startNanos;
      try {
        if (rmw.record == null) {
          tx.commit(); // nothing written: sends nothing
          committed(start, true, false);
          return Status.NOT_FOUND;
        }
        tx.put(table, k, encode(updated(rmw.record, changes, counter)));
        tx.commit();
        committed(start, false, counter != null);
        return Status.OK;
      } catch (AmuletException e) {
        tx.abandon();
        if (!e.isTransactionRetryable()) {
          return gaveUp(start, counter != null, e);
        }
      } catch (RuntimeException e) {
        tx.abandon();
        return gaveUp(start, counter != null, e);
      }
      // It conflicted. Read and write again, together, in transact's
      // transactions, after a jittered pause as transact's between attempts
      // (counted in the retry, as there). YCSB has the first attempt's read
      // already; a transaction run again redoes its reads, as any
      // application's would.
      LockSupport.parkNanos(
          RETRY_PAUSE_NANOS / 2 + ThreadLocalRandom.current().nextLong(RETRY_PAUSE_NANOS / 2 + 1));
      retried(System.nanoTime() - start);
    }
    String field = counter;
    return transaction(
        start,
        false,
        field != null,
        tx -> {
          byte[] old = tx.get(table, k);
          if (old == null) {
            return Status.NOT_FOUND;
          }
          tx.put(table, k, encode(updated(old, changes, field)));
          return Status.OK;
        });
  }

  private Status txInsert(String table, String key, Map<String, ByteIterator> values) {
    byte[] record = encode(bytesOf(values));
    // A blind write: without reads it never conflicts and needs no read version.
    return transaction(
        System.nanoTime(),
        false,
        false,
        tx -> {
          tx.put(table, key(key), record);
          return Status.OK;
        });
  }

  private Status txDelete(String table, String key) {
    return transaction(
        System.nanoTime(),
        false,
        false,
        tx -> {
          if (tx.get(table, key(key)) == null) {
            return Status.NOT_FOUND;
          }
          tx.delete(table, key(key));
          return Status.OK;
        });
  }

  // ---- the operations --------------------------------------------------------

  @Override
  public Status read(
      String table, String key, Set<String> fields, Map<String, ByteIterator> result) {
    if (transactional) {
      return txRead(table, key, fields, result);
    }
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
    if (transactional) {
      return txScan(table, startkey, recordcount, fields, result);
    }
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
    if (transactional) {
      return txUpdate(table, key, values);
    }
    try {
      ByteMap m = map(table);
      byte[] k = key(key);
      if (values.isEmpty()) {
        // Nothing to change, and mergeFields refuses no fields: an update
        // of nothing only tells whether the record is there.
        return m.containsKey(k) ? Status.OK : Status.NOT_FOUND;
      }
      // One ordered command sets the fields and keeps the others, where a
      // read and a compare-and-set took two round trips (and a retry when
      // another writer came between). A missing record stays missing.
      return m.mergeFields(k, fieldsByBytes(bytesOf(values))) ? Status.OK : Status.NOT_FOUND;
    } catch (RuntimeException e) {
      return failed(e);
    }
  }

  @Override
  public Status insert(String table, String key, Map<String, ByteIterator> values) {
    if (transactional) {
      return txInsert(table, key, values);
    }
    try {
      map(table).put(key(key), encode(bytesOf(values)));
      return Status.OK;
    } catch (RuntimeException e) {
      return failed(e);
    }
  }

  @Override
  public Status delete(String table, String key) {
    if (transactional) {
      return txDelete(table, key);
    }
    try {
      return map(table).remove(key(key)) == null ? Status.NOT_FOUND : Status.OK;
    } catch (RuntimeException e) {
      return failed(e);
    }
  }
}
