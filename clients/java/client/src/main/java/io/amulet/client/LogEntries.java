package io.amulet.client;

import java.util.Arrays;
import java.util.HexFormat;
import java.util.List;
import java.util.stream.Collectors;

/**
 * The entries of one {@link AmuletLog#read}: at positions {@code from},
 * {@code from + 1}, ..., with the log's bounds when it was read. Equal to
 * another of the same numbers and entry bytes.
 *
 * @param from the position of the first entry
 * @param entries the entries (an unmodifiable list; the arrays are not
 *     copied: do not change them)
 * @param first the log's first position when read (below it: trimmed)
 * @param end the log's end when read (the position of its next append)
 */
public record LogEntries(long from, List<byte[]> entries, long first, long end) {
  public LogEntries {
    entries = List.copyOf(entries);
  }

  /** The log's bounds when it was read. */
  public LogBounds bounds() {
    return new LogBounds(first, end);
  }

  /** The position after the last entry: where the next read goes on. */
  public long next() {
    return from + entries.size();
  }

  /** The entry at index {@code i} with its position. */
  public LogEntry entry(int i) {
    return new LogEntry(from + i, entries.get(i));
  }

  @Override
  public boolean equals(Object o) {
    if (!(o instanceof LogEntries)) {
      return false;
    }
    LogEntries other = (LogEntries) o;
    if (other.from != from || other.first != first || other.end != end
        || other.entries.size() != entries.size()) {
      return false;
    }
    for (int i = 0; i < entries.size(); i++) {
      if (!Arrays.equals(entries.get(i), other.entries.get(i))) {
        return false;
      }
    }
    return true;
  }

  @Override
  public int hashCode() {
    int h = Long.hashCode(from);
    for (byte[] e : entries) {
      h = h * 31 + Arrays.hashCode(e);
    }
    return (h * 31 + Long.hashCode(first)) * 31 + Long.hashCode(end);
  }

  @Override
  public String toString() {
    return "LogEntries[from=" + from + ", entries="
        + entries.stream().map(HexFormat.of()::formatHex).collect(Collectors.toList())
        + ", first=" + first + ", end=" + end + "]";
  }
}
