package io.amulet.client;

import io.grpc.Metadata;
import io.grpc.Status;

/**
 * An operation failed after the client's own retries. Invalid requests (key
 * or value too large, bad range) are thrown as {@link
 * IllegalArgumentException} instead, as the collections contract expects;
 * a log position outside the log is {@link Kind#OUT_OF_RANGE}.
 */
public class AmuletException extends RuntimeException {
  private static final long serialVersionUID = 1L;

  /** Why, as in crates/amulet-client/src/error.rs. */
  public enum Kind {
    /** No such map, log or snapshot; nothing changed. */
    NOT_FOUND,
    /** A map or log of that name exists already; nothing changed. */
    ALREADY_EXISTS,
    /**
     * A log position outside the log: a read below its first position
     * (those entries were trimmed) or past its end, or a trim past its end;
     * nothing changed.
     */
    OUT_OF_RANGE,
    /** A cluster limit was reached (open snapshots); nothing changed. */
    RESOURCE_EXHAUSTED,
    /**
     * The state the request needs is not there (a mergeFields on a value
     * that is not a field record; a cluster that serves no maps); nothing
     * changed.
     */
    FAILED_PRECONDITION,
    /** It may or may not have taken effect (deadline passed while retrying, or reply lost). */
    OUTCOME_UNKNOWN,
    /**
     * No node answered in time; a read changed nothing. For an {@link
     * EventualMap}: also fewer replicas than {@code r} or {@code w}
     * answered ({@link #reason()} {@code quorum-not-reached}), and then a
     * write may have taken effect at some replicas.
     */
    UNAVAILABLE,
    /**
     * The node did not accept the client's credentials (with TLS: a
     * certificate naming no user, or a node's); nothing changed. Never
     * retried.
     */
    UNAUTHENTICATED,
    /** The client's user may not do this; nothing changed. Never retried. */
    PERMISSION_DENIED,
    /** A node answered something this client does not understand. */
    PROTOCOL,
    /**
     * A transaction's commit (or one of its reads, early) found that a key
     * it read, {@link #conflictKey()} of {@link #conflictMap()}, was written
     * after its read version; nothing was applied. {@link
     * AmuletClient#transact} runs the transaction again.
     */
    CONFLICT,
    /**
     * A transaction's read version ended (its lease passed, or it was
     * ended) before the transaction committed; nothing was applied. {@link
     * AmuletClient#transact} runs the transaction again.
     */
    READ_VERSION_TOO_OLD
  }

  static final Metadata.Key<String> CONFLICT_MAP =
      Metadata.Key.of("amulet-conflict-map", Metadata.ASCII_STRING_MARSHALLER);
  static final Metadata.Key<byte[]> CONFLICT_KEY =
      Metadata.Key.of("amulet-conflict-key-bin", Metadata.BINARY_BYTE_MARSHALLER);

  private final Kind kind;
  private final String conflictMap;
  private final byte[] conflictKey;
  private final String reason;

  public AmuletException(Kind kind, String message) {
    this(kind, message, null, null, null);
  }

  private AmuletException(
      Kind kind, String message, String conflictMap, byte[] conflictKey, String reason) {
    super(kind + ": " + message);
    this.kind = kind;
    this.conflictMap = conflictMap;
    this.conflictKey = conflictKey;
    this.reason = reason;
  }

  /** A {@code kind} with the cluster's {@code amulet-reason} (null: none). */
  static AmuletException withReason(Kind kind, String message, String reason) {
    return new AmuletException(kind, message, null, null, reason);
  }

  /**
   * A {@link Kind#CONFLICT}: {@code key} of {@code map} (null: the map as a
   * whole, cleared, dropped or created; or not known) was written after the
   * transaction's read version.
   */
  public static AmuletException conflict(String map, byte[] key, String message) {
    return new AmuletException(
        Kind.CONFLICT, message, map, key == null ? null : key.clone(), null);
  }

  /** Why it failed. */
  public Kind kind() {
    return kind;
  }

  /**
   * The {@code amulet-reason} the cluster gave for the refusal, a stable
   * kebab-case name (proto/amulet/v1/amulet.proto), or null. Set by the
   * operations of {@link EventualMap} (e.g. {@code quorum-not-reached} for
   * {@link Kind#UNAVAILABLE}, {@code not-eventual} for {@link
   * Kind#FAILED_PRECONDITION}); null for the other operations.
   */
  public String reason() {
    return reason;
  }

  /**
   * Whether running the transaction again from a new read version may
   * succeed: a {@link Kind#CONFLICT} or {@link Kind#READ_VERSION_TOO_OLD}.
   */
  public boolean isTransactionRetryable() {
    return kind == Kind.CONFLICT || kind == Kind.READ_VERSION_TOO_OLD;
  }

  /** The map of a {@link Kind#CONFLICT}, or null when not known (or another kind). */
  public String conflictMap() {
    return conflictMap;
  }

  /**
   * The key of a {@link Kind#CONFLICT} (a copy), or null: the map as a
   * whole changed, or the key is not known (or another kind).
   */
  public byte[] conflictKey() {
    return conflictKey == null ? null : conflictKey.clone();
  }

  /**
   * The exception a final gRPC status means, given its {@code amulet-error}
   * kind ({@code conflict}, {@code read-version-too-old}) and trailers
   * (null: none).
   */
  static RuntimeException fromStatus(Status status, String errorKind, Metadata trailers) {
    String message = status.getDescription() == null ? "" : status.getDescription();
    if ("conflict".equals(errorKind)) {
      String map = trailers == null ? null : trailers.get(CONFLICT_MAP);
      byte[] key = trailers == null ? null : trailers.get(CONFLICT_KEY);
      return conflict(map, key, message);
    }
    if ("read-version-too-old".equals(errorKind)) {
      return new AmuletException(Kind.READ_VERSION_TOO_OLD, message);
    }
    return fromStatus(status);
  }

  /** The exception a final gRPC status means. */
  static RuntimeException fromStatus(Status status) {
    return fromStatus(status, null);
  }

  /**
   * The exception a final gRPC status means, with its {@code amulet-reason}
   * (null: none; an {@link IllegalArgumentException} names it in its
   * message).
   */
  static RuntimeException fromStatus(Status status, String reason) {
    String message = status.getDescription() == null ? "" : status.getDescription();
    String tls = TlsFiles.failure(status.getCause());
    if (tls != null) {
      message += " (" + tls + ")";
    }
    Kind kind;
    switch (status.getCode()) {
      case INVALID_ARGUMENT:
        return new IllegalArgumentException(reason == null ? message : message + " (" + reason + ")");
      case OUT_OF_RANGE:
        kind = Kind.OUT_OF_RANGE;
        break;
      case NOT_FOUND:
        kind = Kind.NOT_FOUND;
        break;
      case ALREADY_EXISTS:
        kind = Kind.ALREADY_EXISTS;
        break;
      case RESOURCE_EXHAUSTED:
        kind = Kind.RESOURCE_EXHAUSTED;
        break;
      case FAILED_PRECONDITION:
        kind = Kind.FAILED_PRECONDITION;
        break;
      case UNKNOWN:
      case DEADLINE_EXCEEDED:
        kind = Kind.OUTCOME_UNKNOWN;
        break;
      case UNAVAILABLE:
        kind = Kind.UNAVAILABLE;
        break;
      case UNAUTHENTICATED:
        kind = Kind.UNAUTHENTICATED;
        break;
      case PERMISSION_DENIED:
        kind = Kind.PERMISSION_DENIED;
        break;
      default:
        kind = Kind.PROTOCOL;
        message = status.getCode() + ": " + message;
        break;
    }
    return new AmuletException(kind, message, null, null, reason);
  }
}
