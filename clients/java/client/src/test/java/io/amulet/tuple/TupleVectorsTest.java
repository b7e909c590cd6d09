package io.amulet.tuple;

import static org.junit.Assert.assertArrayEquals;
import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertTrue;
import static org.junit.Assert.fail;

import com.google.gson.JsonArray;
import com.google.gson.JsonElement;
import com.google.gson.JsonObject;
import com.google.gson.JsonParser;
import java.io.IOException;
import java.math.BigInteger;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HexFormat;
import java.util.List;
import java.util.UUID;
import org.junit.BeforeClass;
import org.junit.Test;

/** Every entry of spec/tuple-vectors.json (vectors, decode_only, ordered, invalid). */
public class TupleVectorsTest {
  private static JsonObject spec;

  static Path repo() {
    String repo = System.getProperty("amulet.repo");
    if (repo != null) {
      return Paths.get(repo);
    }
    Path p = Paths.get("").toAbsolutePath();
    while (p != null && !Files.exists(p.resolve("spec/tuple-vectors.json"))) {
      p = p.getParent();
    }
    if (p == null) {
      throw new IllegalStateException("cannot find the repository (spec/tuple-vectors.json)");
    }
    return p;
  }

  @BeforeClass
  public static void load() throws IOException {
    String text =
        new String(
            Files.readAllBytes(repo().resolve("spec/tuple-vectors.json")), StandardCharsets.UTF_8);
    spec = JsonParser.parseString(text).getAsJsonObject();
  }

  private static byte[] hex(String s) {
    return HexFormat.of().parseHex(s);
  }

  /** The element a JSON ELEMENT describes. */
  static Object element(JsonObject e) {
    String type = e.get("type").getAsString();
    switch (type) {
      case "null":
        return null;
      case "bytes":
        return hex(e.get("hex").getAsString());
      case "string":
        return e.get("value").getAsString();
      case "tuple":
        return Tuple.fromList(elements(e.getAsJsonArray("value")));
      case "int":
        {
          BigInteger v = new BigInteger(e.get("value").getAsString());
          return v.bitLength() <= 63 ? (Object) v.longValue() : v;
        }
      case "float":
        return Float.intBitsToFloat((int) Long.parseLong(e.get("bits").getAsString(), 16));
      case "double":
        return Double.longBitsToDouble(Long.parseUnsignedLong(e.get("bits").getAsString(), 16));
      case "bool":
        return e.get("value").getAsBoolean();
      case "uuid":
        return UUID.fromString(e.get("value").getAsString());
      case "versionstamp":
        return Versionstamp.of(hex(e.get("hex").getAsString()));
      default:
        throw new IllegalArgumentException("unknown element type " + type);
    }
  }

  static List<Object> elements(JsonArray a) {
    List<Object> out = new ArrayList<>();
    for (JsonElement e : a) {
      out.add(element(e.getAsJsonObject()));
    }
    return out;
  }

  /** Element equality as the spec means it (bits for floats, bytes for arrays). */
  static void assertSameElements(String name, List<Object> expected, List<Object> actual) {
    assertEquals(name + ": size", expected.size(), actual.size());
    for (int i = 0; i < expected.size(); i++) {
      Object e = expected.get(i);
      Object a = actual.get(i);
      String where = name + "[" + i + "]";
      if (e == null) {
        assertEquals(where, null, a);
      } else if (e instanceof byte[]) {
        assertTrue(where + " is bytes", a instanceof byte[]);
        assertArrayEquals(where, (byte[]) e, (byte[]) a);
      } else if (e instanceof Float) {
        assertTrue(where + " is a float", a instanceof Float);
        assertEquals(where, Float.floatToRawIntBits((Float) e), Float.floatToRawIntBits((Float) a));
      } else if (e instanceof Double) {
        assertTrue(where + " is a double", a instanceof Double);
        assertEquals(
            where, Double.doubleToRawLongBits((Double) e), Double.doubleToRawLongBits((Double) a));
      } else if (e instanceof Tuple) {
        assertTrue(where + " is a tuple", a instanceof Tuple);
        assertSameElements(where, ((Tuple) e).elements(), ((Tuple) a).elements());
      } else {
        assertEquals(where, e, a);
      }
    }
  }

  @Test
  public void vectorsPackAndUnpack() {
    JsonArray vectors = spec.getAsJsonArray("vectors");
    assertTrue(vectors.size() >= 118);
    for (JsonElement v : vectors) {
      JsonObject o = v.getAsJsonObject();
      String name = o.get("name").getAsString();
      List<Object> elements = elements(o.getAsJsonArray("tuple"));
      byte[] packed = hex(o.get("packed_hex").getAsString());
      assertEquals(
          name, o.get("packed_hex").getAsString(), HexFormat.of().formatHex(Tuple.fromList(elements).pack()));
      assertSameElements(name, elements, Tuple.fromBytes(packed).elements());
    }
  }

  @Test
  public void decodeOnlyFormsUnpackAndRepackCanonically() {
    for (JsonElement v : spec.getAsJsonArray("decode_only")) {
      JsonObject o = v.getAsJsonObject();
      String name = o.get("name").getAsString();
      List<Object> elements = elements(o.getAsJsonArray("tuple"));
      Tuple decoded = Tuple.fromBytes(hex(o.get("hex").getAsString()));
      assertSameElements(name, elements, decoded.elements());
      assertEquals(
          name, o.get("canonical_hex").getAsString(), HexFormat.of().formatHex(decoded.pack()));
    }
  }

  @Test
  public void orderedTuplesSortByTheirBytes() {
    JsonArray ordered = spec.getAsJsonArray("ordered");
    assertTrue(ordered.size() >= 82);
    Tuple previous = null;
    for (JsonElement t : ordered) {
      Tuple tuple = Tuple.fromList(elements(t.getAsJsonArray()));
      if (previous != null) {
        assertTrue(previous + " < " + tuple, previous.compareTo(tuple) < 0);
        assertTrue(Arrays.compareUnsigned(previous.pack(), tuple.pack()) < 0);
      }
      previous = tuple;
    }
  }

  @Test
  public void invalidEncodingsAreRefused() {
    JsonArray invalid = spec.getAsJsonArray("invalid");
    assertTrue(invalid.size() >= 40);
    for (JsonElement v : invalid) {
      JsonObject o = v.getAsJsonObject();
      String name = o.get("name").getAsString();
      try {
        Tuple t = Tuple.fromBytes(hex(o.get("hex").getAsString()));
        fail(name + ": decoded to " + t);
      } catch (TupleException e) {
        assertEquals(
            name, o.get("error").getAsString(), e.kind().name().toLowerCase(java.util.Locale.ROOT));
      }
    }
  }

  @Test
  public void nestingOf64Decodes() {
    Tuple t = Tuple.of();
    for (int i = 0; i < 63; i++) {
      t = Tuple.of(t);
    }
    // 64 levels counting the nested tuple at depth 1 ... 64.
    Tuple top = Tuple.of(t);
    assertEquals(top, Tuple.fromBytes(top.pack()));
  }
}
