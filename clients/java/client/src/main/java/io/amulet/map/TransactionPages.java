package io.amulet.map;

import io.amulet.client.ByteMap;
import io.amulet.client.Transaction;
import java.util.ArrayDeque;
import java.util.Iterator;
import java.util.Map;
import java.util.NoSuchElementException;

/**
 * The entries of a transaction's view of a map between bounds, ascending
 * or descending, read page by page ({@link
 * io.amulet.client.ClientConfig#rangeEntries()} entries) with the
 * transaction's range reads, so each page sees the transaction's writes
 * made meanwhile. {@link #remove} buffers the removal of the last key
 * returned.
 */
final class TransactionPages implements Iterator<Map.Entry<byte[], byte[]>> {
  private final Transaction tx;
  private final String map;
  private final ViewBounds<?> bounds;
  private final boolean reverse;
  private final ArrayDeque<Map.Entry<byte[], byte[]>> page = new ArrayDeque<>();
  /** The last key read: the next page starts after it. */
  private byte[] cursor;
  private boolean more;
  private byte[] lastReturned;

  TransactionPages(Transaction tx, String map, ViewBounds<?> bounds, boolean reverse) {
    this.tx = tx;
    this.map = map;
    this.bounds = bounds;
    this.reverse = reverse;
    this.more = !bounds.empty();
  }

  @Override
  public boolean hasNext() {
    if (page.isEmpty() && more) {
      int limit = tx.client().config().rangeEntries();
      ViewBounds<?> b = bounds;
      ByteMap.RangeResult r;
      if (reverse) {
        r =
            cursor == null
                ? tx.range(map, b.loBytes, b.loInclusive, b.hiBytes, b.hiInclusive, limit, true)
                : tx.range(map, b.loBytes, b.loInclusive, cursor, false, limit, true);
      } else {
        r =
            cursor == null
                ? tx.range(map, b.loBytes, b.loInclusive, b.hiBytes, b.hiInclusive, limit, false)
                : tx.range(map, cursor, false, b.hiBytes, b.hiInclusive, limit, false);
      }
      page.addAll(r.entries);
      more = r.more && !r.entries.isEmpty();
      if (!r.entries.isEmpty()) {
        cursor = r.entries.get(r.entries.size() - 1).getKey();
      }
    }
    return !page.isEmpty();
  }

  @Override
  public Map.Entry<byte[], byte[]> next() {
    if (!hasNext()) {
      throw new NoSuchElementException();
    }
    Map.Entry<byte[], byte[]> e = page.pollFirst();
    lastReturned = e.getKey();
    return e;
  }

  @Override
  public void remove() {
    if (lastReturned == null) {
      throw new IllegalStateException();
    }
    tx.delete(map, lastReturned);
    lastReturned = null;
  }
}
