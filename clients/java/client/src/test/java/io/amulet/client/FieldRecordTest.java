package io.amulet.client;

import static org.junit.Assert.assertArrayEquals;
import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertThrows;
import static org.junit.Assert.assertTrue;
import static org.junit.Assert.fail;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.NavigableMap;
import java.util.Random;
import java.util.TreeMap;
import org.junit.Test;

/** {@link FieldRecord} without a cluster: docs/field-records.md's encoding, decode's totality. */
public class FieldRecordTest {
  private static byte[] b(String s) {
    return s.getBytes(StandardCharsets.UTF_8);
  }

  private static byte[] hex(String h) {
    return HexFormat.of().parseHex(h);
  }

  private static List<String> names(NavigableMap<byte[], byte[]> fields) {
    List<String> out = new ArrayList<>();
    for (byte[] name : fields.keySet()) {
      out.add(HexFormat.of().formatHex(name));
    }
    return out;
  }

  @Test
  public void encodesTheBytesOfTheSharedScenario() {
    // spec/conformance/scenarios.json, merge_fields: {a: 1, b: 2}.
    Map<byte[], byte[]> fields = new LinkedHashMap<>();
    fields.put(b("b"), b("2"));
    fields.put(b("a"), b("1"));
    assertEquals(
        "0000000161000000013100000001620000000132",
        HexFormat.of().formatHex(FieldRecord.encode(fields)));
    assertArrayEquals(new byte[0], FieldRecord.encode(Map.of()));
    assertEquals(0, FieldRecord.decode(new byte[0]).size());
    // An empty name and an empty value are ordinary.
    byte[] emptyField = FieldRecord.encode(Map.of(new byte[0], new byte[0]));
    assertEquals("0000000000000000", HexFormat.of().formatHex(emptyField));
  }

  @Test
  public void namesSortAsUnsignedBytes() {
    Map<byte[], byte[]> fields = new HashMap<>();
    fields.put(new byte[] {(byte) 0x80}, b("high"));
    fields.put(new byte[] {0x7f}, b("low"));
    fields.put(new byte[] {0x7f, 0x00}, b("longer"));
    fields.put(new byte[0], b("empty"));
    byte[] record = FieldRecord.encode(fields);
    NavigableMap<byte[], byte[]> back = FieldRecord.decode(record);
    assertEquals(Arrays.asList("", "7f", "7f00", "80"), names(back));
    assertArrayEquals(b("high"), back.get(new byte[] {(byte) 0x80}));
    assertArrayEquals(b("empty"), back.get(new byte[0]));
    // The record starts with the empty name: its length, then the value's.
    assertEquals("0000000000000005", HexFormat.of().formatHex(record, 0, 8));
  }

  @Test
  public void randomRecordsRoundTrip() {
    Random random = new Random(42);
    for (int round = 0; round < 500; round++) {
      Map<byte[], byte[]> fields = new HashMap<>();
      NavigableMap<byte[], byte[]> model = new TreeMap<>(Arrays::compareUnsigned);
      for (int i = random.nextInt(6); i > 0; i--) {
        byte[] name = new byte[random.nextInt(4)];
        random.nextBytes(name);
        byte[] value = new byte[random.nextInt(6)];
        random.nextBytes(value);
        if (!model.containsKey(name)) {
          model.put(name, value);
          fields.put(name, value);
        }
      }
      NavigableMap<byte[], byte[]> back = FieldRecord.decode(FieldRecord.encode(fields));
      assertEquals(names(model), names(back));
      for (Map.Entry<byte[], byte[]> e : model.entrySet()) {
        assertArrayEquals(e.getValue(), back.get(e.getKey()));
      }
    }
  }

  @Test
  public void encodeRefusesNullsAndNamesOfEqualBytes() {
    Map<byte[], byte[]> twice = new LinkedHashMap<>();
    twice.put(b("a"), b("1"));
    twice.put(b("a"), b("2")); // another array: a second key
    assertThrows(IllegalArgumentException.class, () -> FieldRecord.encode(twice));
    Map<byte[], byte[]> nullValue = new LinkedHashMap<>();
    nullValue.put(b("a"), null);
    assertThrows(NullPointerException.class, () -> FieldRecord.encode(nullValue));
    Map<byte[], byte[]> nullName = new HashMap<>();
    nullName.put(null, b("1"));
    assertThrows(NullPointerException.class, () -> FieldRecord.encode(nullName));
  }

  @Test
  public void whatIsNotARecordIsIllegalArgument() {
    String one = "000000016100000001" + "31"; // {a: 1}
    String[] bad = {
      "00", // a name length cut short
      "000000", // three bytes of it
      "00000001", // a name of 1 byte, none left
      "0000000161", // no value length
      "00000001610000", // value length cut short
      "000000016100000002" + "31", // a value running past the end
      one + one, // a name twice
      "000000016200000001" + "32" + one, // names descending
      one + "00", // trailing garbage
      "ffffffff", // a length of 2^32 - 1
      "80000000" + "61", // a length of 2^31: negative as a signed int
      "00000001617fffffff" + "31", // a value length far past the end
      "6e6f742061207265636f7264", // "not a record"
    };
    for (String h : bad) {
      try {
        FieldRecord.decode(hex(h));
        fail("decoded " + h);
      } catch (IllegalArgumentException expected) {
        assertTrue(expected.getMessage(), expected.getMessage().startsWith("not a field record"));
      }
    }
  }

  @Test
  public void decodeIsTotal() {
    // Every truncation and every one-byte change of a valid record, and
    // random bytes: a record or IllegalArgumentException, nothing else.
    Map<byte[], byte[]> fields = new LinkedHashMap<>();
    fields.put(b("name"), b("value"));
    fields.put(b("n2"), new byte[0]);
    fields.put(new byte[0], b("x"));
    byte[] record = FieldRecord.encode(fields);
    List<byte[]> inputs = new ArrayList<>();
    for (int n = 0; n <= record.length; n++) {
      inputs.add(Arrays.copyOf(record, n));
    }
    for (int i = 0; i < record.length; i++) {
      for (int v : new int[] {0x00, 0x01, 0x7f, 0x80, 0xff}) {
        byte[] changed = record.clone();
        changed[i] = (byte) v;
        inputs.add(changed);
      }
    }
    Random random = new Random(7);
    for (int i = 0; i < 2000; i++) {
      byte[] noise = new byte[random.nextInt(24)];
      random.nextBytes(noise);
      // Small lengths, so that some of the noise parses.
      for (int j = 0; j + 3 < noise.length; j += 5) {
        noise[j] = 0;
        noise[j + 1] = 0;
        noise[j + 2] = 0;
        noise[j + 3] = (byte) random.nextInt(4);
      }
      inputs.add(noise);
    }
    int decoded = 0;
    for (byte[] input : inputs) {
      NavigableMap<byte[], byte[]> got;
      try {
        got = FieldRecord.decode(input);
      } catch (IllegalArgumentException notARecord) {
        continue;
      }
      decoded++;
      // What decodes is a record: encoding it gives the input back.
      assertArrayEquals(HexFormat.of().formatHex(input), input, FieldRecord.encode(got));
    }
    assertTrue("decoded " + decoded, decoded > 10);
  }
}
