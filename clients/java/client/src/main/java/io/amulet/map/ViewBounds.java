package io.amulet.map;

import io.amulet.codec.KeyCodec;

/**
 * The bounds of a sorted map view in ascending terms (null: open), as
 * ConcurrentSkipListMap.SubMap keeps them, with their encoded keys.
 * Immutable.
 */
final class ViewBounds<K> {
  final KeyCodec<K> keys;
  final K lo;
  final boolean loInclusive;
  final K hi;
  final boolean hiInclusive;
  final byte[] loBytes;
  final byte[] hiBytes;

  ViewBounds(KeyCodec<K> keys, K lo, boolean loInclusive, K hi, boolean hiInclusive) {
    this.keys = keys;
    this.lo = lo;
    this.loInclusive = loInclusive;
    this.hi = hi;
    this.hiInclusive = hiInclusive;
    this.loBytes = lo == null ? null : keys.encode(lo);
    this.hiBytes = hi == null ? null : keys.encode(hi);
    if (lo != null && hi != null && cmp(lo, hi) > 0) {
      throw new IllegalArgumentException("inconsistent range");
    }
  }

  /** No bounds. */
  static <K> ViewBounds<K> all(KeyCodec<K> keys) {
    return new ViewBounds<>(keys, null, false, null, false);
  }

  private int cmp(K a, K b) {
    return keys.comparator().compare(a, b);
  }

  boolean tooLow(K k) {
    if (lo == null) {
      return false;
    }
    int c = cmp(k, lo);
    return c < 0 || (c == 0 && !loInclusive);
  }

  boolean tooHigh(K k) {
    if (hi == null) {
      return false;
    }
    int c = cmp(k, hi);
    return c > 0 || (c == 0 && !hiInclusive);
  }

  boolean inRange(K k) {
    return !tooLow(k) && !tooHigh(k);
  }

  /** The bounds hold no key at all (lo == hi, one of them exclusive). */
  boolean empty() {
    return lo != null && hi != null && cmp(lo, hi) == 0 && !(loInclusive && hiInclusive);
  }

  void checkInRange(K k) {
    if (!inRange(k)) {
      throw new IllegalArgumentException("key out of range");
    }
  }

  /**
   * The bounds of a sub-view from {@code fromKey} to {@code toKey} (null:
   * this view's bound) given in the view's direction ({@code descending}
   * swaps them); a bound outside this view throws IllegalArgumentException.
   */
  ViewBounds<K> narrow(
      K fromKey, boolean fromInclusive, K toKey, boolean toInclusive, boolean descending) {
    if (descending) {
      K tk = fromKey;
      fromKey = toKey;
      toKey = tk;
      boolean ti = fromInclusive;
      fromInclusive = toInclusive;
      toInclusive = ti;
    }
    if (lo != null) {
      if (fromKey == null) {
        fromKey = lo;
        fromInclusive = loInclusive;
      } else {
        int c = cmp(fromKey, lo);
        if (c < 0 || (c == 0 && !loInclusive && fromInclusive)) {
          throw new IllegalArgumentException("key out of range");
        }
      }
    }
    if (hi != null) {
      if (toKey == null) {
        toKey = hi;
        toInclusive = hiInclusive;
      } else {
        int c = cmp(toKey, hi);
        if (c > 0 || (c == 0 && !hiInclusive && toInclusive)) {
          throw new IllegalArgumentException("key out of range");
        }
      }
    }
    return new ViewBounds<>(keys, fromKey, fromInclusive, toKey, toInclusive);
  }
}
