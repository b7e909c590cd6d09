package io.amulet.codec;

/**
 * Turns values into bytes. The cluster compares values by their bytes
 * (containsValue, replace(k, old, new), remove(k, v)), so the encoding must
 * be canonical: equal values give equal bytes, and {@code decode(encode(v))}
 * equals {@code v}.
 */
public interface ValueCodec<V> {
  /** The value type; map methods throw ClassCastException for other types. */
  Class<V> type();

  /** The bytes of {@code value} (never null). */
  byte[] encode(V value);

  /** The value of {@code bytes}. */
  V decode(byte[] bytes);
}
