package io.amulet.tuple;

import java.math.BigInteger;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.Iterator;
import java.util.List;
import java.util.UUID;

/**
 * An immutable tuple of elements in FoundationDB's tuple encoding, the
 * encoding of Amulet's typed keys (byte-compatible with crates/amulet-tuple,
 * checked by spec/tuple-vectors.json).
 *
 * <p>Elements are {@code null}, {@code byte[]}, {@link String}, nested
 * {@code Tuple}, integers ({@link Long}, {@link Integer}, {@link Short},
 * {@link Byte}, {@link BigInteger} up to 255 bytes), {@link Float}, {@link
 * Double}, {@link Boolean}, {@link UUID} and {@link Versionstamp}. Decoding
 * gives a {@code Long} for every integer in the long range and a {@code
 * BigInteger} only outside it.
 *
 * <p>Equality, hashing and order follow the packed bytes (as in the Rust
 * crate): two tuples are equal exactly when they pack to the same bytes, and
 * order as their packed bytes do, unsigned and lexicographically.
 */
public final class Tuple implements Comparable<Tuple>, Iterable<Object> {
  private static final Tuple EMPTY = new Tuple(Collections.emptyList());

  private final List<Object> elements;
  /** Packed lazily; tuples are immutable so it never goes stale. */
  private volatile byte[] packed;

  private Tuple(List<Object> elements) {
    this.elements = elements;
  }

  /** A tuple of these elements (byte arrays are copied). */
  public static Tuple of(Object... elements) {
    return fromList(Arrays.asList(elements));
  }

  /** A tuple of these elements (byte arrays are copied). */
  public static Tuple fromList(List<?> elements) {
    if (elements.isEmpty()) {
      return EMPTY;
    }
    List<Object> copy = new ArrayList<>(elements.size());
    for (Object e : elements) {
      copy.add(e instanceof byte[] ? ((byte[]) e).clone() : e);
    }
    Tuple t = new Tuple(Collections.unmodifiableList(copy));
    // Fail at construction, not at first use, on elements with no encoding.
    t.pack();
    return t;
  }

  /** Decodes packed bytes; throws {@link TupleException} if they are not a tuple. */
  public static Tuple fromBytes(byte[] bytes) {
    Tuple t = fromList(new TupleDecoder(bytes).all());
    return t;
  }

  /** The elements (unmodifiable; byte arrays are shared, do not modify them). */
  public List<Object> elements() {
    return elements;
  }

  /** Number of elements. */
  public int size() {
    return elements.size();
  }

  /** Element {@code i}. */
  public Object get(int i) {
    return elements.get(i);
  }

  /** A new tuple with {@code element} appended. */
  public Tuple add(Object element) {
    List<Object> more = new ArrayList<>(elements);
    more.add(element);
    return fromList(more);
  }

  /** The packed bytes (a copy). */
  public byte[] pack() {
    return packedBytes().clone();
  }

  byte[] packedBytes() {
    byte[] p = packed;
    if (p == null) {
      TupleEncoder encoder = new TupleEncoder();
      for (Object e : elements) {
        encoder.element(e, false);
      }
      p = encoder.toByteArray();
      packed = p;
    }
    return p;
  }

  /**
   * The key range holding every extension of this tuple (not the tuple
   * itself): {@code [pack() + 0x00, pack() + 0xFF)}, as amulet-tuple's range.
   */
  public byte[][] range() {
    byte[] p = packedBytes();
    byte[] begin = Arrays.copyOf(p, p.length + 1);
    byte[] end = Arrays.copyOf(p, p.length + 1);
    end[p.length] = (byte) 0xFF;
    return new byte[][] {begin, end};
  }

  @Override
  public Iterator<Object> iterator() {
    return elements.iterator();
  }

  @Override
  public int compareTo(Tuple other) {
    return Arrays.compareUnsigned(packedBytes(), other.packedBytes());
  }

  @Override
  public boolean equals(Object o) {
    return o instanceof Tuple && Arrays.equals(packedBytes(), ((Tuple) o).packedBytes());
  }

  @Override
  public int hashCode() {
    return Arrays.hashCode(packedBytes());
  }

  @Override
  public String toString() {
    StringBuilder s = new StringBuilder("(");
    for (int i = 0; i < elements.size(); i++) {
      if (i > 0) {
        s.append(", ");
      }
      Object e = elements.get(i);
      if (e instanceof byte[]) {
        s.append("b\"").append(java.util.HexFormat.of().formatHex((byte[]) e)).append('"');
      } else if (e instanceof String) {
        s.append('"').append(e).append('"');
      } else {
        s.append(e);
      }
    }
    return s.append(elements.size() == 1 ? ",)" : ")").toString();
  }
}
