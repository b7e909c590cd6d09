package io.amulet.client;

import java.util.List;
import java.util.Objects;

/** Who a node takes the client for ({@link AmuletClient#whoAmI}). Immutable. */
public final class WhoAmI {
  private final String user;
  private final String tokenId;
  private final List<String> roles;
  private final boolean secure;

  WhoAmI(String user, String tokenId, List<String> roles, boolean secure) {
    this.user = Objects.requireNonNull(user, "user");
    this.tokenId = tokenId;
    this.roles = List.copyOf(roles);
    this.secure = secure;
  }

  /** The user (empty on a node without TLS: nobody is checked). */
  public String user() {
    return user;
  }

  /** The id of the bearer token the client authenticated with; null for a certificate. */
  public String tokenId() {
    return tokenId;
  }

  /** The user's roles. */
  public List<String> roles() {
    return roles;
  }

  /** Whether the node checks who its clients are (TLS on). */
  public boolean secure() {
    return secure;
  }

  @Override
  public boolean equals(Object o) {
    if (!(o instanceof WhoAmI)) {
      return false;
    }
    WhoAmI w = (WhoAmI) o;
    return user.equals(w.user) && Objects.equals(tokenId, w.tokenId) && roles.equals(w.roles)
        && secure == w.secure;
  }

  @Override
  public int hashCode() {
    return Objects.hash(user, tokenId, roles, secure);
  }

  @Override
  public String toString() {
    return "WhoAmI(user=" + user + (tokenId == null ? "" : ", token " + tokenId) + ", roles=" + roles
        + ", secure=" + secure + ")";
  }
}
