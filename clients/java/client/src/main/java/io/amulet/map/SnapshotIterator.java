package io.amulet.map;

import io.amulet.client.Snapshot;
import java.lang.ref.Cleaner;
import java.util.Arrays;
import java.util.Iterator;
import java.util.Map;
import java.util.NoSuchElementException;

/**
 * Ascending, from a snapshot; released as soon as every partition's last
 * page is buffered (so an iterator over a small map holds nothing in the
 * cluster once it has its first entry), and closed if it is dropped
 * before then ({@link Snapshot#closeWhenUnreachable}).
 */
final class SnapshotIterator implements Iterator<Map.Entry<byte[], byte[]>> {
  private final AmuletMap<?, ?> map;
  private Snapshot snapshot;
  private Cleaner.Cleanable cleanable;
  private Map.Entry<byte[], byte[]> next;
  private boolean done;

  SnapshotIterator(AmuletMap<?, ?> map) {
    this.map = map;
  }

  @Override
  public boolean hasNext() {
    if (next != null) {
      return true;
    }
    if (done) {
      return false;
    }
    if (snapshot == null) {
      if (map.emptyRange()) {
        done = true;
        return false;
      }
      snapshot = map.raw.snapshot(snapshotAfter());
      cleanable = snapshot.closeWhenUnreachable(this);
    }
    while (true) {
      boolean more;
      try {
        more = snapshot.hasNext();
      } catch (RuntimeException e) {
        finish();
        throw e;
      }
      if (!more) {
        finish();
        return false;
      }
      Map.Entry<byte[], byte[]> e = snapshot.next();
      if (map.tooLowBytes(e.getKey())) {
        continue;
      }
      if (map.tooHighBytes(e.getKey())) {
        finish();
        return false;
      }
      next = e;
      // Release early: the rest is buffered when every partition is drained.
      if (snapshot.drained()) {
        snapshot.release();
      }
      return true;
    }
  }

  private void finish() {
    done = true;
    if (snapshot != null) {
      snapshot = null;
      cleanable.clean();
    }
  }

  @Override
  public Map.Entry<byte[], byte[]> next() {
    if (!hasNext()) {
      throw new NoSuchElementException();
    }
    Map.Entry<byte[], byte[]> e = next;
    next = null;
    return e;
  }

  /**
   * The key to start a snapshot after so that it begins at or below lo
   * (the snapshot's {@code after} is exclusive; the excess is filtered).
   */
  private byte[] snapshotAfter() {
    if (map.loBytes == null) {
      return null;
    }
    if (!map.loInclusive) {
      return map.loBytes;
    }
    if (map.loBytes.length == 0) {
      return null;
    }
    byte[] after = map.loBytes.clone();
    int last = after.length - 1;
    if (after[last] == 0) {
      return Arrays.copyOf(after, last);
    }
    after[last]--;
    return after;
  }
}
