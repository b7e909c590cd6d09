package io.amulet.ycsb;

import static org.junit.Assert.assertArrayEquals;
import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertThrows;

import io.amulet.client.FieldRecord;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import org.junit.Test;

public class RecordCodecTest {
  private static byte[] utf8(String s) {
    return s.getBytes(StandardCharsets.UTF_8);
  }

  @Test
  public void recordsRoundTrip() {
    Map<String, byte[]> fields = new TreeMap<>();
    fields.put("field1", "b".getBytes(StandardCharsets.UTF_8));
    fields.put("field0", new byte[] {0, 1, 2});
    fields.put("", new byte[0]);
    Map<String, byte[]> back = AmuletYcsbClient.decode(AmuletYcsbClient.encode(fields));
    assertEquals(fields.keySet(), back.keySet());
    for (String k : fields.keySet()) {
      assertArrayEquals(fields.get(k), back.get(k));
    }
  }

  /**
   * A record the binding writes is the field record mergeFields changes:
   * the same bytes as FieldRecord's, with names in the order of their UTF-8
   * bytes. U+E000 sorts below U+1F600 as UTF-8 (EE.. < F0..) but above it as
   * a Java string (the surrogate D83D comes first).
   */
  @Test
  public void recordsAreFieldRecordsByteForByte() {
    String privateUse = "\uE000";
    String emoji = "\uD83D\uDE00";
    Map<String, byte[]> fields = new LinkedHashMap<>();
    fields.put(emoji, utf8("smile"));
    fields.put("field0", utf8("v0"));
    fields.put(privateUse, utf8("p"));
    Map<byte[], byte[]> byBytes = new LinkedHashMap<>();
    for (Map.Entry<String, byte[]> f : fields.entrySet()) {
      byBytes.put(utf8(f.getKey()), f.getValue());
    }
    byte[] record = AmuletYcsbClient.encode(fields);
    assertArrayEquals(FieldRecord.encode(byBytes), record);
    List<String> names = new ArrayList<>();
    for (byte[] name : FieldRecord.decode(record).keySet()) {
      names.add(new String(name, StandardCharsets.UTF_8));
    }
    assertEquals(Arrays.asList("field0", privateUse, emoji), names);
    // YCSB's usual record: field0..field2 of a few bytes each.
    Map<String, byte[]> ycsb = new TreeMap<>();
    ycsb.put("field0", utf8("a"));
    ycsb.put("field1", utf8("bc"));
    assertEquals(
        "000000066669656c64300000000161" + "000000066669656c6431000000026263",
        HexFormat.of().formatHex(AmuletYcsbClient.encode(ycsb)));
  }

  @Test
  public void aValueThatIsNotARecordIsIllegalArgument() {
    assertThrows(
        IllegalArgumentException.class, () -> AmuletYcsbClient.decode(utf8("not a record")));
    byte[] cutShort = {0, 0, 0, 9, 'x'};
    assertThrows(IllegalArgumentException.class, () -> AmuletYcsbClient.decode(cutShort));
  }
}
