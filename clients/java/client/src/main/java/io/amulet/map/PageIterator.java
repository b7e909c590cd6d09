package io.amulet.map;

import io.amulet.client.ByteMap;
import java.util.ArrayDeque;
import java.util.Arrays;
import java.util.Iterator;
import java.util.Map;
import java.util.NoSuchElementException;

/** Pages of range reads, ascending or descending, each page linearizable. */
final class PageIterator implements Iterator<Map.Entry<byte[], byte[]>> {
  private final AmuletMap<?, ?> map;
  private final boolean reverse;
  private final ArrayDeque<Map.Entry<byte[], byte[]>> page = new ArrayDeque<>();
  private byte[] cursor;
  private boolean more = true;

  PageIterator(AmuletMap<?, ?> map, boolean reverse) {
    this.map = map;
    this.reverse = reverse;
    if (map.emptyRange()) {
      more = false;
    }
  }

  @Override
  public boolean hasNext() {
    if (page.isEmpty() && more) {
      int limit = map.raw.client().config().rangeEntries();
      ByteMap.RangeResult r;
      if (reverse) {
        r =
            cursor == null
                ? map.raw.range(
                    map.loBytes, map.loInclusive, map.hiBytes, map.hiInclusive, limit, true)
                : map.raw.range(map.loBytes, map.loInclusive, cursor, false, limit, true);
      } else {
        r =
            cursor == null
                ? map.raw.range(
                    map.loBytes, map.loInclusive, map.hiBytes, map.hiInclusive, limit, false)
                : map.raw.range(cursor, false, map.hiBytes, map.hiInclusive, limit, false);
      }
      page.addAll(r.entries);
      more = r.more && !r.entries.isEmpty();
      if (!r.entries.isEmpty()) {
        cursor = r.entries.get(r.entries.size() - 1).getKey();
      }
      if (more && map.loBytes != null && reverse && Arrays.equals(cursor, map.loBytes)) {
        more = false;
      }
      if (more && map.hiBytes != null && !reverse && Arrays.equals(cursor, map.hiBytes)) {
        more = false;
      }
    }
    return !page.isEmpty();
  }

  @Override
  public Map.Entry<byte[], byte[]> next() {
    if (!hasNext()) {
      throw new NoSuchElementException();
    }
    return page.pollFirst();
  }
}
