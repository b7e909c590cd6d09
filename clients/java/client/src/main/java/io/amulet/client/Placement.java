package io.amulet.client;

import java.util.List;

/** Which keys of which map a request touches (crates/amulet-smr Placement). */
final class Placement {
  enum Kind {
    /** Every partition of the map, or of the cluster when map is null. */
    ALL,
    /** The partitions of these keys. */
    KEYS,
    /** The partitions between from and to (null: open). */
    RANGE,
    /**
     * The union of the partitions of {@link #parts}, each of one map (a
     * transaction's commit: its writes and read ranges, Keys::Across).
     */
    ACROSS
  }

  final String map;
  final Kind kind;
  final List<byte[]> keys;
  final byte[] from;
  final boolean fromInclusive;
  final byte[] to;
  final boolean toInclusive;
  final List<Placement> parts;

  private Placement(
      String map, Kind kind, List<byte[]> keys, byte[] from, boolean fromInclusive, byte[] to,
      boolean toInclusive) {
    this(map, kind, keys, from, fromInclusive, to, toInclusive, List.of());
  }

  private Placement(
      String map, Kind kind, List<byte[]> keys, byte[] from, boolean fromInclusive, byte[] to,
      boolean toInclusive, List<Placement> parts) {
    this.parts = parts;
    this.map = map;
    this.kind = kind;
    this.keys = keys;
    this.from = from;
    this.fromInclusive = fromInclusive;
    this.to = to;
    this.toInclusive = toInclusive;
  }

  /** Cluster-wide: create/drop a map, release a snapshot. */
  static Placement cluster() {
    return new Placement(null, Kind.ALL, List.of(), null, false, null, false);
  }

  static Placement all(String map) {
    return new Placement(map, Kind.ALL, List.of(), null, false, null, false);
  }

  static Placement key(String map, byte[] key) {
    return new Placement(map, Kind.KEYS, List.of(key), null, false, null, false);
  }

  static Placement keys(String map, List<byte[]> keys) {
    return new Placement(map, Kind.KEYS, keys, null, false, null, false);
  }

  static Placement range(String map, byte[] from, boolean fromInclusive, byte[] to, boolean toInclusive) {
    return new Placement(map, Kind.RANGE, List.of(), from, fromInclusive, to, toInclusive);
  }

  /** Every partition one of {@code parts} (each of one map, none ACROSS) involves. */
  static Placement across(List<Placement> parts) {
    for (Placement p : parts) {
      if (p.map == null || p.kind == Kind.ACROSS) {
        throw new IllegalArgumentException("a part of an ACROSS placement names one map");
      }
    }
    return new Placement(null, Kind.ACROSS, List.of(), null, false, null, false, List.copyOf(parts));
  }
}
