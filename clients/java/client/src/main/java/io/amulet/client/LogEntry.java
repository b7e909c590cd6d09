package io.amulet.client;

import java.util.Arrays;
import java.util.HexFormat;
import java.util.Objects;

/**
 * One entry of a log and its position ({@link LogTail}). Equal to another
 * of the same position and value bytes.
 *
 * @param position the entry's position in its log
 * @param value the entry (not copied: do not change it)
 */
public record LogEntry(long position, byte[] value) {
  public LogEntry {
    Objects.requireNonNull(value, "value");
  }

  @Override
  public boolean equals(Object o) {
    return o instanceof LogEntry
        && ((LogEntry) o).position == position
        && Arrays.equals(((LogEntry) o).value, value);
  }

  @Override
  public int hashCode() {
    return Long.hashCode(position) * 31 + Arrays.hashCode(value);
  }

  @Override
  public String toString() {
    return "LogEntry[position=" + position + ", value=" + HexFormat.of().formatHex(value) + "]";
  }
}
