package io.amulet.client;

import java.nio.file.Path;
import java.time.Duration;
import java.util.Objects;
import java.util.function.Function;

/**
 * How an {@link AmuletClient} behaves; the defaults are the Rust client's
 * (crates/amulet-client/src/config.rs). Immutable: the {@code with} methods
 * return a changed copy.
 */
public final class ClientConfig {
  private final Duration attemptTimeout;
  private final Duration operationTimeout;
  private final Duration sessionLease;
  private final Duration snapshotLease;
  private final int pageEntries;
  private final int rangeEntries;
  private final int batchesInFlight;
  private final Duration transactionLease;
  private final boolean oneReplicaPerPartition;
  /** TLS files and bearer token. */
  private final Auth auth;

  /**
   * How the client authenticates: its TLS files and bearer token, each
   * either set (by {@link #withTls}, {@link #withTlsDir}, {@link
   * #withToken}, {@link #withPlaintext}, {@link #withoutToken}) or taken
   * from the environment at {@link AmuletClient#connect}. Immutable.
   */
  private static final class Auth {
    /** The TLS files (null: plaintext, or {@code AMULET_TLS_DIR} when {@link #tlsSet} is false). */
    final TlsFiles tls;
    /** Whether {@link #tls} was set. */
    final boolean tlsSet;
    /** The bearer token (null: none, or {@code AMULET_TOKEN} when {@link #tokenSet} is false). */
    final String token;
    /** Whether {@link #token} was set. */
    final boolean tokenSet;

    Auth(TlsFiles tls, boolean tlsSet, String token, boolean tokenSet) {
      this.tls = tls;
      this.tlsSet = tlsSet;
      this.token = token;
      this.tokenSet = tokenSet;
    }
  }

  /** Environment variable holding the bearer token of a client given none. */
  public static final String TOKEN_ENV = "AMULET_TOKEN";

  private ClientConfig(
      Duration attemptTimeout,
      Duration operationTimeout,
      Duration sessionLease,
      Duration snapshotLease,
      int pageEntries,
      int rangeEntries,
      int batchesInFlight,
      Duration transactionLease,
      boolean oneReplicaPerPartition,
      Auth auth) {
    this.auth = auth;
    this.batchesInFlight = batchesInFlight;
    this.transactionLease = transactionLease;
    this.oneReplicaPerPartition = oneReplicaPerPartition;
    this.attemptTimeout = attemptTimeout;
    this.operationTimeout = operationTimeout;
    this.sessionLease = sessionLease;
    this.snapshotLease = snapshotLease;
    this.pageEntries = pageEntries;
    this.rangeEntries = rangeEntries;
  }

  /**
   * The defaults: 2 s per attempt, 30 s per operation, 120 s session lease,
   * 10 s transaction lease, one replica per partition; TLS with the files
   * of {@code AMULET_TLS_DIR} and {@code AMULET_USER} when that variable is
   * set, else plaintext ({@link #tlsInUse()}); the bearer token of {@code
   * AMULET_TOKEN} when that variable is set (then only the CA of {@code
   * AMULET_TLS_DIR} is used; {@link #tokenInUse()}).
   */
  public static ClientConfig defaults() {
    return new ClientConfig(
        Duration.ofSeconds(2), Duration.ofSeconds(30), Duration.ofSeconds(120),
        Duration.ofSeconds(300), 1000, 1000, 2, Duration.ofSeconds(10), true,
        new Auth(null, false, null, false));
  }

  /** How long one attempt may take before it is resent elsewhere. */
  public Duration attemptTimeout() {
    return attemptTimeout;
  }

  /** How long an operation may take in all, retries included. */
  public Duration operationTimeout() {
    return operationTimeout;
  }

  /** Session lease asked for; sessions idle for half of it are renewed. */
  public Duration sessionLease() {
    return sessionLease;
  }

  /** Snapshot lease asked for (an abandoned snapshot is freed after it). */
  public Duration snapshotLease() {
    return snapshotLease;
  }

  /** Entries per snapshot page. */
  public int pageEntries() {
    return pageEntries;
  }

  /** Entries per range-read page when iterating or scanning a range. */
  public int rangeEntries() {
    return rangeEntries;
  }

  public ClientConfig withAttemptTimeout(Duration d) {
    return new ClientConfig(d, operationTimeout, sessionLease, snapshotLease, pageEntries, rangeEntries, batchesInFlight, transactionLease, oneReplicaPerPartition, auth);
  }

  public ClientConfig withOperationTimeout(Duration d) {
    return new ClientConfig(attemptTimeout, d, sessionLease, snapshotLease, pageEntries, rangeEntries, batchesInFlight, transactionLease, oneReplicaPerPartition, auth);
  }

  public ClientConfig withSessionLease(Duration d) {
    return new ClientConfig(attemptTimeout, operationTimeout, d, snapshotLease, pageEntries, rangeEntries, batchesInFlight, transactionLease, oneReplicaPerPartition, auth);
  }

  public ClientConfig withSnapshotLease(Duration d) {
    return new ClientConfig(attemptTimeout, operationTimeout, sessionLease, d, pageEntries, rangeEntries, batchesInFlight, transactionLease, oneReplicaPerPartition, auth);
  }

  /** Entries per snapshot page, 1..10000 (the server's range_entries_max). */
  public ClientConfig withPageEntries(int n) {
    checkPage(n);
    return new ClientConfig(attemptTimeout, operationTimeout, sessionLease, snapshotLease, n, rangeEntries, batchesInFlight, transactionLease, oneReplicaPerPartition, auth);
  }

  /** Entries per range page, 1..10000 (the server's range_entries_max). */
  public ClientConfig withRangeEntries(int n) {
    checkPage(n);
    return new ClientConfig(attemptTimeout, operationTimeout, sessionLease, snapshotLease, pageEntries, n, batchesInFlight, transactionLease, oneReplicaPerPartition, auth);
  }

  /**
   * ExecuteBatch calls in flight to one node at once (default 2): the
   * operations threads issue while all are busy ride together in the next
   * one. 0 turns batching off (one Execute call per operation).
   */
  public int batchesInFlight() {
    return batchesInFlight;
  }

  public ClientConfig withBatchesInFlight(int n) {
    if (n < 0) {
      throw new IllegalArgumentException("batches in flight " + n + " < 0");
    }
    return new ClientConfig(
        attemptTimeout, operationTimeout, sessionLease, snapshotLease, pageEntries, rangeEntries, n, transactionLease, oneReplicaPerPartition, auth);
  }

  /**
   * Lease of a transaction's read version (default 10 s, at most the
   * cluster's {@code read_version_lease_micros_max}, 60 s by default): a
   * transaction that has not committed this long after its first read
   * fails with {@link AmuletException.Kind#READ_VERSION_TOO_OLD} (and
   * {@link AmuletClient#transact} runs it again).
   */
  public Duration transactionLease() {
    return transactionLease;
  }

  public ClientConfig withTransactionLease(Duration d) {
    if (d.isNegative() || d.isZero() || d.toNanos() < 1000) {
      throw new IllegalArgumentException("transaction lease " + d + " below 1 microsecond");
    }
    return new ClientConfig(
        attemptTimeout, operationTimeout, sessionLease, snapshotLease, pageEntries, rangeEntries,
        batchesInFlight, d, oneReplicaPerPartition, auth);
  }

  /**
   * Whether every map and log command of a partition goes to one replica
   * this client prefers (default true), so that the operations its threads
   * issue at once share ExecuteBatch calls ({@link #batchesInFlight()}):
   * the client draws a random seed when it connects and prefers, of each
   * partition's replicas, the one with the highest score of (seed, node)
   * (rendezvous hashing, the Rust client's function), so many clients
   * spread over the replicas. A replica that gave no answer or answered
   * {@code behind} is left out for two attempt timeouts (each of its
   * clients moves to its next-highest one, then comes back); a resend after
   * a failed attempt goes to a random other replica. False: every attempt
   * goes to a random replica. Transactions' reads at their read version,
   * snapshots and log tails pick a random replica either way.
   */
  public boolean oneReplicaPerPartition() {
    return oneReplicaPerPartition;
  }

  public ClientConfig withOneReplicaPerPartition(boolean on) {
    return new ClientConfig(
        attemptTimeout, operationTimeout, sessionLease, snapshotLease, pageEntries, rangeEntries,
        batchesInFlight, transactionLease, on, auth);
  }

  /**
   * The TLS files set by {@link #withTls}, {@link #withTlsDir} or {@link
   * #withToken} (the CA only); null when none were (plaintext, unless {@link
   * #tlsInUse()} finds {@code AMULET_TLS_DIR}).
   */
  public TlsFiles tls() {
    return auth.tls;
  }

  /**
   * Connect over TLS with mutual authentication: trust only the CA
   * certificate(s) of {@code caPem} (not the JDK's trust store), present the
   * certificate chain {@code certPem} (leaf first) with its private key
   * {@code keyPem} (PKCS#8 PEM, {@code -----BEGIN PRIVATE KEY-----}), and
   * accept only a node certificate naming the DNS name {@value
   * TlsFiles#NODE_SERVER_NAME}, whatever address the node is reached at.
   * The certificate names the user: no bearer token is sent (not even
   * {@code AMULET_TOKEN}'s).
   *
   * @throws IllegalArgumentException naming the first file that is missing
   *     or unreadable (their contents are checked at {@link AmuletClient#connect})
   */
  public ClientConfig withTls(Path caPem, Path certPem, Path keyPem) {
    return withTls(TlsFiles.of(caPem, certPem, keyPem));
  }

  /**
   * {@link #withTls(Path, Path, Path)} with {@code dir/ca.pem}, {@code
   * dir/<user>.pem} and {@code dir/<user>.key}, the layout {@code amulet
   * dev} and {@code amulet cert} write (whose dev user is {@code admin}).
   *
   * @throws IllegalArgumentException for a bad user name, or naming the
   *     first file that is missing or unreadable
   */
  public ClientConfig withTlsDir(Path dir, String user) {
    return withTls(TlsFiles.inDir(dir, user));
  }

  /**
   * {@link #withTls(Path, Path, Path)} with {@code files} (which may be
   * {@link TlsFiles#caOnly}: then the client presents no credential at all,
   * and the nodes refuse it with {@code UNAUTHENTICATED}). No bearer token
   * is sent.
   */
  public ClientConfig withTls(TlsFiles files) {
    Objects.requireNonNull(files, "files");
    files.checkReadable();
    return with(new Auth(files, true, null, true));
  }

  /**
   * Connect over TLS trusting only the CA certificate(s) of {@code caPem}
   * (a node certificate must name {@value TlsFiles#NODE_SERVER_NAME}),
   * presenting no certificate, and authenticate with the bearer token
   * {@code token} ({@code amt1.ID.SECRET}, from {@code amulet token create}
   * or {@link AmuletClient#createToken}): every call, unary and streaming,
   * carries the gRPC metadata {@code authorization: Bearer TOKEN}. The
   * token is a secret: {@link #toString()} never shows it. The nodes refuse
   * a malformed, unknown, forged, revoked or expired token with {@code
   * UNAUTHENTICATED}, never retried.
   *
   * @throws IllegalArgumentException if {@code caPem} is missing or
   *     unreadable, or the token is empty or has characters gRPC metadata
   *     cannot carry (anything but printable ASCII without spaces)
   */
  public ClientConfig withToken(Path caPem, String token) {
    Objects.requireNonNull(caPem, "caPem");
    String t = checkToken(token);
    return with(new Auth(TlsFiles.caOnly(caPem), true, t, true));
  }

  /**
   * Send no bearer token, whatever {@code AMULET_TOKEN} says (the TLS
   * files stay as they are).
   */
  public ClientConfig withoutToken() {
    return with(new Auth(auth.tls, auth.tlsSet, null, true));
  }

  /**
   * Connect in plaintext, with no bearer token, even if {@code
   * AMULET_TLS_DIR} or {@code AMULET_TOKEN} is set (a node that requires
   * TLS refuses such a client).
   */
  public ClientConfig withPlaintext() {
    return with(new Auth(null, true, null, true));
  }

  private ClientConfig with(Auth a) {
    return new ClientConfig(
        attemptTimeout, operationTimeout, sessionLease, snapshotLease, pageEntries, rangeEntries,
        batchesInFlight, transactionLease, oneReplicaPerPartition, a);
  }

  /**
   * The TLS files {@link AmuletClient#connect} uses, null for plaintext:
   * those of {@link #withTls}/{@link #withTlsDir}/{@link #withToken}; after
   * {@link #withPlaintext} none; else, when the environment variable {@code
   * AMULET_TLS_DIR} is set (not empty), that directory's {@code ca.pem} and,
   * unless a bearer token is in use ({@code AMULET_TOKEN}: then the CA
   * only), {@code <user>.pem} and {@code <user>.key}, where the user is
   * {@code AMULET_USER} (default {@code admin}); else none.
   */
  public TlsFiles tlsInUse() {
    return tlsInUse(System::getenv);
  }

  /** {@link #tlsInUse()} with the environment {@code env} (tests). */
  TlsFiles tlsInUse(Function<String, String> env) {
    if (auth.tlsSet) {
      return auth.tls;
    }
    return tokenInUse(env) != null ? TlsFiles.caFromEnv(env) : TlsFiles.fromEnv(env);
  }

  /**
   * Whether {@link AmuletClient#connect} sends a bearer token: one given to
   * {@link #withToken}, else (unless {@link #withTls}, {@link #withTlsDir},
   * {@link #withPlaintext} or {@link #withoutToken} was called) the
   * environment variable {@code AMULET_TOKEN} when set and not empty. The
   * token itself is never shown.
   */
  public boolean tokenInUse() {
    return tokenInUse(System::getenv) != null;
  }

  /**
   * The bearer token {@link AmuletClient#connect} sends with {@code env},
   * null for none. Secret: never log it.
   *
   * @throws IllegalArgumentException for an {@code AMULET_TOKEN} gRPC
   *     metadata cannot carry
   */
  String tokenInUse(Function<String, String> env) {
    if (auth.tokenSet) {
      return auth.token;
    }
    String t = env.apply(TOKEN_ENV);
    if (t == null || t.trim().isEmpty()) {
      return null;
    }
    return checkToken(t);
  }

  /** The token trimmed, if gRPC metadata can carry it. */
  private static String checkToken(String token) {
    Objects.requireNonNull(token, "token");
    String t = token.trim();
    if (t.isEmpty()) {
      throw new IllegalArgumentException("empty bearer token");
    }
    for (int i = 0; i < t.length(); i++) {
      char c = t.charAt(i);
      if (c < 0x21 || c > 0x7e) {
        // Never the token itself in a message.
        throw new IllegalArgumentException(
            "the bearer token has a character gRPC metadata cannot carry (at index " + i
                + "): expected amt1.ID.SECRET from amulet token create");
      }
    }
    return t;
  }

  private static void checkPage(int n) {
    if (n < 1 || n > 10_000) {
      throw new IllegalArgumentException("page size " + n + " outside 1..10000");
    }
  }

  /** The settings; a bearer token shows as {@code <secret>}, never itself. */
  @Override
  public String toString() {
    String tls = auth.tlsSet ? (auth.tls == null ? "plaintext" : auth.tls.toString()) : "$" + TlsFiles.TLS_DIR_ENV;
    String token = auth.tokenSet ? (auth.token == null ? "none" : "<secret>") : "$" + TOKEN_ENV;
    return "ClientConfig{attemptTimeout=" + attemptTimeout
        + ", operationTimeout=" + operationTimeout
        + ", sessionLease=" + sessionLease
        + ", snapshotLease=" + snapshotLease
        + ", pageEntries=" + pageEntries
        + ", rangeEntries=" + rangeEntries
        + ", batchesInFlight=" + batchesInFlight
        + ", transactionLease=" + transactionLease
        + ", oneReplicaPerPartition=" + oneReplicaPerPartition
        + ", tls=" + tls
        + ", token=" + token + "}";
  }
}
