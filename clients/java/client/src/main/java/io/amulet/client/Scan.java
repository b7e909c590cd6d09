package io.amulet.client;

import java.util.Arrays;
import java.util.List;
import java.util.Map;

/**
 * A range scan in progress ({@link ByteMap#scan}): the entries between two
 * bounds in ascending key order, a page at a time, as the Rust client's
 * {@code DMap::scan} / {@code Scan::next_page}
 * (crates/amulet-client/src/scan.rs; docs/dynatree.md, "Range scans").
 *
 * <p>Each page is one linearizable {@code range} read of at most {@code
 * page} entries, bounded by the scan's end and also by the end of the range
 * partition the page's first key falls in (by the client's cached partition
 * map), so it is ordered on that partition's stream alone, not on the
 * global stream with every partition of the scan, and no reply holds more
 * than a page. The next page starts after the last key read, or, once a
 * read finds no more entries before the partition's end, at the next
 * range's first key. A map not in ranges (a hash map) is read a page at a
 * time over all its partitions.
 *
 * <p>The scan as a whole is not one point of the order: a key written
 * behind the scan's position is not seen, one written ahead of it is. For
 * a consistent view of the whole map, open a {@link ByteMap#snapshot()}. A
 * split or merge between pages costs nothing: a page's bounds come from the
 * client's map at that page, and a page built on a map gone stale spans the
 * new partitions and is ordered on the global stream, still exact.
 *
 * <p>Not thread-safe: one thread at a time calls {@link #nextPage}.
 */
public final class Scan {
  private final ByteMap map;
  /** Where the next page starts (null: the map's first key). */
  private byte[] from;
  private boolean fromInclusive;
  /** Where the scan ends (null: past the map's last key). */
  private final byte[] to;
  private final boolean toInclusive;
  private final int page;
  private boolean done;
  private long reads;

  Scan(ByteMap map, byte[] from, boolean fromInclusive, byte[] to, boolean toInclusive, int page) {
    if (page < 1) {
      throw new IllegalArgumentException("scan: page " + page + " < 1");
    }
    this.map = map;
    this.from = from == null ? null : from.clone();
    this.fromInclusive = fromInclusive;
    this.to = to == null ? null : to.clone();
    this.toInclusive = toInclusive;
    this.page = page;
  }

  /**
   * The next page in ascending key order: at most {@code page} entries and
   * never empty; null once the scan has passed its end (and every call
   * after). Sends one {@code range} read per page, and one for each range
   * partition found empty on the way. A failed read changes nothing: the
   * same page can be asked for again.
   *
   * @throws IllegalArgumentException as {@link ByteMap#range} (a start above
   *     the end, a page above the cluster's range limit)
   * @throws AmuletException as {@link ByteMap#range}
   */
  public List<Map.Entry<byte[], byte[]>> nextPage() {
    while (!done) {
      byte[] cut = rangeEnd();
      // The page ends at the partition's end when that comes first.
      byte[] pageTo = to;
      boolean pageToInclusive = toInclusive;
      byte[] continuesAt = null;
      if (cut != null) {
        int c = to == null ? 1 : Arrays.compareUnsigned(to, cut);
        if (c > 0 || (c == 0 && toInclusive)) {
          pageTo = cut;
          pageToInclusive = false;
          continuesAt = cut;
        }
      }
      ByteMap.RangeResult r = map.range(from, fromInclusive, pageTo, pageToInclusive, page, false);
      reads++;
      if (!r.entries.isEmpty()) {
        from = r.entries.get(r.entries.size() - 1).getKey();
        fromInclusive = false;
      }
      if (!r.more) {
        if (continuesAt != null) {
          from = continuesAt;
          fromInclusive = true;
        } else {
          done = true;
        }
      }
      if (!r.entries.isEmpty()) {
        return r.entries;
      }
    }
    return null;
  }

  /** Range reads sent so far (one per page, and one per range partition found empty). */
  public long reads() {
    return reads;
  }

  /**
   * The first key of the range after the one the next page starts in, by
   * the client's cached map; null for a map not in ranges (or unknown to
   * the cached map), or from the last range on.
   */
  private byte[] rangeEnd() {
    Routing routing = map.client().routing();
    Routing.Range[] ranges = routing == null ? null : routing.keyspaces.get(map.name());
    if (ranges == null) {
      return null;
    }
    for (Routing.Range r : ranges) {
      if (from == null ? r.start.length > 0 : Arrays.compareUnsigned(r.start, from) > 0) {
        return r.start;
      }
    }
    return null;
  }

  @Override
  public String toString() {
    return "Scan(" + map.name() + ", page " + page + ", reads " + reads + (done ? ", done)" : ")");
  }
}
