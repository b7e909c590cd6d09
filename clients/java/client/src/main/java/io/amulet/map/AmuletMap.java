package io.amulet.map;

import io.amulet.client.ByteMap;
import io.amulet.client.ByteMap.Nearest;
import io.amulet.codec.KeyCodec;
import io.amulet.codec.ValueCodec;
import java.util.AbstractCollection;
import java.util.AbstractMap;
import java.util.AbstractSet;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collection;
import java.util.Comparator;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.NavigableSet;
import java.util.NoSuchElementException;
import java.util.Set;
import java.util.concurrent.ConcurrentNavigableMap;

/**
 * A map of the cluster as a {@link ConcurrentNavigableMap}: keys and values
 * are encoded by codecs ({@link io.amulet.codec.KeyCodecs} keys sort like
 * their values, through the tuple layer), and the map is ordered by the
 * encoded keys' bytes.
 *
 * <p>Every single-key operation ({@code get}, {@code put}, {@code
 * putIfAbsent}, {@code replace}, {@code remove(k, v)}, ...) is one
 * linearizable request; {@code size}, {@code isEmpty}, {@code clear},
 * {@code containsValue}, {@code firstKey}/{@code lastKey} and the
 * floor/ceiling/higher/lower lookups of the whole map are one request each,
 * ordered across partitions by the cluster. {@code putAll} sends atomic
 * batches of up to 1,000 entries. Ascending iteration (of the map and of
 * every view) reads a snapshot: one consistent state of the map however long
 * the iteration takes, with memory bounded by a page per partition.
 * Descending iteration, and {@code size}/{@code clear}/{@code containsValue}
 * of a bounded view, read pages of {@link io.amulet.client.ClientConfig#rangeEntries()}
 * entries, each page linearizable on its own (weakly consistent, as the
 * {@code ConcurrentNavigableMap} contract allows).
 *
 * <p>Neither keys nor values may be null (NullPointerException). Keys of
 * another type than the codec's throw ClassCastException. Errors of the
 * cluster are {@link io.amulet.client.AmuletException}s (NOT_FOUND when the
 * map does not exist) or IllegalArgumentException (a key above 16 KiB).
 */
public final class AmuletMap<K, V> extends AbstractMap<K, V>
    implements ConcurrentNavigableMap<K, V> {
  /** putAll batches: below the server's putAll limits (10,000 entries, 3 MiB). */
  static final int PUT_ALL_ENTRIES = 1000;
  static final int PUT_ALL_BYTES = 2 * 1024 * 1024;
  /** pollFirst/pollLast give up after this many lost races. */
  static final int POLL_ROUNDS = 1000;

  final ByteMap raw;
  private final KeyCodec<K> keys;
  private final ValueCodec<V> values;
  /** Bounds in ascending terms (null: open), as ConcurrentSkipListMap.SubMap. */
  private final K lo;
  final boolean loInclusive;
  private final K hi;
  final boolean hiInclusive;
  final byte[] loBytes;
  final byte[] hiBytes;
  private final boolean descending;

  private AmuletMap(
      ByteMap raw,
      KeyCodec<K> keys,
      ValueCodec<V> values,
      K lo,
      boolean loInclusive,
      K hi,
      boolean hiInclusive,
      boolean descending) {
    this.raw = raw;
    this.keys = keys;
    this.values = values;
    this.lo = lo;
    this.loInclusive = loInclusive;
    this.hi = hi;
    this.hiInclusive = hiInclusive;
    this.loBytes = lo == null ? null : keys.encode(lo);
    this.hiBytes = hi == null ? null : keys.encode(hi);
    this.descending = descending;
    if (lo != null && hi != null && keys.comparator().compare(lo, hi) > 0) {
      throw new IllegalArgumentException("inconsistent range");
    }
  }

  /** The whole map {@code raw} with these codecs. */
  public static <K, V> AmuletMap<K, V> of(ByteMap raw, KeyCodec<K> keys, ValueCodec<V> values) {
    return new AmuletMap<>(raw, keys, values, null, false, null, false, false);
  }

  /** The byte-level map underneath. */
  public ByteMap raw() {
    return raw;
  }

  // ---- keys, values, bounds ----------------------------------------------

  private K key(Object o) {
    if (o == null) {
      throw new NullPointerException("null key");
    }
    return keys.type().cast(o);
  }

  private byte[] enc(K k) {
    return keys.encode(k);
  }

  private byte[] encValue(Object v) {
    if (v == null) {
      throw new NullPointerException("null value");
    }
    return values.encode(values.type().cast(v));
  }

  private V dec(byte[] v) {
    return v == null ? null : values.decode(v);
  }

  private Map.Entry<K, V> entry(Map.Entry<byte[], byte[]> e) {
    return e == null
        ? null
        : new SimpleImmutableEntry<>(keys.decode(e.getKey()), values.decode(e.getValue()));
  }

  private int cmp(K a, K b) {
    return keys.comparator().compare(a, b);
  }

  private boolean tooLow(K k) {
    if (lo == null) {
      return false;
    }
    int c = cmp(k, lo);
    return c < 0 || (c == 0 && !loInclusive);
  }

  private boolean tooHigh(K k) {
    if (hi == null) {
      return false;
    }
    int c = cmp(k, hi);
    return c > 0 || (c == 0 && !hiInclusive);
  }

  private boolean inRange(K k) {
    return !tooLow(k) && !tooHigh(k);
  }

  boolean tooLowBytes(byte[] k) {
    if (loBytes == null) {
      return false;
    }
    int c = Arrays.compareUnsigned(k, loBytes);
    return c < 0 || (c == 0 && !loInclusive);
  }

  boolean tooHighBytes(byte[] k) {
    if (hiBytes == null) {
      return false;
    }
    int c = Arrays.compareUnsigned(k, hiBytes);
    return c > 0 || (c == 0 && !hiInclusive);
  }

  private boolean bounded() {
    return lo != null || hi != null;
  }

  /** The bounds hold no key at all (lo == hi, one of them exclusive). */
  boolean emptyRange() {
    return lo != null && hi != null && cmp(lo, hi) == 0 && !(loInclusive && hiInclusive);
  }

  private void checkInRange(K k) {
    if (!inRange(k)) {
      throw new IllegalArgumentException("key out of range");
    }
  }

  // ---- Map -----------------------------------------------------------------

  @Override
  public V get(Object key) {
    K k = key(key);
    return inRange(k) ? dec(raw.get(enc(k))) : null;
  }

  @Override
  public boolean containsKey(Object key) {
    K k = key(key);
    return inRange(k) && raw.containsKey(enc(k));
  }

  @Override
  public V put(K key, V value) {
    K k = key(key);
    byte[] v = encValue(value);
    checkInRange(k);
    return dec(raw.put(enc(k), v));
  }

  @Override
  public V remove(Object key) {
    K k = key(key);
    return inRange(k) ? dec(raw.remove(enc(k))) : null;
  }

  @Override
  public V putIfAbsent(K key, V value) {
    K k = key(key);
    byte[] v = encValue(value);
    checkInRange(k);
    return dec(raw.putIfAbsent(enc(k), v));
  }

  @Override
  public boolean remove(Object key, Object value) {
    K k = key(key);
    if (value == null || !values.type().isInstance(value) || !inRange(k)) {
      return false;
    }
    return raw.removeIfEquals(enc(k), encValue(value));
  }

  @Override
  public boolean replace(K key, V oldValue, V newValue) {
    K k = key(key);
    byte[] expected = encValue(oldValue);
    byte[] v = encValue(newValue);
    checkInRange(k);
    return raw.replaceIfEquals(enc(k), expected, v);
  }

  @Override
  public V replace(K key, V value) {
    K k = key(key);
    byte[] v = encValue(value);
    checkInRange(k);
    return dec(raw.replace(enc(k), v));
  }

  @Override
  public void putAll(Map<? extends K, ? extends V> m) {
    // Encode (and check) everything before sending anything.
    List<Map.Entry<byte[], byte[]>> all = new ArrayList<>(m.size());
    for (Map.Entry<? extends K, ? extends V> e : m.entrySet()) {
      K k = key(e.getKey());
      byte[] v = encValue(e.getValue());
      checkInRange(k);
      all.add(new SimpleImmutableEntry<>(enc(k), v));
    }
    List<Map.Entry<byte[], byte[]>> batch = new ArrayList<>();
    long bytes = 0;
    for (Map.Entry<byte[], byte[]> e : all) {
      long size = e.getKey().length + e.getValue().length + 16;
      if (!batch.isEmpty() && (batch.size() >= PUT_ALL_ENTRIES || bytes + size > PUT_ALL_BYTES)) {
        raw.putAll(batch);
        batch = new ArrayList<>();
        bytes = 0;
      }
      batch.add(e);
      bytes += size;
    }
    if (!batch.isEmpty()) {
      raw.putAll(batch);
    }
  }

  @Override
  public boolean containsValue(Object value) {
    if (value == null) {
      throw new NullPointerException("null value");
    }
    if (!values.type().isInstance(value)) {
      return false;
    }
    byte[] v = encValue(value);
    if (!bounded()) {
      return raw.containsValue(v);
    }
    Iterator<Map.Entry<byte[], byte[]>> it = new PageIterator(this, false);
    while (it.hasNext()) {
      if (Arrays.equals(it.next().getValue(), v)) {
        return true;
      }
    }
    return false;
  }

  @Override
  public int size() {
    if (!bounded()) {
      return (int) Math.min(Integer.MAX_VALUE, raw.size());
    }
    long n = 0;
    Iterator<Map.Entry<byte[], byte[]>> it = new PageIterator(this, false);
    while (it.hasNext()) {
      it.next();
      n++;
    }
    return (int) Math.min(Integer.MAX_VALUE, n);
  }

  @Override
  public boolean isEmpty() {
    if (!bounded()) {
      return raw.isEmpty();
    }
    return absLowest() == null;
  }

  @Override
  public void clear() {
    if (!bounded()) {
      raw.clear();
      return;
    }
    Iterator<Map.Entry<byte[], byte[]>> it = new PageIterator(this, false);
    while (it.hasNext()) {
      raw.remove(it.next().getKey());
    }
  }

  // ---- navigation in ascending terms -----------------------------------------

  private Map.Entry<byte[], byte[]> check(Map.Entry<byte[], byte[]> e) {
    return e == null || tooLowBytes(e.getKey()) || tooHighBytes(e.getKey()) ? null : e;
  }

  private Map.Entry<byte[], byte[]> rangeOne(boolean reverse) {
    if (emptyRange()) {
      return null;
    }
    List<Map.Entry<byte[], byte[]>> page =
        raw.range(loBytes, loInclusive, hiBytes, hiInclusive, 1, reverse).entries;
    return page.isEmpty() ? null : page.get(0);
  }

  private Map.Entry<byte[], byte[]> absLowest() {
    return bounded() ? rangeOne(false) : raw.firstEntry();
  }

  private Map.Entry<byte[], byte[]> absHighest() {
    return bounded() ? rangeOne(true) : raw.lastEntry();
  }

  private Map.Entry<byte[], byte[]> absCeiling(K k) {
    if (tooLow(k)) {
      return absLowest();
    }
    return tooHigh(k) ? null : check(raw.nearestEntry(enc(k), Nearest.CEILING));
  }

  private Map.Entry<byte[], byte[]> absHigher(K k) {
    if (tooLow(k)) {
      return absLowest();
    }
    return tooHigh(k) ? null : check(raw.nearestEntry(enc(k), Nearest.HIGHER));
  }

  private Map.Entry<byte[], byte[]> absFloor(K k) {
    if (tooHigh(k)) {
      return absHighest();
    }
    return tooLow(k) ? null : check(raw.nearestEntry(enc(k), Nearest.FLOOR));
  }

  private Map.Entry<byte[], byte[]> absLower(K k) {
    if (tooHigh(k)) {
      return absHighest();
    }
    return tooLow(k) ? null : check(raw.nearestEntry(enc(k), Nearest.LOWER));
  }

  // ---- NavigableMap in this view's direction ---------------------------------

  @Override
  public Map.Entry<K, V> firstEntry() {
    return entry(descending ? absHighest() : absLowest());
  }

  @Override
  public Map.Entry<K, V> lastEntry() {
    return entry(descending ? absLowest() : absHighest());
  }

  @Override
  public K firstKey() {
    Map.Entry<K, V> e = firstEntry();
    if (e == null) {
      throw new NoSuchElementException();
    }
    return e.getKey();
  }

  @Override
  public K lastKey() {
    Map.Entry<K, V> e = lastEntry();
    if (e == null) {
      throw new NoSuchElementException();
    }
    return e.getKey();
  }

  @Override
  public Map.Entry<K, V> lowerEntry(K key) {
    K k = key(key);
    return entry(descending ? absHigher(k) : absLower(k));
  }

  @Override
  public Map.Entry<K, V> floorEntry(K key) {
    K k = key(key);
    return entry(descending ? absCeiling(k) : absFloor(k));
  }

  @Override
  public Map.Entry<K, V> ceilingEntry(K key) {
    K k = key(key);
    return entry(descending ? absFloor(k) : absCeiling(k));
  }

  @Override
  public Map.Entry<K, V> higherEntry(K key) {
    K k = key(key);
    return entry(descending ? absLower(k) : absHigher(k));
  }

  @Override
  public K lowerKey(K key) {
    return keyOf(lowerEntry(key));
  }

  @Override
  public K floorKey(K key) {
    return keyOf(floorEntry(key));
  }

  @Override
  public K ceilingKey(K key) {
    return keyOf(ceilingEntry(key));
  }

  @Override
  public K higherKey(K key) {
    return keyOf(higherEntry(key));
  }

  static <K> K keyOf(Map.Entry<K, ?> e) {
    return e == null ? null : e.getKey();
  }

  @Override
  public Map.Entry<K, V> pollFirstEntry() {
    return poll(true);
  }

  @Override
  public Map.Entry<K, V> pollLastEntry() {
    return poll(false);
  }

  /** Removes the first (or last) entry with a conditional remove, retrying lost races. */
  private Map.Entry<K, V> poll(boolean first) {
    for (int i = 0; i < POLL_ROUNDS; i++) {
      Map.Entry<byte[], byte[]> e =
          (first != descending) ? absLowest() : absHighest();
      if (e == null) {
        return null;
      }
      if (raw.removeIfEquals(e.getKey(), e.getValue())) {
        return entry(e);
      }
    }
    throw new java.util.ConcurrentModificationException(
        "poll lost " + POLL_ROUNDS + " races to other writers");
  }

  @Override
  public Comparator<? super K> comparator() {
    return descending ? keys.comparator().reversed() : keys.comparator();
  }

  // ---- views -----------------------------------------------------------------

  private AmuletMap<K, V> newSubMap(K fromKey, boolean fromInclusive, K toKey, boolean toInclusive) {
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
    return new AmuletMap<>(raw, keys, values, fromKey, fromInclusive, toKey, toInclusive, descending);
  }

  @Override
  public AmuletMap<K, V> subMap(K fromKey, boolean fromInclusive, K toKey, boolean toInclusive) {
    return newSubMap(key(fromKey), fromInclusive, key(toKey), toInclusive);
  }

  @Override
  public AmuletMap<K, V> headMap(K toKey, boolean inclusive) {
    return newSubMap(null, false, key(toKey), inclusive);
  }

  @Override
  public AmuletMap<K, V> tailMap(K fromKey, boolean inclusive) {
    return newSubMap(key(fromKey), inclusive, null, false);
  }

  @Override
  public AmuletMap<K, V> subMap(K fromKey, K toKey) {
    return subMap(fromKey, true, toKey, false);
  }

  @Override
  public AmuletMap<K, V> headMap(K toKey) {
    return headMap(toKey, false);
  }

  @Override
  public AmuletMap<K, V> tailMap(K fromKey) {
    return tailMap(fromKey, true);
  }

  @Override
  public AmuletMap<K, V> descendingMap() {
    return new AmuletMap<>(raw, keys, values, lo, loInclusive, hi, hiInclusive, !descending);
  }

  @Override
  public NavigableSet<K> navigableKeySet() {
    return new AmuletKeySet<>(this);
  }

  @Override
  public NavigableSet<K> keySet() {
    return new AmuletKeySet<>(this);
  }

  @Override
  public NavigableSet<K> descendingKeySet() {
    return new AmuletKeySet<>(descendingMap());
  }

  @Override
  public Set<Map.Entry<K, V>> entrySet() {
    return new EntrySet();
  }

  @Override
  public Collection<V> values() {
    return new Values();
  }

  @Override
  public String toString() {
    return super.toString();
  }

  // ---- iteration -------------------------------------------------------------

  /** Raw entries of this view in its direction. */
  private Iterator<Map.Entry<byte[], byte[]>> rawIterator() {
    return descending ? new PageIterator(this, true) : new SnapshotIterator(this);
  }

  /** Decodes raw entries; remove() removes the last key returned. */
  private abstract class Iter<T> implements Iterator<T> {
    private final Iterator<Map.Entry<byte[], byte[]>> rawIt = rawIterator();
    private byte[] lastKey;

    @Override
    public boolean hasNext() {
      return rawIt.hasNext();
    }

    @Override
    public T next() {
      Map.Entry<byte[], byte[]> e = rawIt.next();
      lastKey = e.getKey();
      return make(e);
    }

    abstract T make(Map.Entry<byte[], byte[]> e);

    @Override
    public void remove() {
      if (lastKey == null) {
        throw new IllegalStateException();
      }
      raw.remove(lastKey);
      lastKey = null;
    }
  }

  Iterator<K> keyIterator() {
    return new Iter<K>() {
      @Override
      K make(Map.Entry<byte[], byte[]> e) {
        return keys.decode(e.getKey());
      }
    };
  }

  /** An entry of the entry set's iterator: setValue puts the new value in the map. */
  private final class WriteThroughEntry extends SimpleEntry<K, V> {
    private static final long serialVersionUID = 1L;

    WriteThroughEntry(K key, V value) {
      super(key, value);
    }

    @Override
    public V setValue(V value) {
      if (value == null) {
        throw new NullPointerException("null value");
      }
      put(getKey(), value);
      return super.setValue(value);
    }
  }

  private final class EntrySet extends AbstractSet<Map.Entry<K, V>> {
    @Override
    public Iterator<Map.Entry<K, V>> iterator() {
      return new Iter<Map.Entry<K, V>>() {
        @Override
        Map.Entry<K, V> make(Map.Entry<byte[], byte[]> e) {
          return new WriteThroughEntry(keys.decode(e.getKey()), values.decode(e.getValue()));
        }
      };
    }

    @Override
    public boolean contains(Object o) {
      if (!(o instanceof Map.Entry)) {
        return false;
      }
      Map.Entry<?, ?> e = (Map.Entry<?, ?>) o;
      if (e.getKey() == null || !keys.type().isInstance(e.getKey())) {
        return false;
      }
      V v = get(e.getKey());
      return v != null && v.equals(e.getValue());
    }

    @Override
    public boolean remove(Object o) {
      if (!(o instanceof Map.Entry)) {
        return false;
      }
      Map.Entry<?, ?> e = (Map.Entry<?, ?>) o;
      if (e.getKey() == null || !keys.type().isInstance(e.getKey())) {
        return false;
      }
      return AmuletMap.this.remove(e.getKey(), e.getValue());
    }

    @Override
    public boolean isEmpty() {
      return AmuletMap.this.isEmpty();
    }

    @Override
    public int size() {
      return AmuletMap.this.size();
    }

    @Override
    public void clear() {
      AmuletMap.this.clear();
    }
  }

  private final class Values extends AbstractCollection<V> {
    @Override
    public Iterator<V> iterator() {
      return new Iter<V>() {
        @Override
        V make(Map.Entry<byte[], byte[]> e) {
          return values.decode(e.getValue());
        }
      };
    }

    @Override
    public boolean contains(Object o) {
      return AmuletMap.this.containsValue(o);
    }

    @Override
    public boolean isEmpty() {
      return AmuletMap.this.isEmpty();
    }

    @Override
    public int size() {
      return AmuletMap.this.size();
    }

    @Override
    public void clear() {
      AmuletMap.this.clear();
    }
  }
}
