package io.amulet.tuple;

/**
 * Bytes that are not a valid tuple encoding, or a value the encoding cannot
 * hold. An {@link IllegalArgumentException} so that map methods given an
 * unencodable key fail the way the collections contract expects.
 */
public final class TupleException extends IllegalArgumentException {
  private static final long serialVersionUID = 1L;

  /** What is wrong, in the categories of spec/tuple-vectors.json. */
  public enum Kind {
    TRUNCATED,
    UNTERMINATED,
    INVALID_UTF8,
    UNKNOWN_TYPE_CODE,
    TOO_DEEP,
    /** Packing: a value of a type or size the encoding has no form for. */
    UNENCODABLE
  }

  private final Kind kind;
  private final int offset;

  TupleException(Kind kind, int offset, String message) {
    super(offset >= 0 ? "invalid tuple encoding at byte " + offset + ": " + message : message);
    this.kind = kind;
    this.offset = offset;
  }

  /** The category. */
  public Kind kind() {
    return kind;
  }

  /** Offset of the faulty element in the input, or -1 when packing. */
  public int offset() {
    return offset;
  }
}
