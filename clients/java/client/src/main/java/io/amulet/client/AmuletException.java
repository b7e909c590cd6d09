package io.amulet.client;

import io.grpc.Status;

/**
 * An operation failed after the client's own retries. Invalid requests (key
 * or value too large, bad range) are thrown as {@link
 * IllegalArgumentException} instead, as the collections contract expects.
 */
public class AmuletException extends RuntimeException {
  private static final long serialVersionUID = 1L;

  /** Why, as in crates/amulet-client/src/error.rs. */
  public enum Kind {
    /** No such map or snapshot; nothing changed. */
    NOT_FOUND,
    /** The map exists already; nothing changed. */
    ALREADY_EXISTS,
    /** A cluster limit was reached (open snapshots); nothing changed. */
    RESOURCE_EXHAUSTED,
    /** It may or may not have taken effect (deadline passed while retrying, or reply lost). */
    OUTCOME_UNKNOWN,
    /** No node answered in time; a read changed nothing. */
    UNAVAILABLE,
    /** A node answered something this client does not understand. */
    PROTOCOL
  }

  private final Kind kind;

  public AmuletException(Kind kind, String message) {
    super(kind + ": " + message);
    this.kind = kind;
  }

  /** Why it failed. */
  public Kind kind() {
    return kind;
  }

  /** The exception a final gRPC status means. */
  static RuntimeException fromStatus(Status status) {
    String message = status.getDescription() == null ? "" : status.getDescription();
    switch (status.getCode()) {
      case INVALID_ARGUMENT:
      case OUT_OF_RANGE:
        return new IllegalArgumentException(message);
      case NOT_FOUND:
        return new AmuletException(Kind.NOT_FOUND, message);
      case ALREADY_EXISTS:
        return new AmuletException(Kind.ALREADY_EXISTS, message);
      case RESOURCE_EXHAUSTED:
        return new AmuletException(Kind.RESOURCE_EXHAUSTED, message);
      case UNKNOWN:
      case DEADLINE_EXCEEDED:
        return new AmuletException(Kind.OUTCOME_UNKNOWN, message);
      case UNAVAILABLE:
        return new AmuletException(Kind.UNAVAILABLE, message);
      default:
        return new AmuletException(Kind.PROTOCOL, status.getCode() + ": " + message);
    }
  }
}
