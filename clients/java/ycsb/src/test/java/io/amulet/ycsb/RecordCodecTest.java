package io.amulet.ycsb;

import static org.junit.Assert.assertArrayEquals;
import static org.junit.Assert.assertEquals;

import java.nio.charset.StandardCharsets;
import java.util.Map;
import java.util.TreeMap;
import org.junit.Test;

public class RecordCodecTest {
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
}
