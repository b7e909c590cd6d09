package io.amulet.codec;

import io.amulet.tuple.Tuple;
import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.util.function.Function;

/** Canonical value codecs; write your own with {@link #of}. */
public final class ValueCodecs {
  private ValueCodecs() {}

  /** Bytes as they are. */
  public static ValueCodec<byte[]> bytes() {
    return of(byte[].class, byte[]::clone, byte[]::clone);
  }

  /** Strings as UTF-8 (strictly: a lone surrogate is refused, not replaced). */
  public static ValueCodec<String> strings() {
    return of(String.class, ValueCodecs::utf8, ValueCodecs::fromUtf8);
  }

  /** Longs as 8 big-endian bytes. */
  public static ValueCodec<Long> longs() {
    return of(
        Long.class,
        v -> ByteBuffer.allocate(8).putLong(v).array(),
        b -> {
          if (b.length != 8) {
            throw new IllegalArgumentException("stored value has " + b.length + " bytes, not 8");
          }
          return ByteBuffer.wrap(b).getLong();
        });
  }

  /** Tuples, packed. */
  public static ValueCodec<Tuple> tuples() {
    return of(Tuple.class, Tuple::pack, Tuple::fromBytes);
  }

  /** A codec from two functions; keep it canonical (see {@link ValueCodec}). */
  public static <V> ValueCodec<V> of(
      Class<V> type, Function<V, byte[]> encode, Function<byte[], V> decode) {
    return new ValueCodec<V>() {
      @Override
      public Class<V> type() {
        return type;
      }

      @Override
      public byte[] encode(V value) {
        return encode.apply(value);
      }

      @Override
      public V decode(byte[] bytes) {
        return decode.apply(bytes);
      }
    };
  }

  private static byte[] utf8(String s) {
    try {
      ByteBuffer b =
          StandardCharsets.UTF_8
              .newEncoder()
              .onMalformedInput(CodingErrorAction.REPORT)
              .onUnmappableCharacter(CodingErrorAction.REPORT)
              .encode(java.nio.CharBuffer.wrap(s));
      byte[] out = new byte[b.remaining()];
      b.get(out);
      return out;
    } catch (CharacterCodingException e) {
      throw new IllegalArgumentException("value is not valid Unicode (lone surrogate)", e);
    }
  }

  private static String fromUtf8(byte[] b) {
    try {
      return StandardCharsets.UTF_8
          .newDecoder()
          .onMalformedInput(CodingErrorAction.REPORT)
          .onUnmappableCharacter(CodingErrorAction.REPORT)
          .decode(ByteBuffer.wrap(b))
          .toString();
    } catch (CharacterCodingException e) {
      throw new IllegalArgumentException("stored value is not UTF-8", e);
    }
  }
}
