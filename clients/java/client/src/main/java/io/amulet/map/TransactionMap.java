package io.amulet.map;

import io.amulet.client.Transaction;
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
import java.util.NavigableMap;
import java.util.NavigableSet;
import java.util.NoSuchElementException;
import java.util.Set;

/**
 * A map of the cluster as seen inside a {@link Transaction}, as a {@link
 * NavigableMap}: reads are at the transaction's read version with its own
 * writes applied, writes are buffered until the transaction commits (all
 * apply or none does). Keys and values are encoded by codecs, as in {@link
 * AmuletMap}, and the map is ordered by the encoded keys' bytes. Get one
 * with {@link Transaction#map}.
 *
 * <p>Everything a NavigableMap does is done with the transaction's gets,
 * range reads (navigation, iteration, {@code size}, {@code isEmpty}, {@code
 * containsValue}, in pages of {@link
 * io.amulet.client.ClientConfig#rangeEntries()} entries) and buffered
 * writes; views (sub/head/tail/descending maps, key sets, entry sets,
 * values) are of the same transaction. Mind what a method reads, since
 * what a transaction read decides whether it conflicts: {@code put} and
 * {@code remove} read the key (they return the previous value), {@code
 * putAll}, {@code Entry.setValue} and {@code Iterator.remove} do not;
 * {@code size}, {@code clear}, {@code containsValue}, {@code equals} and
 * {@code hashCode} read the whole view. Iterators read page by page and see
 * the transaction's writes made meanwhile.
 *
 * <p>Neither keys nor values may be null (NullPointerException); keys of
 * another type than the codec's throw ClassCastException. After the
 * transaction commits or is abandoned, every method throws
 * IllegalStateException. Errors of the cluster are {@link
 * io.amulet.client.AmuletException}s ({@code CONFLICT} at a read when the
 * transaction is bound to conflict, {@code NOT_FOUND} for a map that does
 * not exist). Not for use by several threads at once.
 */
public final class TransactionMap<K, V> extends AbstractMap<K, V>
    implements NavigableMap<K, V> {
  private final Transaction tx;
  private final String name;
  private final KeyCodec<K> keys;
  private final ValueCodec<V> values;
  private final ViewBounds<K> bounds;
  private final boolean descending;

  private TransactionMap(
      Transaction tx,
      String name,
      KeyCodec<K> keys,
      ValueCodec<V> values,
      ViewBounds<K> bounds,
      boolean descending) {
    this.tx = tx;
    this.name = name;
    this.keys = keys;
    this.values = values;
    this.bounds = bounds;
    this.descending = descending;
  }

  /** The whole map {@code name} in {@code tx} with these codecs (see {@link Transaction#map}). */
  public static <K, V> TransactionMap<K, V> of(
      Transaction tx, String name, KeyCodec<K> keys, ValueCodec<V> values) {
    return new TransactionMap<>(tx, name, keys, values, ViewBounds.all(keys), false);
  }

  /** The transaction. */
  public Transaction transaction() {
    return tx;
  }

  /** The map's name. */
  public String name() {
    return name;
  }

  // ---- keys, values, bounds ----------------------------------------------

  private K key(Object o) {
    if (o == null) {
      throw new NullPointerException("null key");
    }
    return keys.type().cast(o);
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

  private boolean tooLow(K k) {
    return bounds.tooLow(k);
  }

  private boolean tooHigh(K k) {
    return bounds.tooHigh(k);
  }

  private boolean inRange(K k) {
    return bounds.inRange(k);
  }

  private void checkInRange(K k) {
    bounds.checkInRange(k);
  }

  // ---- Map -----------------------------------------------------------------

  @Override
  public V get(Object key) {
    K k = key(key);
    return inRange(k) ? dec(tx.get(name, keys.encode(k))) : null;
  }

  @Override
  public boolean containsKey(Object key) {
    K k = key(key);
    return inRange(k) && tx.get(name, keys.encode(k)) != null;
  }

  /** Buffers the new value; reads the key for the previous value it returns. */
  @Override
  public V put(K key, V value) {
    K k = key(key);
    byte[] v = encValue(value);
    checkInRange(k);
    byte[] kb = keys.encode(k);
    byte[] previous = tx.get(name, kb);
    tx.put(name, kb, v);
    return dec(previous);
  }

  /** Buffers the removal; reads the key for the value it returns. */
  @Override
  public V remove(Object key) {
    K k = key(key);
    if (!inRange(k)) {
      return null;
    }
    byte[] kb = keys.encode(k);
    byte[] previous = tx.get(name, kb);
    if (previous != null) {
      tx.delete(name, kb);
    }
    return dec(previous);
  }

  /** Buffers every entry without reading any (checks them all first). */
  @Override
  public void putAll(Map<? extends K, ? extends V> m) {
    List<Map.Entry<byte[], byte[]>> all = new ArrayList<>(m.size());
    for (Map.Entry<? extends K, ? extends V> e : m.entrySet()) {
      K k = key(e.getKey());
      byte[] v = encValue(e.getValue());
      checkInRange(k);
      all.add(new SimpleImmutableEntry<>(keys.encode(k), v));
    }
    for (Map.Entry<byte[], byte[]> e : all) {
      tx.put(name, e.getKey(), e.getValue());
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
    Iterator<Map.Entry<byte[], byte[]>> it = pages(false);
    while (it.hasNext()) {
      if (Arrays.equals(it.next().getValue(), v)) {
        return true;
      }
    }
    return false;
  }

  @Override
  public int size() {
    long n = 0;
    Iterator<Map.Entry<byte[], byte[]>> it = pages(false);
    while (it.hasNext()) {
      it.next();
      n++;
    }
    return (int) Math.min(Integer.MAX_VALUE, n);
  }

  @Override
  public boolean isEmpty() {
    return absLowest() == null;
  }

  /** Buffers the removal of every key of the view (reads them all). */
  @Override
  public void clear() {
    Iterator<Map.Entry<byte[], byte[]>> it = pages(false);
    while (it.hasNext()) {
      it.next();
      it.remove();
    }
  }

  // ---- navigation in ascending terms -----------------------------------------

  /** The first entry of the view's bounds narrowed to (from, to), ascending or descending. */
  private Map.Entry<byte[], byte[]> one(
      byte[] from, boolean fromInclusive, byte[] to, boolean toInclusive, boolean reverse) {
    if (bounds.empty()) {
      return null;
    }
    List<Map.Entry<byte[], byte[]>> page =
        tx.range(name, from, fromInclusive, to, toInclusive, 1, reverse).entries;
    return page.isEmpty() ? null : page.get(0);
  }

  private Map.Entry<byte[], byte[]> absLowest() {
    return one(bounds.loBytes, bounds.loInclusive, bounds.hiBytes, bounds.hiInclusive, false);
  }

  private Map.Entry<byte[], byte[]> absHighest() {
    return one(bounds.loBytes, bounds.loInclusive, bounds.hiBytes, bounds.hiInclusive, true);
  }

  private Map.Entry<byte[], byte[]> absCeiling(K k) {
    if (tooLow(k)) {
      return absLowest();
    }
    return tooHigh(k) ? null : one(keys.encode(k), true, bounds.hiBytes, bounds.hiInclusive, false);
  }

  private Map.Entry<byte[], byte[]> absHigher(K k) {
    if (tooLow(k)) {
      return absLowest();
    }
    return tooHigh(k) ? null : one(keys.encode(k), false, bounds.hiBytes, bounds.hiInclusive, false);
  }

  private Map.Entry<byte[], byte[]> absFloor(K k) {
    if (tooHigh(k)) {
      return absHighest();
    }
    return tooLow(k) ? null : one(bounds.loBytes, bounds.loInclusive, keys.encode(k), true, true);
  }

  private Map.Entry<byte[], byte[]> absLower(K k) {
    if (tooHigh(k)) {
      return absHighest();
    }
    return tooLow(k) ? null : one(bounds.loBytes, bounds.loInclusive, keys.encode(k), false, true);
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
    return AmuletMap.keyOf(lowerEntry(key));
  }

  @Override
  public K floorKey(K key) {
    return AmuletMap.keyOf(floorEntry(key));
  }

  @Override
  public K ceilingKey(K key) {
    return AmuletMap.keyOf(ceilingEntry(key));
  }

  @Override
  public K higherKey(K key) {
    return AmuletMap.keyOf(higherEntry(key));
  }

  @Override
  public Map.Entry<K, V> pollFirstEntry() {
    return poll(descending ? absHighest() : absLowest());
  }

  @Override
  public Map.Entry<K, V> pollLastEntry() {
    return poll(descending ? absLowest() : absHighest());
  }

  private Map.Entry<K, V> poll(Map.Entry<byte[], byte[]> e) {
    if (e == null) {
      return null;
    }
    tx.delete(name, e.getKey());
    return entry(e);
  }

  @Override
  public Comparator<? super K> comparator() {
    return descending ? keys.comparator().reversed() : keys.comparator();
  }

  // ---- views -----------------------------------------------------------------

  private TransactionMap<K, V> newSubMap(
      K fromKey, boolean fromInclusive, K toKey, boolean toInclusive) {
    return new TransactionMap<>(
        tx,
        name,
        keys,
        values,
        bounds.narrow(fromKey, fromInclusive, toKey, toInclusive, descending),
        descending);
  }

  @Override
  public TransactionMap<K, V> subMap(K fromKey, boolean fromInclusive, K toKey, boolean toInclusive) {
    return newSubMap(key(fromKey), fromInclusive, key(toKey), toInclusive);
  }

  @Override
  public TransactionMap<K, V> headMap(K toKey, boolean inclusive) {
    return newSubMap(null, false, key(toKey), inclusive);
  }

  @Override
  public TransactionMap<K, V> tailMap(K fromKey, boolean inclusive) {
    return newSubMap(key(fromKey), inclusive, null, false);
  }

  @Override
  public TransactionMap<K, V> subMap(K fromKey, K toKey) {
    return subMap(fromKey, true, toKey, false);
  }

  @Override
  public TransactionMap<K, V> headMap(K toKey) {
    return headMap(toKey, false);
  }

  @Override
  public TransactionMap<K, V> tailMap(K fromKey) {
    return tailMap(fromKey, true);
  }

  @Override
  public TransactionMap<K, V> descendingMap() {
    return new TransactionMap<>(tx, name, keys, values, bounds, !descending);
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

  // ---- iteration -------------------------------------------------------------

  /** The view's entries in ascending ({@code reverse}: descending) key order, page by page. */
  private Iterator<Map.Entry<byte[], byte[]>> pages(boolean reverse) {
    return new TransactionPages(tx, name, bounds, reverse);
  }

  /** Decodes raw entries in the view's order; remove() buffers the removal of the last key. */
  private abstract class Iter<T> implements Iterator<T> {
    private final Iterator<Map.Entry<byte[], byte[]>> rawIt = pages(descending);

    @Override
    public boolean hasNext() {
      return rawIt.hasNext();
    }

    @Override
    public T next() {
      return make(rawIt.next());
    }

    abstract T make(Map.Entry<byte[], byte[]> e);

    @Override
    public void remove() {
      rawIt.remove();
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

  /** An entry of the entry set's iterator: setValue buffers the new value. */
  private final class WriteThroughEntry extends SimpleEntry<K, V> {
    private static final long serialVersionUID = 1L;

    WriteThroughEntry(K key, V value) {
      super(key, value);
    }

    @Override
    public V setValue(V value) {
      byte[] v = encValue(value);
      tx.put(name, keys.encode(getKey()), v);
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
      return TransactionMap.this.remove(e.getKey(), e.getValue());
    }

    @Override
    public boolean isEmpty() {
      return TransactionMap.this.isEmpty();
    }

    @Override
    public int size() {
      return TransactionMap.this.size();
    }

    @Override
    public void clear() {
      TransactionMap.this.clear();
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
      return TransactionMap.this.containsValue(o);
    }

    @Override
    public boolean isEmpty() {
      return TransactionMap.this.isEmpty();
    }

    @Override
    public int size() {
      return TransactionMap.this.size();
    }

    @Override
    public void clear() {
      TransactionMap.this.clear();
    }
  }
}
