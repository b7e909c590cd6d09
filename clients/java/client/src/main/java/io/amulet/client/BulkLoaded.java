package io.amulet.client;

/**
 * What a bulk load ({@link ByteMap#bulkLoad}) did, as the Rust client's
 * {@code BulkLoaded}. Immutable.
 */
public final class BulkLoaded {
  private final long entries;
  private final long bytes;
  private final long splits;
  private final long batches;

  BulkLoaded(long entries, long bytes, long splits, long batches) {
    this.entries = entries;
    this.bytes = bytes;
    this.splits = splits;
    this.batches = batches;
  }

  /** Entries written: acknowledged by the nodes (so after an error, what is known to be in the map). */
  public long entries() {
    return entries;
  }

  /** Their key and value bytes. */
  public long bytes() {
    return bytes;
  }

  /** Splits it ordered (a cut that already started a range needs none). */
  public long splits() {
    return splits;
  }

  /** {@code putAll}s it sent. */
  public long batches() {
    return batches;
  }

  @Override
  public boolean equals(Object o) {
    if (!(o instanceof BulkLoaded)) {
      return false;
    }
    BulkLoaded b = (BulkLoaded) o;
    return entries == b.entries && bytes == b.bytes && splits == b.splits && batches == b.batches;
  }

  @Override
  public int hashCode() {
    return java.util.Objects.hash(entries, bytes, splits, batches);
  }

  @Override
  public String toString() {
    return "BulkLoaded(entries " + entries + ", bytes " + bytes + ", splits " + splits
        + ", batches " + batches + ")";
  }
}
