package io.amulet.map;

import java.util.AbstractSet;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.Collection;
import java.util.Comparator;
import java.util.Iterator;
import java.util.NavigableMap;
import java.util.NavigableSet;

/**
 * The keys of a map view (an {@link AmuletMap} or a {@link TransactionMap})
 * as a NavigableSet (as ConcurrentSkipListMap.KeySet).
 */
final class AmuletKeySet<K> extends AbstractSet<K> implements NavigableSet<K> {
  private final NavigableMap<K, ?> m;

  AmuletKeySet(AmuletMap<K, ?> m) {
    this.m = m;
  }

  AmuletKeySet(TransactionMap<K, ?> m) {
    this.m = m;
  }

  /** A key set of a view of the same kind as this one's map. */
  private AmuletKeySet<K> of(NavigableMap<K, ?> view) {
    if (view instanceof AmuletMap) {
      return new AmuletKeySet<>((AmuletMap<K, ?>) view);
    }
    return new AmuletKeySet<>((TransactionMap<K, ?>) view);
  }

  @Override
  public int size() {
    return m.size();
  }

  @Override
  public boolean isEmpty() {
    return m.isEmpty();
  }

  @Override
  public boolean contains(Object o) {
    return m.containsKey(o);
  }

  @Override
  public boolean remove(Object o) {
    return m.remove(o) != null;
  }

  @Override
  public void clear() {
    m.clear();
  }

  @Override
  public K lower(K e) {
    return m.lowerKey(e);
  }

  @Override
  public K floor(K e) {
    return m.floorKey(e);
  }

  @Override
  public K ceiling(K e) {
    return m.ceilingKey(e);
  }

  @Override
  public K higher(K e) {
    return m.higherKey(e);
  }

  @Override
  public Comparator<? super K> comparator() {
    return m.comparator();
  }

  @Override
  public K first() {
    return m.firstKey();
  }

  @Override
  public K last() {
    return m.lastKey();
  }

  @Override
  public K pollFirst() {
    return AmuletMap.keyOf(m.pollFirstEntry());
  }

  @Override
  public K pollLast() {
    return AmuletMap.keyOf(m.pollLastEntry());
  }

  @Override
  public Iterator<K> iterator() {
    // Keys only: no value is decoded.
    if (m instanceof AmuletMap) {
      return ((AmuletMap<K, ?>) m).keyIterator();
    }
    return ((TransactionMap<K, ?>) m).keyIterator();
  }

  @Override
  public boolean equals(Object o) {
    if (o == this) {
      return true;
    }
    if (!(o instanceof Set)) {
      return false;
    }
    Collection<?> c = (Collection<?>) o;
    try {
      return containsAll(c) && c.containsAll(this);
    } catch (ClassCastException | NullPointerException unused) {
      return false;
    }
  }

  @Override
  public Object[] toArray() {
    List<K> out = new ArrayList<>();
    iterator().forEachRemaining(out::add);
    return out.toArray();
  }

  @Override
  public <T> T[] toArray(T[] a) {
    List<K> out = new ArrayList<>();
    iterator().forEachRemaining(out::add);
    return out.toArray(a);
  }

  @Override
  public Iterator<K> descendingIterator() {
    return descendingSet().iterator();
  }

  @Override
  public NavigableSet<K> subSet(
      K fromElement, boolean fromInclusive, K toElement, boolean toInclusive) {
    return of(m.subMap(fromElement, fromInclusive, toElement, toInclusive));
  }

  @Override
  public NavigableSet<K> headSet(K toElement, boolean inclusive) {
    return of(m.headMap(toElement, inclusive));
  }

  @Override
  public NavigableSet<K> tailSet(K fromElement, boolean inclusive) {
    return of(m.tailMap(fromElement, inclusive));
  }

  @Override
  public NavigableSet<K> subSet(K fromElement, K toElement) {
    return subSet(fromElement, true, toElement, false);
  }

  @Override
  public NavigableSet<K> headSet(K toElement) {
    return headSet(toElement, false);
  }

  @Override
  public NavigableSet<K> tailSet(K fromElement) {
    return tailSet(fromElement, true);
  }

  @Override
  public NavigableSet<K> descendingSet() {
    return of(m.descendingMap());
  }
}
