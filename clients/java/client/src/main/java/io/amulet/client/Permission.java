package io.amulet.client;

import amulet.v1.AmuletOuterClass;

/**
 * What a role may do with a map or log ({@link AmuletClient#grant}); each
 * includes the ones before it (docs/security.md).
 */
public enum Permission {
  /** Read: gets, ranges, snapshots, transactions' reads, log reads and tails. */
  READ(AmuletOuterClass.Permission.PERMISSION_READ),
  /** Read and write the map's entries or append to and trim the log. */
  WRITE(AmuletOuterClass.Permission.PERMISSION_WRITE),
  /** Write, and create or drop the map or log. */
  ADMIN(AmuletOuterClass.Permission.PERMISSION_ADMIN);

  private final AmuletOuterClass.Permission proto;

  Permission(AmuletOuterClass.Permission proto) {
    this.proto = proto;
  }

  /** The wire value. */
  public AmuletOuterClass.Permission toProto() {
    return proto;
  }

  /**
   * The permission of a wire value.
   *
   * @throws IllegalArgumentException for {@code PERMISSION_UNSPECIFIED} or an unknown value
   */
  public static Permission fromProto(AmuletOuterClass.Permission p) {
    for (Permission x : values()) {
      if (x.proto == p) {
        return x;
      }
    }
    throw new IllegalArgumentException("no permission " + p);
  }
}
