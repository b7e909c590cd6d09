package io.amulet.client;

import static org.junit.Assert.assertArrayEquals;
import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertFalse;
import static org.junit.Assert.assertNotEquals;
import static org.junit.Assert.assertSame;
import static org.junit.Assert.assertThrows;
import static org.junit.Assert.assertTrue;

import amulet.v1.AmuletOuterClass;
import com.google.gson.JsonArray;
import com.google.protobuf.ByteString;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import org.junit.Test;

/** {@link Context} and {@link Versioned} without a cluster. */
public class ContextTest {
  private static byte[] b(int... xs) {
    byte[] out = new byte[xs.length];
    for (int i = 0; i < xs.length; i++) {
      out[i] = (byte) xs[i];
    }
    return out;
  }

  @Test
  public void bytesRoundTripAndAreCopied() {
    byte[] raw = b(0x01, 0xff, 0x00, 0x80);
    Context c = Context.fromBytes(raw);
    raw[0] = 9;
    assertArrayEquals(b(0x01, 0xff, 0x00, 0x80), c.toBytes());
    c.toBytes()[1] = 0;
    assertArrayEquals(b(0x01, 0xff, 0x00, 0x80), c.toBytes());
    assertEquals(c, Context.fromBytes(c.toBytes()));
    assertEquals(c.hashCode(), Context.fromBytes(c.toBytes()).hashCode());
    assertFalse(c.isEmpty());
  }

  @Test
  public void hexIsLowercaseAndRoundTrips() {
    Context c = Context.fromBytes(b(0x00, 0xab, 0x7f, 0x80, 0xff));
    assertEquals("00ab7f80ff", c.toString());
    assertEquals(c, Context.fromHex(c.toString()));
    assertEquals(c, Context.fromHex("00AB7F80FF"));
    assertThrows(IllegalArgumentException.class, () -> Context.fromHex("abc"));
    assertThrows(IllegalArgumentException.class, () -> Context.fromHex("zz"));
    assertThrows(NullPointerException.class, () -> Context.fromHex(null));
    assertThrows(NullPointerException.class, () -> Context.fromBytes(null));
  }

  @Test
  public void randomBytesRoundTrip() {
    Random random = new Random(7);
    for (int i = 0; i < 1000; i++) {
      byte[] raw = new byte[random.nextInt(64)];
      random.nextBytes(raw);
      Context c = Context.fromBytes(raw);
      assertArrayEquals(raw, c.toBytes());
      assertArrayEquals(raw, Context.fromHex(c.toString()).toBytes());
      assertArrayEquals(raw, c.toByteString().toByteArray());
      assertEquals(c, Context.of(ByteString.copyFrom(raw)));
    }
  }

  @Test
  public void emptyIsEmpty() {
    assertTrue(Context.EMPTY.isEmpty());
    assertEquals("", Context.EMPTY.toString());
    assertEquals(0, Context.EMPTY.toBytes().length);
    assertSame(Context.EMPTY, Context.fromBytes(new byte[0]));
    assertSame(Context.EMPTY, Context.fromHex(""));
    assertSame(Context.EMPTY, Context.of(ByteString.EMPTY));
    assertNotEquals(Context.EMPTY, Context.fromBytes(b(0)));
  }

  @Test
  public void versionedKeepsOrderAndCopies() {
    AmuletOuterClass.Versioned reply =
        AmuletOuterClass.Versioned.newBuilder()
            .addValues(ByteString.copyFrom(b(0x62)))
            .addValues(ByteString.copyFrom(b(0x61)))
            .addValues(ByteString.EMPTY)
            .setContext(ByteString.copyFrom(b(1, 2, 3)))
            .build();
    Versioned v = Versioned.of(reply);
    assertEquals(3, v.size());
    assertFalse(v.isEmpty());
    assertArrayEquals(b(0x62), v.values().get(0));
    assertArrayEquals(b(0x61), v.values().get(1));
    assertArrayEquals(b(), v.values().get(2));
    v.values().get(0)[0] = 0;
    assertArrayEquals(b(0x62), v.values().get(0));
    assertEquals(Context.fromBytes(b(1, 2, 3)), v.context());
    assertEquals("Versioned[values=[62, 61, ], context=010203]", v.toString());
    assertEquals(v, new Versioned(List.of(b(0x62), b(0x61), b()), Context.fromHex("010203")));
    assertNotEquals(v, new Versioned(List.of(b(0x61), b(0x62), b()), Context.fromHex("010203")));

    Versioned none = Versioned.of(AmuletOuterClass.Versioned.getDefaultInstance());
    assertTrue(none.isEmpty());
    assertSame(Context.EMPTY, none.context());
    assertThrows(NullPointerException.class, () -> new Versioned(List.of(b(1)), null));
  }

  @Test
  public void conformanceSortsValuesUnsigned() {
    List<byte[]> values = new ArrayList<>(List.of(b(0xff), b(0x01, 0x00), b(), b(0x01), b(0x80)));
    JsonArray sorted = ConformanceTest.sortedValues(new Versioned(values, Context.EMPTY));
    JsonArray want = new JsonArray();
    for (String s : new String[] {"", "01", "0100", "80", "ff"}) {
      want.add(s);
    }
    assertEquals(want, sorted);
  }
}
