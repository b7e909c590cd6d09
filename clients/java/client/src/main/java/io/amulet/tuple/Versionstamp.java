package io.amulet.tuple;

import java.util.Arrays;
import java.util.HexFormat;

/**
 * A complete 96-bit versionstamp (tuple type code 0x33), kept as 12 opaque
 * bytes. Amulet has no versionstamp operations; the type exists so that keys
 * written by FoundationDB-style tools round-trip.
 */
public final class Versionstamp {
  /** Encoded length in bytes. */
  public static final int LENGTH = 12;

  private final byte[] bytes;

  private Versionstamp(byte[] bytes) {
    this.bytes = bytes;
  }

  /** A versionstamp from exactly 12 bytes (copied). */
  public static Versionstamp of(byte[] bytes) {
    if (bytes.length != LENGTH) {
      throw new IllegalArgumentException("a versionstamp has 12 bytes, not " + bytes.length);
    }
    return new Versionstamp(bytes.clone());
  }

  /** Its 12 bytes (a copy). */
  public byte[] bytes() {
    return bytes.clone();
  }

  byte[] raw() {
    return bytes;
  }

  @Override
  public boolean equals(Object o) {
    return o instanceof Versionstamp && Arrays.equals(bytes, ((Versionstamp) o).bytes);
  }

  @Override
  public int hashCode() {
    return Arrays.hashCode(bytes);
  }

  @Override
  public String toString() {
    return "Versionstamp(" + HexFormat.of().formatHex(bytes) + ")";
  }
}
