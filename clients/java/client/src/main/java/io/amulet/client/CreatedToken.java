package io.amulet.client;

import java.util.Objects;

/**
 * A bearer token as {@link AmuletClient#createToken} made it. The secret
 * is in {@link #token()} only (the cluster keeps its SHA-256): give it to
 * the client that uses it ({@link ClientConfig#withToken}) and keep it
 * secret. {@link #toString()} shows the id and expiry, never the token.
 */
public final class CreatedToken {
  private final String token;
  private final String id;
  private final long expiresUnixMicros;

  CreatedToken(String token, String id, long expiresUnixMicros) {
    this.token = Objects.requireNonNull(token, "token");
    this.id = Objects.requireNonNull(id, "id");
    this.expiresUnixMicros = expiresUnixMicros;
  }

  /** {@code amt1.ID.SECRET}: what a client sends. Secret: never log it. */
  public String token() {
    return token;
  }

  /** The token's public id (16 hex digits), for {@link AmuletClient#revokeToken}. */
  public String id() {
    return id;
  }

  /** When it expires, microseconds since the Unix epoch (wall-clock time). */
  public long expiresUnixMicros() {
    return expiresUnixMicros;
  }

  @Override
  public boolean equals(Object o) {
    if (!(o instanceof CreatedToken)) {
      return false;
    }
    CreatedToken t = (CreatedToken) o;
    return token.equals(t.token) && id.equals(t.id) && expiresUnixMicros == t.expiresUnixMicros;
  }

  @Override
  public int hashCode() {
    return Objects.hash(id, expiresUnixMicros);
  }

  @Override
  public String toString() {
    return "CreatedToken(" + id + ", expires " + Long.toUnsignedString(expiresUnixMicros) + " µs)";
  }
}
