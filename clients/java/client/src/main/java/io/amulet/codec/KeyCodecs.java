package io.amulet.codec;

import io.amulet.tuple.Tuple;
import java.util.Arrays;
import java.util.Comparator;
import java.util.List;
import java.util.UUID;
import java.util.function.Function;

/**
 * Order-preserving key codecs. Every typed key is a one-element tuple in
 * FoundationDB's tuple encoding ({@link Tuple}), so Java, Rust and Python
 * clients write the same bytes for the same key; {@link #tuples()} stores
 * whole tuples and {@link #raw()} stores bytes as they are.
 */
public final class KeyCodecs {
  private KeyCodecs() {}

  /** Strings, ordered by code point (the order of their UTF-8 bytes). */
  public static KeyCodec<String> strings() {
    return single(String.class, o -> (String) o, KeyCodecs::compareCodePoints);
  }

  /** Integers, in numeric order. */
  public static KeyCodec<Integer> integers() {
    return single(
        Integer.class,
        o -> {
          long v = (Long) o;
          if (v < Integer.MIN_VALUE || v > Integer.MAX_VALUE) {
            throw new IllegalArgumentException("key " + v + " is not an int");
          }
          return (int) v;
        },
        Comparator.naturalOrder());
  }

  /** Longs, in numeric order. */
  public static KeyCodec<Long> longs() {
    return single(Long.class, o -> (Long) o, Comparator.naturalOrder());
  }

  /**
   * UUIDs, ordered by their 16 bytes unsigned (not {@link UUID#compareTo},
   * which compares signed halves).
   */
  public static KeyCodec<UUID> uuids() {
    return single(
        UUID.class,
        o -> (UUID) o,
        (a, b) -> {
          int c = Long.compareUnsigned(a.getMostSignificantBits(), b.getMostSignificantBits());
          return c != 0
              ? c
              : Long.compareUnsigned(a.getLeastSignificantBits(), b.getLeastSignificantBits());
        });
  }

  /** Byte strings (tuple byte-string element), ordered unsigned lexicographically. */
  public static KeyCodec<byte[]> bytes() {
    return single(byte[].class, o -> (byte[]) o, Arrays::compareUnsigned);
  }

  /** Whole tuples, packed; ordered as their packed bytes. */
  public static KeyCodec<Tuple> tuples() {
    return new Simple<>(Tuple.class, Tuple::pack, Tuple::fromBytes, Comparator.naturalOrder());
  }

  /** Bytes stored as they are (no tuple layer), ordered unsigned lexicographically. */
  public static KeyCodec<byte[]> raw() {
    return new Simple<>(byte[].class, byte[]::clone, byte[]::clone, Arrays::compareUnsigned);
  }

  /** Compares strings by code point, which is how their UTF-8 bytes sort. */
  static int compareCodePoints(String a, String b) {
    int i = 0;
    int j = 0;
    while (i < a.length() && j < b.length()) {
      int ca = a.codePointAt(i);
      int cb = b.codePointAt(j);
      if (ca != cb) {
        return Integer.compare(ca, cb);
      }
      i += Character.charCount(ca);
      j += Character.charCount(cb);
    }
    return Boolean.compare(i < a.length(), j < b.length());
  }

  private static <K> KeyCodec<K> single(
      Class<K> type, Function<Object, K> fromElement, Comparator<K> comparator) {
    return new Simple<>(
        type,
        key -> Tuple.of(key).pack(),
        bytes -> {
          List<Object> elements = Tuple.fromBytes(bytes).elements();
          if (elements.size() != 1 || !isType(type, elements.get(0))) {
            throw new IllegalArgumentException(
                "stored key " + Tuple.fromBytes(bytes) + " is not a " + type.getSimpleName());
          }
          return fromElement.apply(elements.get(0));
        },
        comparator);
  }

  private static boolean isType(Class<?> type, Object element) {
    if (type == Integer.class) {
      return element instanceof Long;
    }
    return type.isInstance(element);
  }

  /** A codec from two functions and a comparator. */
  public static <K> KeyCodec<K> of(
      Class<K> type,
      Function<K, byte[]> encode,
      Function<byte[], K> decode,
      Comparator<K> comparator) {
    return new Simple<>(type, encode, decode, comparator);
  }

  private static final class Simple<K> implements KeyCodec<K> {
    private final Class<K> type;
    private final Function<K, byte[]> encode;
    private final Function<byte[], K> decode;
    private final Comparator<K> comparator;

    Simple(
        Class<K> type,
        Function<K, byte[]> encode,
        Function<byte[], K> decode,
        Comparator<K> comparator) {
      this.type = type;
      this.encode = encode;
      this.decode = decode;
      this.comparator = comparator;
    }

    @Override
    public Class<K> type() {
      return type;
    }

    @Override
    public byte[] encode(K key) {
      return encode.apply(key);
    }

    @Override
    public K decode(byte[] bytes) {
      return decode.apply(bytes);
    }

    @Override
    public Comparator<K> comparator() {
      return comparator;
    }
  }
}
