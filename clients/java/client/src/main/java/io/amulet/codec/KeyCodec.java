package io.amulet.codec;

import java.util.Comparator;

/**
 * Turns keys into the bytes the cluster orders. The cluster sorts keys by
 * their bytes (unsigned, lexicographic), so {@link #comparator()} must order
 * keys exactly as their encodings sort, and equal keys must have equal
 * encodings: the map's order, navigation and range views depend on it.
 */
public interface KeyCodec<K> {
  /** The key type; map methods throw ClassCastException for other types. */
  Class<K> type();

  /** The bytes of {@code key} (never null). */
  byte[] encode(K key);

  /** The key of {@code bytes}; throws IllegalArgumentException if they are not one. */
  K decode(byte[] bytes);

  /** The order of the encodings, expressed on keys. */
  Comparator<K> comparator();
}
