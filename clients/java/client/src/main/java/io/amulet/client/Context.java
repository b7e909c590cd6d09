package io.amulet.client;

import com.google.protobuf.ByteString;
import java.util.Arrays;
import java.util.HexFormat;
import java.util.Objects;

/**
 * The causal context of an eventual map's key ({@link EventualMap}): opaque
 * bytes the cluster gives with every read and write ({@link
 * Versioned#context()}) and takes back with a write or delete, which then
 * supersedes exactly the values that reply covered. {@link #EMPTY}
 * supersedes nothing (a write with it adds a sibling). Immutable.
 *
 * <p>The bytes are the cluster's to decode (a version vector,
 * docs/eventual-maps.md); a client never looks inside. They can be kept
 * ({@link #toBytes()}, {@link #toString()} as hex) and given back later
 * ({@link #fromBytes}, {@link #fromHex}); bytes that do not decode are
 * refused by the cluster with {@link IllegalArgumentException} (reason
 * {@code bad-context}).
 */
public final class Context {
  /** The empty context: a write or delete given it supersedes nothing. */
  public static final Context EMPTY = new Context(new byte[0]);

  private final byte[] bytes;

  private Context(byte[] bytes) {
    this.bytes = bytes;
  }

  /** The context of {@code bytes} (copied), as {@link #toBytes()} gave them. */
  public static Context fromBytes(byte[] bytes) {
    Objects.requireNonNull(bytes, "bytes");
    return bytes.length == 0 ? EMPTY : new Context(bytes.clone());
  }

  /**
   * The context of {@code hex} (two hex digits a byte, either case), as
   * {@link #toString()} gave it.
   *
   * @throws IllegalArgumentException if it is not hex
   */
  public static Context fromHex(String hex) {
    Objects.requireNonNull(hex, "hex");
    byte[] b = HexFormat.of().parseHex(hex);
    return b.length == 0 ? EMPTY : new Context(b);
  }

  /** From a reply. */
  static Context of(ByteString bytes) {
    return bytes.isEmpty() ? EMPTY : new Context(bytes.toByteArray());
  }

  /** For a request. */
  ByteString toByteString() {
    return ByteString.copyFrom(bytes);
  }

  /** Its bytes (a copy). */
  public byte[] toBytes() {
    return bytes.clone();
  }

  /** Whether it is {@link #EMPTY} (no bytes). */
  public boolean isEmpty() {
    return bytes.length == 0;
  }

  /** Equal bytes. */
  @Override
  public boolean equals(Object o) {
    return o instanceof Context && Arrays.equals(bytes, ((Context) o).bytes);
  }

  @Override
  public int hashCode() {
    return Arrays.hashCode(bytes);
  }

  /** Its bytes in lowercase hex (empty for {@link #EMPTY}); {@link #fromHex} reads it back. */
  @Override
  public String toString() {
    return HexFormat.of().formatHex(bytes);
  }
}
