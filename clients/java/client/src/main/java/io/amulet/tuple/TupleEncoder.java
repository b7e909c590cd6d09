package io.amulet.tuple;

import java.io.ByteArrayOutputStream;
import java.math.BigInteger;
import java.nio.ByteBuffer;
import java.nio.CharBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.util.UUID;

/**
 * Packs elements into FoundationDB's tuple encoding (design/tuple.md), byte
 * for byte as crates/amulet-tuple/src/encode.rs does.
 */
final class TupleEncoder {
  static final int NULL = 0x00;
  static final int BYTES = 0x01;
  static final int STRING = 0x02;
  static final int NESTED = 0x05;
  static final int NEG_BIG_INT = 0x0B;
  static final int INT_ZERO = 0x14;
  static final int POS_BIG_INT = 0x1D;
  static final int FLOAT = 0x20;
  static final int DOUBLE = 0x21;
  static final int FALSE = 0x26;
  static final int TRUE = 0x27;
  static final int UUID_CODE = 0x30;
  static final int VERSIONSTAMP = 0x33;
  static final int ESCAPE = 0xFF;
  /** Longest big-integer magnitude: its length must fit the length byte. */
  static final int BIG_INT_MAX_BYTES = 255;

  private static final BigInteger LONG_MIN = BigInteger.valueOf(Long.MIN_VALUE);
  private static final BigInteger LONG_MAX = BigInteger.valueOf(Long.MAX_VALUE);

  private final ByteArrayOutputStream out = new ByteArrayOutputStream();

  byte[] toByteArray() {
    return out.toByteArray();
  }

  void element(Object element, boolean nested) {
    if (element == null) {
      out.write(NULL);
      if (nested) {
        out.write(ESCAPE);
      }
    } else if (element instanceof byte[]) {
      escaped(BYTES, (byte[]) element);
    } else if (element instanceof String) {
      escaped(STRING, utf8((String) element));
    } else if (element instanceof Tuple) {
      out.write(NESTED);
      for (Object item : ((Tuple) element).elements()) {
        element(item, true);
      }
      out.write(0x00);
    } else if (element instanceof Long
        || element instanceof Integer
        || element instanceof Short
        || element instanceof Byte) {
      long v = ((Number) element).longValue();
      // -Long.MIN_VALUE wraps to itself, which read unsigned is 2^63: right.
      smallInt(v < 0, v < 0 ? -v : v);
    } else if (element instanceof BigInteger) {
      bigInt((BigInteger) element);
    } else if (element instanceof Float) {
      out.write(FLOAT);
      int bits = Float.floatToRawIntBits((Float) element);
      writeBigEndian(floatKey(bits), 4);
    } else if (element instanceof Double) {
      out.write(DOUBLE);
      long bits = Double.doubleToRawLongBits((Double) element);
      writeBigEndian(doubleKey(bits), 8);
    } else if (element instanceof Boolean) {
      out.write((Boolean) element ? TRUE : FALSE);
    } else if (element instanceof UUID) {
      UUID u = (UUID) element;
      out.write(UUID_CODE);
      writeBigEndian(u.getMostSignificantBits(), 8);
      writeBigEndian(u.getLeastSignificantBits(), 8);
    } else if (element instanceof Versionstamp) {
      out.write(VERSIONSTAMP);
      out.writeBytes(((Versionstamp) element).raw());
    } else {
      throw new TupleException(
          TupleException.Kind.UNENCODABLE,
          -1,
          "no tuple encoding for " + element.getClass().getName());
    }
  }

  /** Sign-adjusted bits: unsigned, they sort like IEEE 754 totalOrder. */
  static long floatKey(int bits) {
    long key = bits < 0 ? ~bits : bits ^ Integer.MIN_VALUE;
    return key & 0xFFFF_FFFFL;
  }

  static long doubleKey(long bits) {
    return bits < 0 ? ~bits : bits ^ Long.MIN_VALUE;
  }

  static byte[] utf8(String text) {
    try {
      // REPORT: a lone surrogate has no UTF-8 form, and silently writing
      // '?' would make two different keys equal.
      ByteBuffer b =
          StandardCharsets.UTF_8
              .newEncoder()
              .onMalformedInput(CodingErrorAction.REPORT)
              .onUnmappableCharacter(CodingErrorAction.REPORT)
              .encode(CharBuffer.wrap(text));
      byte[] bytes = new byte[b.remaining()];
      b.get(bytes);
      return bytes;
    } catch (CharacterCodingException e) {
      throw new TupleException(
          TupleException.Kind.UNENCODABLE, -1, "string is not valid Unicode (lone surrogate)");
    }
  }

  private void escaped(int code, byte[] bytes) {
    out.write(code);
    for (byte b : bytes) {
      out.write(b);
      if (b == 0) {
        out.write(ESCAPE);
      }
    }
    out.write(0x00);
  }

  /** An integer of at most 8 magnitude bytes; `magnitude` read unsigned. */
  private void smallInt(boolean negative, long magnitude) {
    int n = 8 - Long.numberOfLeadingZeros(magnitude) / 8;
    if (negative && n > 0) {
      out.write(INT_ZERO - n);
      writeBigEndian(~magnitude, n);
    } else {
      out.write(INT_ZERO + n);
      writeBigEndian(magnitude, n);
    }
  }

  private void bigInt(BigInteger value) {
    if (value.compareTo(LONG_MIN) >= 0 && value.compareTo(LONG_MAX) <= 0) {
      long v = value.longValue();
      smallInt(v < 0, v < 0 ? -v : v);
      return;
    }
    BigInteger abs = value.abs();
    if (abs.bitLength() <= 64) {
      smallInt(value.signum() < 0, abs.longValue());
      return;
    }
    byte[] magnitude = abs.toByteArray();
    int start = magnitude[0] == 0 ? 1 : 0;
    int len = magnitude.length - start;
    if (len > BIG_INT_MAX_BYTES) {
      throw new TupleException(
          TupleException.Kind.UNENCODABLE, -1, "integer of more than 255 bytes");
    }
    if (value.signum() < 0) {
      out.write(NEG_BIG_INT);
      out.write(len ^ 0xFF);
      for (int i = start; i < magnitude.length; i++) {
        out.write(~magnitude[i] & 0xFF);
      }
    } else {
      out.write(POS_BIG_INT);
      out.write(len);
      out.write(magnitude, start, len);
    }
  }

  private void writeBigEndian(long value, int n) {
    for (int i = n - 1; i >= 0; i--) {
      out.write((int) (value >>> (8 * i)) & 0xFF);
    }
  }
}
