package io.amulet.tuple;

import java.math.BigInteger;
import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.UUID;

/**
 * Unpacks FoundationDB tuple bytes, rejecting what crates/amulet-tuple's
 * decoder rejects (truncated, unterminated, invalid UTF-8, unknown codes,
 * nesting deeper than {@link #MAX_DEPTH}).
 */
final class TupleDecoder {
  /** Amulet's nesting limit (not FDB's): keeps the recursion bounded. */
  static final int MAX_DEPTH = 64;

  private final byte[] in;
  private int pos;

  TupleDecoder(byte[] in) {
    this.in = in;
  }

  List<Object> all() {
    List<Object> elements = new ArrayList<>();
    while (pos < in.length) {
      elements.add(element(0));
    }
    return elements;
  }

  private Object element(int depth) {
    int start = pos;
    int code = in[pos++] & 0xFF;
    switch (code) {
      case TupleEncoder.NULL:
        return null;
      case TupleEncoder.BYTES:
        return escaped(start, "byte string");
      case TupleEncoder.STRING:
        return utf8(escaped(start, "unicode string"), start);
      case TupleEncoder.NESTED:
        return nested(start, depth + 1);
      case TupleEncoder.POS_BIG_INT:
        {
          int len = take(start, code, 1)[0] & 0xFF;
          return canonical(new BigInteger(1, take(start, code, len)));
        }
      case TupleEncoder.NEG_BIG_INT:
        {
          int len = (take(start, code, 1)[0] & 0xFF) ^ 0xFF;
          byte[] magnitude = take(start, code, len);
          for (int i = 0; i < magnitude.length; i++) {
            magnitude[i] = (byte) ~magnitude[i];
          }
          return canonical(new BigInteger(1, magnitude).negate());
        }
      case TupleEncoder.FLOAT:
        {
          int key = (int) readBigEndian(take(start, code, 4));
          int bits = key < 0 ? key ^ Integer.MIN_VALUE : ~key;
          return Float.intBitsToFloat(bits);
        }
      case TupleEncoder.DOUBLE:
        {
          long key = readBigEndian(take(start, code, 8));
          long bits = key < 0 ? key ^ Long.MIN_VALUE : ~key;
          return Double.longBitsToDouble(bits);
        }
      case TupleEncoder.FALSE:
        return Boolean.FALSE;
      case TupleEncoder.TRUE:
        return Boolean.TRUE;
      case TupleEncoder.UUID_CODE:
        {
          byte[] b = take(start, code, 16);
          return new UUID(
              readBigEndian(Arrays.copyOfRange(b, 0, 8)),
              readBigEndian(Arrays.copyOfRange(b, 8, 16)));
        }
      case TupleEncoder.VERSIONSTAMP:
        return Versionstamp.of(take(start, code, Versionstamp.LENGTH));
      default:
        if (code >= TupleEncoder.INT_ZERO - 8 && code < TupleEncoder.INT_ZERO) {
          int n = TupleEncoder.INT_ZERO - code;
          long raw = readBigEndian(take(start, code, n));
          long mask = -1L >>> (64 - 8 * n);
          return negative(~raw & mask);
        }
        if (code >= TupleEncoder.INT_ZERO && code <= TupleEncoder.INT_ZERO + 8) {
          int n = code - TupleEncoder.INT_ZERO;
          return positive(readBigEndian(take(start, code, n)));
        }
        throw new TupleException(
            TupleException.Kind.UNKNOWN_TYPE_CODE,
            start,
            String.format("unknown type code 0x%02x", code));
    }
  }

  /** The canonical form: Long inside the long range, else BigInteger. */
  private static Object canonical(BigInteger value) {
    return value.bitLength() <= 63 ? (Object) value.longValue() : value;
  }

  /** `magnitude` read unsigned. */
  private static Object positive(long magnitude) {
    return magnitude >= 0 ? (Object) magnitude : new BigInteger(Long.toUnsignedString(magnitude));
  }

  /** Minus `magnitude` read unsigned; 2^63 is Long.MIN_VALUE. */
  private static Object negative(long magnitude) {
    if (magnitude >= 0 || magnitude == Long.MIN_VALUE) {
      return -magnitude;
    }
    return new BigInteger(Long.toUnsignedString(magnitude)).negate();
  }

  private Tuple nested(int start, int depth) {
    if (depth > MAX_DEPTH) {
      throw new TupleException(
          TupleException.Kind.TOO_DEEP, start, "tuples nested more than 64 deep");
    }
    List<Object> items = new ArrayList<>();
    while (true) {
      if (pos >= in.length) {
        throw new TupleException(
            TupleException.Kind.UNTERMINATED, start, "nested tuple has no terminating 0x00");
      }
      if (in[pos] == 0) {
        if (pos + 1 < in.length && (in[pos + 1] & 0xFF) == TupleEncoder.ESCAPE) {
          items.add(null);
          pos += 2;
        } else {
          pos += 1;
          return Tuple.fromList(items);
        }
      } else {
        items.add(element(depth));
      }
    }
  }

  /** A 0x00-terminated run with 0x00 0xFF standing for 0x00. */
  private byte[] escaped(int start, String what) {
    java.io.ByteArrayOutputStream out = new java.io.ByteArrayOutputStream();
    while (true) {
      if (pos >= in.length) {
        throw new TupleException(
            TupleException.Kind.UNTERMINATED, start, what + " has no terminating 0x00");
      }
      byte b = in[pos++];
      if (b != 0) {
        out.write(b);
      } else if (pos < in.length && (in[pos] & 0xFF) == TupleEncoder.ESCAPE) {
        out.write(0);
        pos++;
      } else {
        return out.toByteArray();
      }
    }
  }

  private static String utf8(byte[] bytes, int start) {
    try {
      return StandardCharsets.UTF_8
          .newDecoder()
          .onMalformedInput(CodingErrorAction.REPORT)
          .onUnmappableCharacter(CodingErrorAction.REPORT)
          .decode(ByteBuffer.wrap(bytes))
          .toString();
    } catch (CharacterCodingException e) {
      throw new TupleException(
          TupleException.Kind.INVALID_UTF8, start, "unicode string is not valid UTF-8");
    }
  }

  private byte[] take(int start, int code, int n) {
    int available = in.length - pos;
    if (available < n) {
      throw new TupleException(
          TupleException.Kind.TRUNCATED,
          start,
          String.format(
              "type code 0x%02x needs %d more bytes but only %d remain", code, n, available));
    }
    byte[] bytes = Arrays.copyOfRange(in, pos, pos + n);
    pos += n;
    return bytes;
  }

  private static long readBigEndian(byte[] bytes) {
    long v = 0;
    for (byte b : bytes) {
      v = (v << 8) | (b & 0xFF);
    }
    return v;
  }
}
