package io.amulet.client;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.fail;

import com.google.gson.JsonArray;
import com.google.gson.JsonElement;
import com.google.gson.JsonNull;
import com.google.gson.JsonObject;
import com.google.gson.JsonParser;
import com.google.gson.JsonPrimitive;
import io.amulet.testing.DevCluster;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.AbstractMap.SimpleImmutableEntry;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collection;
import java.util.HashMap;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ThreadLocalRandom;
import org.junit.AfterClass;
import org.junit.Test;
import org.junit.runner.RunWith;
import org.junit.runners.Parameterized;

/**
 * Runs spec/conformance/scenarios.json, then transactions.json, then
 * logs.json, then eventual.json (format: spec/conformance/README.md) on the
 * byte-level API ({@link ByteMap}, {@link Transaction} for the txn_* ops:
 * one transaction per name, begun at its first op, {@link AmuletLog} with
 * {@link AmuletClient#multiAppend} for the log ops, and {@link EventualMap}
 * for the eventual_* ops) against a live local cluster, one JUnit test per
 * scenario, in file order.
 *
 * <p>The eventual_* ops give the reply's values in hex, sorted ascending
 * (unsigned byte order); {@code save} keeps the reply's {@link Context}
 * under a label of the scenario, and {@code context} is such a label or
 * {@code {"raw": HEX}} (bytes sent as they are; absent: {@link
 * Context#EMPTY}); {@code r} and {@code w} absent are 0 (a majority).
 *
 * <p>Error classes: {@link IllegalArgumentException} (from the server's
 * INVALID_ARGUMENT, or the client's own refusal of a bad map or log name)
 * is {@code invalid_argument}; {@link AmuletException} of kind NOT_FOUND,
 * ALREADY_EXISTS, RESOURCE_EXHAUSTED, FAILED_PRECONDITION, OUT_OF_RANGE,
 * CONFLICT, READ_VERSION_TOO_OLD is {@code not_found}, {@code
 * already_exists}, {@code resource_exhausted}, {@code failed_precondition},
 * {@code out_of_range}, {@code conflict}, {@code read_version_too_old};
 * anything else fails the step.
 *
 * <p>{@code merge_fields} sends the step's fields in file order (a {@link
 * LinkedHashMap}, which keeps a name given twice as two keys: byte arrays
 * compare by identity), so the server sees exactly the list of the file.
 *
 * <p>{@code join} ({@link AmuletClient#join}) gives null when it answers a
 * node id above 0 (the id depends on the view), as {@code leave} gives null.
 */
@RunWith(Parameterized.class)
public class ConformanceTest {
  private static final Set<String> STEP_KEYS =
      Set.of(
          "op", "map", "key", "value", "expected", "entries", "layout", "from", "to", "limit",
          "reverse", "nearest", "name", "txn", "fields", "log", "below", "max_entries", "count",
          "r", "w", "context", "save", "node", "peer_address", "client_address", "expect",
          "error");
  /** The scenario files, run in this order. */
  static final List<String> FILES =
      List.of("scenarios.json", "transactions.json", "logs.json", "eventual.json");
  private static final String RUN =
      String.format("%08x", ThreadLocalRandom.current().nextInt());
  private static AmuletClient client;

  private final String name;
  private final int index;
  private final JsonObject scenario;

  public ConformanceTest(String name, int index, JsonObject scenario) {
    this.name = name;
    this.index = index;
    this.scenario = scenario;
  }

  static Path file(String name) {
    return DevCluster.repo().resolve("spec/conformance").resolve(name);
  }

  @Parameterized.Parameters(name = "{0}")
  public static Collection<Object[]> scenarios() throws IOException {
    List<Object[]> out = new ArrayList<>();
    for (String name : FILES) {
      Path file = file(name);
      if (!Files.exists(file)) {
        throw new IllegalStateException("no " + file);
      }
      JsonObject root =
          JsonParser.parseString(new String(Files.readAllBytes(file), StandardCharsets.UTF_8))
              .getAsJsonObject();
      JsonArray scenarios = root.getAsJsonArray("scenarios");
      if (scenarios.size() == 0) {
        throw new IllegalStateException(name + " has no scenarios");
      }
      for (int i = 0; i < scenarios.size(); i++) {
        JsonObject s = scenarios.get(i).getAsJsonObject();
        // The index (in the map prefix) runs on across the files.
        out.add(new Object[] {s.get("name").getAsString(), out.size(), s});
      }
    }
    return out;
  }

  static synchronized AmuletClient client() {
    if (client == null) {
      // The scenarios check outcomes, not latency: a longer attempt than
      // the tests' default, so that a loaded machine (CI once took over
      // 4 s for an eventual write to an unknown map, which the node
      // answers after 1 s) does not turn a refusal into OUTCOME_UNKNOWN.
      DevCluster cluster = DevCluster.get();
      client =
          AmuletClient.connect(
              cluster.addresses(),
              cluster
                  .config()
                  .withAttemptTimeout(Duration.ofSeconds(10))
                  .withOperationTimeout(Duration.ofSeconds(30))
                  .withSnapshotLease(Duration.ofSeconds(60)));
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

  /** A snapshot opened by snapshot_open: its map and id. */
  private static final class Held {
    final ByteMap map;
    final Snapshot snapshot;

    Held(ByteMap map, Snapshot snapshot) {
      this.map = map;
      this.snapshot = snapshot;
    }
  }

  /** Contexts saved by the eventual ops' {@code save}, by label (this scenario's). */
  private final Map<String, Context> contexts = new HashMap<>();

  @Test
  public void scenario() {
    String prefix = "c" + RUN + "-" + index + "-";
    Map<String, Held> snapshots = new HashMap<>();
    Map<String, Transaction> txns = new HashMap<>();
    contexts.clear();
    try {
      runSteps(prefix, snapshots, txns);
    } finally {
      for (Transaction t : txns.values()) {
        t.abandon();
      }
    }
  }

  private void runSteps(String prefix, Map<String, Held> snapshots, Map<String, Transaction> txns) {
    JsonArray steps = scenario.getAsJsonArray("steps");
    for (int i = 0; i < steps.size(); i++) {
      JsonObject step = steps.get(i).getAsJsonObject();
      for (String k : step.keySet()) {
        if (!STEP_KEYS.contains(k)) {
          fail(name + " step " + i + ": unknown step key " + k + " (the runner is out of date)");
        }
      }
      boolean expectsError = step.has("error");
      if (expectsError == step.has("expect")) {
        fail(name + " step " + i + ": needs exactly one of expect and error");
      }
      String where = name + " step " + i + " (" + step + ")";
      JsonElement result;
      String error = null;
      try {
        result = run(step, prefix, snapshots, txns, where);
      } catch (IllegalArgumentException e) {
        result = null;
        error = "invalid_argument";
      } catch (AmuletException e) {
        result = null;
        switch (e.kind()) {
          case NOT_FOUND:
            error = "not_found";
            break;
          case ALREADY_EXISTS:
            error = "already_exists";
            break;
          case RESOURCE_EXHAUSTED:
            error = "resource_exhausted";
            break;
          case FAILED_PRECONDITION:
            error = "failed_precondition";
            break;
          case OUT_OF_RANGE:
            error = "out_of_range";
            break;
          case CONFLICT:
            error = "conflict";
            break;
          case READ_VERSION_TOO_OLD:
            error = "read_version_too_old";
            break;
          default:
            throw new AssertionError(where + ": unexpected error " + e, e);
        }
      }
      if (expectsError) {
        if (error == null) {
          fail(where + ": expected error " + step.get("error").getAsString() + ", got " + result);
        }
        assertEquals(where, step.get("error").getAsString(), error);
      } else {
        if (error != null) {
          fail(where + ": expected " + step.get("expect") + ", got error " + error);
        }
        assertEquals(where, normalize(step.get("expect")), normalize(result));
      }
    }
  }

  /** Numbers as longs, so 2 and 2.0 compare equal whatever the parser kept. */
  private static JsonElement normalize(JsonElement e) {
    if (e == null || e.isJsonNull()) {
      return JsonNull.INSTANCE;
    }
    if (e.isJsonPrimitive() && e.getAsJsonPrimitive().isNumber()) {
      return new JsonPrimitive(e.getAsBigDecimal().longValueExact());
    }
    if (e.isJsonArray()) {
      JsonArray out = new JsonArray();
      for (JsonElement x : e.getAsJsonArray()) {
        out.add(normalize(x));
      }
      return out;
    }
    if (e.isJsonObject()) {
      JsonObject out = new JsonObject();
      for (Map.Entry<String, JsonElement> x : e.getAsJsonObject().entrySet()) {
        out.add(x.getKey(), normalize(x.getValue()));
      }
      return out;
    }
    return e;
  }

  private static byte[] bytes(JsonElement e) {
    if (e.isJsonObject()) {
      byte[] unit = HexFormat.of().parseHex(e.getAsJsonObject().get("repeat").getAsString());
      int times = e.getAsJsonObject().get("times").getAsInt();
      byte[] out = new byte[unit.length * times];
      for (int i = 0; i < times; i++) {
        System.arraycopy(unit, 0, out, i * unit.length, unit.length);
      }
      return out;
    }
    return HexFormat.of().parseHex(e.getAsString());
  }

  private static JsonElement hex(byte[] b) {
    return b == null ? JsonNull.INSTANCE : new JsonPrimitive(HexFormat.of().formatHex(b));
  }

  private static JsonElement entry(Map.Entry<byte[], byte[]> e) {
    if (e == null) {
      return JsonNull.INSTANCE;
    }
    JsonArray a = new JsonArray();
    a.add(hex(e.getKey()));
    a.add(hex(e.getValue()));
    return a;
  }

  private static JsonArray entries(List<Map.Entry<byte[], byte[]>> entries) {
    JsonArray a = new JsonArray();
    for (Map.Entry<byte[], byte[]> e : entries) {
      a.add(entry(e));
    }
    return a;
  }

  private static JsonArray readAll(Snapshot s) {
    List<Map.Entry<byte[], byte[]>> all = new ArrayList<>();
    s.forEachRemaining(all::add);
    return entries(all);
  }

  /** The step's from/to bound (null: open): its key, inclusive. */
  private static Map.Entry<byte[], Boolean> bound(JsonObject step, String which) {
    if (!step.has(which) || step.get(which).isJsonNull()) {
      return null;
    }
    JsonObject b = step.getAsJsonObject(which);
    return new SimpleImmutableEntry<>(bytes(b.get("key")), b.get("inclusive").getAsBoolean());
  }

  private static JsonObject rangeJson(ByteMap.RangeResult r) {
    JsonObject out = new JsonObject();
    out.add("entries", entries(r.entries));
    out.addProperty("more", r.more);
    return out;
  }

  /** The step's log (a bad name fails the step as invalid_argument). */
  private static AmuletLog log(AmuletClient c, String prefix, JsonObject step) {
    return c.log(prefix + step.get("log").getAsString());
  }

  private static JsonObject boundsJson(LogBounds b) {
    JsonObject out = new JsonObject();
    out.addProperty("first", b.first());
    out.addProperty("end", b.end());
    return out;
  }

  private JsonElement run(
      JsonObject step,
      String prefix,
      Map<String, Held> snapshots,
      Map<String, Transaction> txns,
      String where) {
    String op = step.get("op").getAsString();
    AmuletClient c = client();
    if (op.startsWith("txn_")) {
      Transaction tx = txns.computeIfAbsent(step.get("txn").getAsString(), n -> c.transaction());
      return runTxn(op, tx, step, prefix, where);
    }
    if (op.startsWith("eventual_")) {
      return runEventual(op, c.eventualMap(prefix + step.get("map").getAsString()), step, where);
    }
    // The byte map needs a valid name: a bad one fails the step here.
    ByteMap m = step.has("map") ? c.byteMap(prefix + step.get("map").getAsString()) : null;
    switch (op) {
      case "create_map":
        {
          String mapName = prefix + step.get("map").getAsString();
          JsonObject layout = step.has("layout") ? step.getAsJsonObject("layout") : null;
          if (layout == null || layout.has("hash")) {
            c.createMap(mapName);
          } else if (layout.has("eventual")) {
            JsonObject e = layout.getAsJsonObject("eventual");
            for (String k : e.keySet()) {
              if (!k.equals("replicas") && !k.equals("vnodes")) {
                throw new AssertionError(where + ": unknown eventual layout key " + k);
              }
            }
            int vnodes = e.has("vnodes") ? e.get("vnodes").getAsInt() : 0;
            c.createEventualMap(mapName, e.get("replicas").getAsInt(), vnodes);
          } else {
            List<Integer> ids = c.partitionIds();
            List<byte[]> starts = new ArrayList<>();
            List<Integer> parts = new ArrayList<>();
            for (JsonElement r : layout.getAsJsonArray("range")) {
              starts.add(bytes(r.getAsJsonObject().get("start")));
              parts.add(ids.get(r.getAsJsonObject().get("partition").getAsInt()));
            }
            c.createRangeMap(mapName, starts, parts);
          }
          return JsonNull.INSTANCE;
        }
      case "drop_map":
        c.dropMap(prefix + step.get("map").getAsString());
        return JsonNull.INSTANCE;
      case "create_log":
        c.createLog(prefix + step.get("log").getAsString());
        return JsonNull.INSTANCE;
      case "leave":
        c.leave(step.get("node").getAsInt());
        return JsonNull.INSTANCE;
      case "join":
        {
          // The new node's id depends on the view: a join that succeeds is
          // null when its id is above 0, as a leave.
          int id =
              c.join(
                  step.get("peer_address").getAsString(), step.get("client_address").getAsString());
          if (Integer.toUnsignedLong(id) == 0) {
            throw new AssertionError(where + ": join answered node id 0");
          }
          return JsonNull.INSTANCE;
        }
      case "drop_log":
        c.dropLog(prefix + step.get("log").getAsString());
        return JsonNull.INSTANCE;
      case "append":
        return new JsonPrimitive(log(c, prefix, step).append(bytes(step.get("value"))));
      case "multi_append":
        {
          List<Map.Entry<String, byte[]>> list = new ArrayList<>();
          for (JsonElement e : step.getAsJsonArray("entries")) {
            JsonArray pair = e.getAsJsonArray();
            if (pair.size() != 2) {
              throw new AssertionError(where + ": not a [LOG, BYTES]: " + pair);
            }
            list.add(new SimpleImmutableEntry<>(prefix + pair.get(0).getAsString(), bytes(pair.get(1))));
          }
          JsonArray out = new JsonArray();
          for (long p : c.multiAppend(list)) {
            out.add(p);
          }
          return out;
        }
      case "read_log":
        {
          // Sent as they are: 0 and too many entries are the server's to refuse.
          LogEntries read =
              log(c, prefix, step)
                  .read(step.get("from").getAsLong(), step.get("max_entries").getAsInt());
          JsonObject out = new JsonObject();
          out.addProperty("from", read.from());
          JsonArray entries = new JsonArray();
          for (byte[] e : read.entries()) {
            entries.add(hex(e));
          }
          out.add("entries", entries);
          out.addProperty("first", read.first());
          out.addProperty("end", read.end());
          return out;
        }
      case "trim_log":
        return boundsJson(log(c, prefix, step).trim(step.get("below").getAsLong()));
      case "log_bounds":
        return boundsJson(log(c, prefix, step).bounds());
      case "tail_log":
        {
          // The tail (the TailLog stream) at from: count entries, at most 10 s each.
          int count = step.get("count").getAsInt();
          JsonArray out = new JsonArray();
          try (LogTail tail = log(c, prefix, step).tail(step.get("from").getAsLong())) {
            for (int i = 0; i < count; i++) {
              LogEntry e = tail.poll(java.time.Duration.ofSeconds(10));
              if (e == null) {
                throw new AssertionError(where + ": no entry " + i + " within 10 s");
              }
              JsonArray pair = new JsonArray();
              pair.add(e.position());
              pair.add(hex(e.value()));
              out.add(pair);
            }
          }
          return out;
        }
      case "get":
        return hex(m.get(bytes(step.get("key"))));
      case "contains_key":
        return new JsonPrimitive(m.containsKey(bytes(step.get("key"))));
      case "put":
        return hex(m.put(bytes(step.get("key")), bytes(step.get("value"))));
      case "remove":
        return hex(m.remove(bytes(step.get("key"))));
      case "put_if_absent":
        return hex(m.putIfAbsent(bytes(step.get("key")), bytes(step.get("value"))));
      case "replace":
        return hex(m.replace(bytes(step.get("key")), bytes(step.get("value"))));
      case "replace_if_equals":
        return new JsonPrimitive(
            m.replaceIfEquals(
                bytes(step.get("key")), bytes(step.get("expected")), bytes(step.get("value"))));
      case "remove_if_equals":
        return new JsonPrimitive(
            m.removeIfEquals(bytes(step.get("key")), bytes(step.get("expected"))));
      case "put_all":
        {
          List<Map.Entry<byte[], byte[]>> list = new ArrayList<>();
          for (JsonElement e : step.getAsJsonArray("entries")) {
            JsonArray kv = e.getAsJsonArray();
            list.add(new SimpleImmutableEntry<>(bytes(kv.get(0)), bytes(kv.get(1))));
          }
          m.putAll(list);
          return JsonNull.INSTANCE;
        }
      case "merge_fields":
        {
          Map<byte[], byte[]> fields = new LinkedHashMap<>();
          for (JsonElement e : step.getAsJsonArray("fields")) {
            JsonArray f = e.getAsJsonArray();
            if (f.size() != 2) {
              throw new AssertionError(where + ": not a [NAME, VALUE or null]: " + f);
            }
            fields.put(bytes(f.get(0)), f.get(1).isJsonNull() ? null : bytes(f.get(1)));
          }
          return new JsonPrimitive(m.mergeFields(bytes(step.get("key")), fields));
        }
      case "contains_value":
        return new JsonPrimitive(m.containsValue(bytes(step.get("value"))));
      case "size":
        return new JsonPrimitive(m.size());
      case "is_empty":
        return new JsonPrimitive(m.isEmpty());
      case "clear":
        m.clear();
        return JsonNull.INSTANCE;
      case "first_entry":
        return entry(m.firstEntry());
      case "last_entry":
        return entry(m.lastEntry());
      case "nearest_entry":
        {
          String n = step.get("nearest").getAsString();
          ByteMap.Nearest nearest;
          switch (n) {
            case "floor":
              nearest = ByteMap.Nearest.FLOOR;
              break;
            case "ceiling":
              nearest = ByteMap.Nearest.CEILING;
              break;
            case "higher":
              nearest = ByteMap.Nearest.HIGHER;
              break;
            case "lower":
              nearest = ByteMap.Nearest.LOWER;
              break;
            default:
              throw new AssertionError(where + ": unknown nearest " + n);
          }
          return entry(m.nearestEntry(bytes(step.get("key")), nearest));
        }
      case "range":
        {
          Map.Entry<byte[], Boolean> from = bound(step, "from");
          Map.Entry<byte[], Boolean> to = bound(step, "to");
          boolean reverse = step.has("reverse") && step.get("reverse").getAsBoolean();
          int limit = (int) step.get("limit").getAsLong();
          return rangeJson(
              m.range(
                  from == null ? null : from.getKey(),
                  from != null && from.getValue(),
                  to == null ? null : to.getKey(),
                  to != null && to.getValue(),
                  limit,
                  reverse));
        }
      case "snapshot":
        try (Snapshot s = m.snapshot()) {
          return readAll(s);
        }
      case "snapshot_open":
        {
          Snapshot s = m.snapshot();
          snapshots.put(step.get("name").getAsString(), new Held(m, s));
          return JsonNull.INSTANCE;
        }
      case "snapshot_read":
        {
          Held h = snapshots.get(step.get("name").getAsString());
          if (h == null) {
            throw new AssertionError(where + ": no snapshot opened under that name");
          }
          return readAll(h.snapshot.reread());
        }
      case "snapshot_release":
        {
          Held h = snapshots.get(step.get("name").getAsString());
          if (h == null) {
            throw new AssertionError(where + ": no snapshot opened under that name");
          }
          h.map.releaseSnapshot(h.snapshot.id());
          return JsonNull.INSTANCE;
        }
      default:
        throw new AssertionError(where + ": unknown op " + op + " (the runner is out of date)");
    }
  }

  /** An eventual_* op on {@code m}: the reply's values, sorted; saves its context if asked. */
  private JsonElement runEventual(String op, EventualMap m, JsonObject step, String where) {
    int r = step.has("r") ? step.get("r").getAsInt() : 0;
    int w = step.has("w") ? step.get("w").getAsInt() : 0;
    Context context = Context.EMPTY;
    if (step.has("context")) {
      JsonElement e = step.get("context");
      if (e.isJsonObject()) {
        context = Context.fromBytes(bytes(e.getAsJsonObject().get("raw")));
      } else {
        context = contexts.get(e.getAsString());
        if (context == null) {
          throw new AssertionError(where + ": no context saved under " + e.getAsString());
        }
      }
    }
    Versioned reply;
    switch (op) {
      case "eventual_get":
        reply = m.get(bytes(step.get("key")), r);
        break;
      case "eventual_put":
        reply = m.put(bytes(step.get("key")), bytes(step.get("value")), context, w);
        break;
      case "eventual_delete":
        reply = m.delete(bytes(step.get("key")), context, w);
        break;
      default:
        throw new AssertionError(where + ": unknown op " + op + " (the runner is out of date)");
    }
    if (step.has("save")) {
      contexts.put(step.get("save").getAsString(), reply.context());
    }
    return sortedValues(reply);
  }

  /** The values of a reply in hex, ascending in unsigned byte order. */
  static JsonArray sortedValues(Versioned v) {
    List<byte[]> values = v.values();
    values.sort(Arrays::compareUnsigned);
    JsonArray out = new JsonArray();
    for (byte[] b : values) {
      out.add(hex(b));
    }
    return out;
  }

  /** A txn_* op on {@code tx}. */
  private static JsonElement runTxn(
      String op, Transaction tx, JsonObject step, String prefix, String where) {
    String map = step.has("map") ? prefix + step.get("map").getAsString() : null;
    switch (op) {
      case "txn_get":
        return hex(tx.get(map, bytes(step.get("key"))));
      case "txn_put":
        tx.put(map, bytes(step.get("key")), bytes(step.get("value")));
        return JsonNull.INSTANCE;
      case "txn_delete":
        tx.delete(map, bytes(step.get("key")));
        return JsonNull.INSTANCE;
      case "txn_range":
        {
          Map.Entry<byte[], Boolean> from = bound(step, "from");
          Map.Entry<byte[], Boolean> to = bound(step, "to");
          boolean reverse = step.has("reverse") && step.get("reverse").getAsBoolean();
          int limit = (int) step.get("limit").getAsLong();
          return rangeJson(
              tx.range(
                  map,
                  from == null ? null : from.getKey(),
                  from != null && from.getValue(),
                  to == null ? null : to.getKey(),
                  to != null && to.getValue(),
                  limit,
                  reverse));
        }
      case "txn_commit":
        tx.commit();
        return JsonNull.INSTANCE;
      case "txn_abandon":
        tx.abandon();
        return JsonNull.INSTANCE;
      default:
        throw new AssertionError(where + ": unknown op " + op + " (the runner is out of date)");
    }
  }

}
