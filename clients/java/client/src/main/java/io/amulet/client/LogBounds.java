package io.amulet.client;

/**
 * A log's first position still held and its end ({@link AmuletLog#bounds},
 * {@link AmuletLog#trim}).
 *
 * @param first the first position held; every entry below it was trimmed
 * @param end the position the next append gets
 */
public record LogBounds(long first, long end) {
  /** The number of entries held. */
  public long size() {
    return end - first;
  }
}
