package io.amulet.client;

import amulet.v1.AmuletGrpc;
import amulet.v1.AmuletOuterClass;
import amulet.v1.AmuletOuterClass.AccessConfiguration;
import amulet.v1.AmuletOuterClass.ChangeAccessRequest;
import amulet.v1.AmuletOuterClass.CreateTokenRequest;
import amulet.v1.AmuletOuterClass.CreateTokenResponse;
import amulet.v1.AmuletOuterClass.GetAccessRequest;
import amulet.v1.AmuletOuterClass.RoleGrant;
import amulet.v1.AmuletOuterClass.UserRole;
import amulet.v1.AmuletOuterClass.WhoAmIRequest;
import amulet.v1.AmuletOuterClass.WhoAmIResponse;
import amulet.v1.AmuletOuterClass.CreateLog;
import amulet.v1.AmuletOuterClass.CreateMap;
import amulet.v1.AmuletOuterClass.DropLog;
import amulet.v1.AmuletOuterClass.DropMap;
import amulet.v1.AmuletOuterClass.EventualLayout;
import amulet.v1.AmuletOuterClass.GetPartitionMapRequest;
import amulet.v1.AmuletOuterClass.HashLayout;
import amulet.v1.AmuletOuterClass.Layout;
import amulet.v1.AmuletOuterClass.MapRequest;
import amulet.v1.AmuletOuterClass.MapResponse;
import amulet.v1.AmuletOuterClass.MultiAppend;
import amulet.v1.AmuletOuterClass.RangeLayout;
import amulet.v1.AmuletOuterClass.RangeSplit;
import amulet.v1.AmuletOuterClass.StatusRequest;
import amulet.v1.AmuletOuterClass.StatusResponse;
import com.google.protobuf.ByteString;
import io.amulet.codec.KeyCodec;
import io.amulet.codec.ValueCodec;
import io.amulet.map.AmuletMap;
import io.grpc.ManagedChannel;
import io.grpc.ManagedChannelBuilder;
import io.grpc.Metadata;
import io.grpc.StatusRuntimeException;
import io.grpc.netty.shaded.io.grpc.netty.NettyChannelBuilder;
import io.grpc.netty.shaded.io.netty.handler.ssl.SslContext;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;
import java.util.regex.Pattern;

/**
 * A connection to an Amulet cluster, shared freely between threads. It
 * follows the Rust client (crates/amulet-client/src/client.rs):
 *
 * <ul>
 *   <li>the partition map is cached and fetched again when a node answers
 *       {@code stale-map} or {@code not-a-replica}, and after a map or log
 *       is created or dropped;
 *   <li>each operation goes to a replica of the first partition it
 *       involves, stamped with the cached map version: with {@link
 *       ClientConfig#oneReplicaPerPartition()} (the default) the replica this
 *       client prefers (rendezvous hashing of a seed it draws at connect,
 *       the Rust client's function), so operations issued at once share
 *       batches; a replica that gave no answer or answered {@code behind} is
 *       left out for two attempt timeouts, and a resend after a failed
 *       attempt goes to a random other replica. Without it, each attempt
 *       goes to a random replica (not the one that just failed). A
 *       transaction's reads at its read version, snapshots and log tails go
 *       to a random replica either way;
 *   <li>each operation runs in a session (random id) at the session's next
 *       sequence number, one operation in flight per session; after
 *       DEADLINE_EXCEEDED, UNAVAILABLE, an attempt timeout, {@code behind} or
 *       {@code retryable} it is resent with the same session and sequence, so
 *       it applies at most once however often it is sent;
 *   <li>{@code session-expired} reopens the session; a session idle for half
 *       its lease is renewed (KeepAlive) before it is used again.
 * </ul>
 *
 * <p>Eventual maps ({@link #eventualMap}) take none of this: their
 * requests go, without session or map version, to the client's current
 * node, which forwards them to the key's replicas.
 */
public final class AmuletClient implements AutoCloseable {
  /** Largest reply accepted (a range read of many large values). */
  static final int REPLY_BYTES_MAX = 256 * 1024 * 1024;

  /** The first pause between attempts; it doubles up to {@link #BACKOFF_MAX_NANOS}. */
  static final long BACKOFF_MIN_NANOS = TimeUnit.MILLISECONDS.toNanos(10);
  static final long BACKOFF_MAX_NANOS = TimeUnit.MILLISECONDS.toNanos(500);
  private static final Pattern MAP_NAME = Pattern.compile("[A-Za-z0-9_.-]{1,128}");
  static final Metadata.Key<String> AMULET_ERROR =
      Metadata.Key.of("amulet-error", Metadata.ASCII_STRING_MARSHALLER);
  static final Metadata.Key<String> AMULET_REASON =
      Metadata.Key.of("amulet-reason", Metadata.ASCII_STRING_MARSHALLER);

  private final ClientConfig config;
  private final List<String> seeds;
  private volatile Routing routing;
  private final Map<String, ManagedChannel> channels = new ConcurrentHashMap<>();
  private final ReadVersions readVersions = new ReadVersions(this);
  /** How eventual maps' requests are sent (their current node, fail-over). */
  private final EventualRequests eventualRequests = new EventualRequests(this);
  /** Runs map and log requests in sessions, as the class comment says. */
  private final Sessions sessions;
  private volatile boolean closed;
  /** Test hooks: interceptors of every channel. */
  private final io.grpc.ClientInterceptor[] interceptors;
  /** The TLS files of every channel (null: plaintext). */
  private final TlsFiles tls;
  /** Their context (null: plaintext). */
  private final SslContext ssl;

  private AmuletClient(
      List<String> seeds,
      ClientConfig config,
      io.grpc.ClientInterceptor[] interceptors,
      TlsFiles tls,
      SslContext ssl,
      BearerToken bearer) {
    this.seeds = List.copyOf(seeds);
    this.config = config;
    // The bearer token's last: interceptors run last added first, so every
    // other one sees the calls with their authorization.
    if (bearer != null) {
      interceptors = java.util.Arrays.copyOf(interceptors, interceptors.length + 1);
      interceptors[interceptors.length - 1] = bearer;
    }
    this.interceptors = interceptors;
    this.tls = tls;
    this.ssl = ssl;
    this.sessions = new Sessions(this, config);
  }

  /**
   * Connects through any of {@code seeds} (client API addresses, host:port),
   * over TLS when {@link ClientConfig#tlsInUse()} names files (by default:
   * when {@code AMULET_TLS_DIR} is set).
   */
  public static AmuletClient connect(List<String> seeds) {
    return connect(seeds, ClientConfig.defaults());
  }

  /**
   * Connects through any of {@code seeds} with {@code config}: over TLS
   * when {@link ClientConfig#tlsInUse()} names files, else in plaintext;
   * every call carries {@code authorization: Bearer TOKEN} when {@link
   * ClientConfig#tokenInUse()}.
   *
   * @throws IllegalArgumentException naming a TLS file that is missing,
   *     unreadable or unusable; for a bearer token without TLS
   * @throws AmuletException {@link AmuletException.Kind#UNAUTHENTICATED} at
   *     once when a node refuses the credentials (a forged, revoked or
   *     expired token, no credential at all)
   * @throws AmuletException {@link AmuletException.Kind#UNAVAILABLE} when no
   *     seed answered within the operation timeout, or at once when the TLS
   *     handshake failed with every seed or, in plaintext, every seed
   *     answered in TLS (its message says TLS)
   */
  public static AmuletClient connect(List<String> seeds, ClientConfig config) {
    return connect(seeds, config, new io.grpc.ClientInterceptor[0]);
  }

  /** As {@link #connect(List, ClientConfig)}, with gRPC interceptors on every channel (tests). */
  static AmuletClient connect(
      List<String> seeds, ClientConfig config, io.grpc.ClientInterceptor... interceptors) {
    if (seeds.isEmpty()) {
      throw new IllegalArgumentException("no seed address given");
    }
    TlsFiles tls = config.tlsInUse();
    String token = config.tokenInUse(System::getenv);
    checkTokenOverTls(token, tls);
    SslContext ssl = tls == null ? null : tls.sslContext();
    BearerToken bearer = token == null ? null : new BearerToken(token);
    AmuletClient client = new AmuletClient(seeds, config, interceptors, tls, ssl, bearer);
    long deadline = System.nanoTime() + config.operationTimeout().toNanos();
    long backoff = BACKOFF_MIN_NANOS;
    String last = "";
    while (true) {
      int tlsFailures = 0;
      for (String seed : seeds) {
        try {
          client.routing = client.fetchMap(seed);
          return client;
        } catch (StatusRuntimeException e) {
          io.grpc.Status.Code code = e.getStatus().getCode();
          if (code == io.grpc.Status.Code.UNAUTHENTICATED
              || code == io.grpc.Status.Code.PERMISSION_DENIED) {
            // Credentials do not get better by retrying.
            client.close();
            throw AmuletException.fromStatus(
                e.getStatus().withDescription(seed + ": " + e.getStatus().getDescription()));
          }
          String tlsFailure = TlsFiles.failure(e);
          if (tlsFailure != null) {
            tlsFailures++;
            last = seed + ": " + tlsFailure;
          } else if (ssl == null && TlsFiles.answeredInTls(e)) {
            tlsFailures++;
            last = seed + ": the node answered in TLS (its first bytes a TLS record, not HTTP/2)"
                + " and this client connects in plaintext";
          } else {
            last = seed + ": " + e.getStatus();
          }
        } catch (AmuletException e) {
          last = seed + ": " + e.getMessage();
        }
      }
      // A handshake that failed fails again, and a node that answers in TLS
      // answers so again: no point waiting for the timeout.
      if (tlsFailures == seeds.size()) {
        client.close();
        throw new AmuletException(
            AmuletException.Kind.UNAVAILABLE,
            "no seed answered with a partition map (" + last + ")" + TlsFiles.connectHint(client.tls(), last));
      }
      if (System.nanoTime() + backoff >= deadline) {
        client.close();
        throw new AmuletException(
            AmuletException.Kind.UNAVAILABLE,
            "no seed answered with a partition map (" + last + ")" + TlsFiles.connectHint(client.tls(), last));
      }
      sleepNanos(backoff);
      backoff = Math.min(backoff * 2, BACKOFF_MAX_NANOS);
    }
  }

  /**
   * Refuses a bearer token without TLS: sent in plaintext, anyone on the
   * path could take it.
   *
   * @throws IllegalArgumentException for a token ({@code token} not null) without TLS files
   */
  static void checkTokenOverTls(String token, TlsFiles tls) {
    if (token != null && tls == null) {
      throw new IllegalArgumentException(
          "a bearer token is sent over TLS only: give the cluster's CA (ClientConfig.withToken(ca,"
              + " token), or " + TlsFiles.TLS_DIR_ENV + " with " + ClientConfig.TOKEN_ENV + ")");
    }
  }

  /** The settings. */
  public ClientConfig config() {
    return config;
  }

  /** The version of the cached partition map. */
  public long partitionMapVersion() {
    return routing.version;
  }

  /** The partition ids of the cluster, ascending. */
  public List<Integer> partitionIds() {
    return new ArrayList<>(routing.partitions.keySet());
  }

  /** The byte-level API of the map {@code name} (which need not exist yet). */
  public ByteMap byteMap(String name) {
    return new ByteMap(this, checkMapName(name));
  }

  /** A typed, sorted view of the map {@code name} (which need not exist yet). */
  public <K, V> AmuletMap<K, V> map(String name, KeyCodec<K> keys, ValueCodec<V> values) {
    return AmuletMap.of(byteMap(name), keys, values);
  }

  /** Starts a transaction; prefer {@link #transact}, which runs it again on conflicts. */
  public Transaction transaction() {
    return new Transaction(this);
  }

  /**
   * Runs {@code body} in a transaction and commits it; on a conflict or an
   * ended read version (at a read or at the commit) runs it again, with
   * backoff, until it commits or the operation timeout passes. Other
   * exceptions abandon it and propagate. {@code body} may run several
   * times: keep its effects inside the transaction. See {@link Transaction}.
   */
  public <T> T transact(Function<? super Transaction, ? extends T> body) {
    return Transaction.run(this, body);
  }

  /** Creates a hash-partitioned map; throws ALREADY_EXISTS if it exists. */
  public ByteMap createMap(String name) {
    return createMap(name, Layout.newBuilder().setHash(HashLayout.getDefaultInstance()).build());
  }

  /**
   * Creates a range-partitioned map: {@code starts[i]} (ascending, the first
   * empty) begins the keys of partition {@code partitions[i]}.
   */
  public ByteMap createRangeMap(String name, List<byte[]> starts, List<Integer> partitions) {
    if (starts.size() != partitions.size()) {
      throw new IllegalArgumentException("one partition per range start");
    }
    RangeLayout.Builder layout = RangeLayout.newBuilder();
    for (int i = 0; i < starts.size(); i++) {
      layout.addSplits(
          RangeSplit.newBuilder()
              .setStartKey(ByteString.copyFrom(starts.get(i)))
              .setPartition(partitions.get(i)));
    }
    return createMap(name, Layout.newBuilder().setRange(layout).build());
  }

  /** Creates a map with {@code layout}. */
  public ByteMap createMap(String name, Layout layout) {
    checkMapName(name);
    execute(
        MapRequest.newBuilder()
            .setCreateMap(CreateMap.newBuilder().setMap(name).setLayout(layout))
            .build(),
        Placement.cluster());
    return new ByteMap(this, name);
  }

  /** The map {@code name}, created (hash-partitioned) if it does not exist. */
  public ByteMap createMapIfAbsent(String name) {
    try {
      return createMap(name);
    } catch (AmuletException e) {
      if (e.kind() == AmuletException.Kind.ALREADY_EXISTS) {
        return byteMap(name);
      }
      throw e;
    }
  }

  /** Drops the map {@code name} and its entries; throws NOT_FOUND if absent. */
  public void dropMap(String name) {
    checkMapName(name);
    execute(
        MapRequest.newBuilder().setDropMap(DropMap.newBuilder().setMap(name)).build(),
        Placement.cluster());
  }

  /**
   * A handle on the eventual map {@code name} (which need not exist yet):
   * DottedDB's Dynamo-like map of siblings and causal contexts ({@link
   * EventualMap}, docs/eventual-maps.md).
   *
   * <p>Its requests go to this client's current node (a random node of the
   * partition map at first; after this client creates or drops a map or
   * log, the node that executed that), which forwards them to the key's
   * replicas. If that node fails without a verdict (UNAVAILABLE without
   * {@code quorum-not-reached}: down or stopping; no answer within the
   * attempt timeout plus the cluster's 2 s quorum wait), another node
   * becomes current: a read is sent there again (until the operation
   * timeout, then {@code UNAVAILABLE}); a write or delete only when the
   * node surely did not take it (the connection was refused), else it
   * fails with {@code OUTCOME_UNKNOWN}, since it may have taken effect and
   * a resend would write the value again as another sibling. {@code
   * quorum-not-reached} is never resent: {@code UNAVAILABLE} with {@link
   * AmuletException#reason()} {@code quorum-not-reached}. {@code NOT_FOUND}
   * from a node behind the map's creation (the newest partition map the
   * client can get has the map) is sent to another node, reads and writes
   * alike (the node took nothing), until the operation timeout; a map the
   * newest partition map lacks is {@code NOT_FOUND} at once.
   *
   * @throws IllegalArgumentException for a bad name (as a map's)
   */
  public EventualMap eventualMap(String name) {
    return new EventualMap(this, checkMapName(name));
  }

  /**
   * Creates an eventual map, each key on {@code replicas} replicas, with
   * the cluster's default number of virtual nodes (16).
   */
  public EventualMap createEventualMap(String name, int replicas) {
    return createEventualMap(name, replicas, 0);
  }

  /**
   * Creates an eventual map ({@link #eventualMap}): {@code vnodes} virtual
   * nodes on a token ring (0: the cluster's default, 16), each key on
   * {@code replicas} consecutive ones, placed on distinct nodes. Throws
   * {@code ALREADY_EXISTS} if a map or log has the name; {@link
   * IllegalArgumentException} for 0 replicas or more than the nodes, or
   * vnodes above 1,024 (the cluster's {@code eventual-replicas}).
   */
  public EventualMap createEventualMap(String name, int replicas, int vnodes) {
    if (replicas < 0 || vnodes < 0) {
      throw new IllegalArgumentException(
          "negative replicas (" + replicas + ") or vnodes (" + vnodes + ")");
    }
    createMap(
        name,
        Layout.newBuilder()
            .setEventual(EventualLayout.newBuilder().setReplicas(replicas).setVnodes(vnodes))
            .build());
    return new EventualMap(this, name);
  }

  /**
   * A handle on the log {@code name} (which need not exist yet): DLog's
   * append, read, trim, bounds and tail. Maps and logs share one namespace.
   *
   * @throws IllegalArgumentException for a bad name (as a map's)
   */
  public AmuletLog log(String name) {
    return new AmuletLog(this, checkName(name, "log"));
  }

  /**
   * Creates an empty log (on every partition; it lives whole in the
   * partition that owns its name). Maps and logs share one namespace: a
   * name a map or a log has is {@code ALREADY_EXISTS}.
   */
  public AmuletLog createLog(String name) {
    checkName(name, "log");
    execute(
        MapRequest.newBuilder().setCreateLog(CreateLog.newBuilder().setLog(name)).build(),
        Placement.cluster());
    return new AmuletLog(this, name);
  }

  /** The log {@code name}, created if it does not exist. */
  public AmuletLog createLogIfAbsent(String name) {
    try {
      return createLog(name);
    } catch (AmuletException e) {
      if (e.kind() == AmuletException.Kind.ALREADY_EXISTS) {
        return log(name);
      }
      throw e;
    }
  }

  /** Drops the log {@code name} and its entries; throws NOT_FOUND if absent. */
  public void dropLog(String name) {
    checkName(name, "log");
    execute(
        MapRequest.newBuilder().setDropLog(DropLog.newBuilder().setLog(name)).build(),
        Placement.cluster());
  }

  /**
   * Appends each value to its log, all or none, in one step of the order
   * (DLog's multi-append): every reader of these logs sees the entries of
   * one multi-append in the same order relative to every other append. One
   * request to the partitions owning the logs; like every write it is
   * applied at most once, however often it is resent.
   *
   * @param entries (log name, value) pairs; a log may appear several times
   *     and gets consecutive positions
   * @return the positions, in the order given
   * @throws IllegalArgumentException for a bad log name, no entries, or
   *     entries above the cluster's limits (nothing is appended)
   * @throws AmuletException {@code NOT_FOUND} if a log does not exist
   *     (nothing is appended)
   */
  public long[] multiAppend(List<? extends Map.Entry<String, byte[]>> entries) {
    MultiAppend.Builder b = MultiAppend.newBuilder();
    List<Placement> parts = new ArrayList<>(entries.size());
    for (Map.Entry<String, byte[]> e : entries) {
      String log = checkName(e.getKey(), "log");
      byte[] value = Objects.requireNonNull(e.getValue(), "value");
      b.addEntries(
          AmuletOuterClass.LogEntry.newBuilder().setLog(log).setValue(ByteString.copyFrom(value)));
      parts.add(AmuletLog.placement(log));
    }
    MapResponse r =
        execute(MapRequest.newBuilder().setMultiAppend(b).build(), Placement.across(parts));
    if (r.getResultCase() != MapResponse.ResultCase.POSITIONS
        || r.getPositions().getPositionsCount() != entries.size()) {
      throw new AmuletException(
          AmuletException.Kind.PROTOCOL,
          "expected " + entries.size() + " positions, got " + r.getResultCase());
    }
    long[] out = new long[entries.size()];
    for (int i = 0; i < out.length; i++) {
      out[i] = r.getPositions().getPositions(i);
    }
    return out;
  }

  /** The Status of the node at {@code address}. */
  public StatusResponse status(String address) {
    try {
      return stub(address).status(StatusRequest.getDefaultInstance());
    } catch (StatusRuntimeException e) {
      throw AmuletException.fromStatus(e.getStatus());
    }
  }

  // ---- access control (docs/security.md) -----------------------------------

  /**
   * {@code role} gets {@code permission} on {@code map} ({@code "*"}: every
   * map and log), replacing the permission it had there. Ordered on the
   * global stream: it holds at every replica from its point of the order
   * on. Needs the cluster admin role, as every access change.
   *
   * @throws AmuletException {@code PERMISSION_DENIED} without the cluster
   *     admin role (nothing changed); {@code UNAUTHENTICATED} for refused
   *     credentials; neither is retried
   * @throws IllegalArgumentException for a bad name or a full access
   *     configuration (the cluster's {@code access-change-refused})
   */
  public void grant(String role, String map, Permission permission) {
    Objects.requireNonNull(permission, "permission");
    changeAccess(
        ChangeAccessRequest.newBuilder()
            .setGrant(
                RoleGrant.newBuilder()
                    .setRole(Objects.requireNonNull(role, "role"))
                    .setMap(Objects.requireNonNull(map, "map"))
                    .setPermission(permission.toProto()))
            .build());
  }

  /** {@code role} loses its grant on {@code map}; as {@link #grant}. */
  public void revoke(String role, String map) {
    changeAccess(
        ChangeAccessRequest.newBuilder()
            .setRevoke(
                RoleGrant.newBuilder()
                    .setRole(Objects.requireNonNull(role, "role"))
                    .setMap(Objects.requireNonNull(map, "map")))
            .build());
  }

  /**
   * {@code user} gets {@code role} ({@code cluster-admin} is the built-in
   * role allowed everything); as {@link #grant}.
   */
  public void assignRole(String user, String role) {
    changeAccess(
        ChangeAccessRequest.newBuilder()
            .setAssignRole(
                UserRole.newBuilder()
                    .setUser(Objects.requireNonNull(user, "user"))
                    .setRole(Objects.requireNonNull(role, "role")))
            .build());
  }

  /**
   * {@code user} loses {@code role}; as {@link #grant} (the last cluster
   * admin cannot lose the role: {@link IllegalArgumentException}).
   */
  public void unassignRole(String user, String role) {
    changeAccess(
        ChangeAccessRequest.newBuilder()
            .setUnassignRole(
                UserRole.newBuilder()
                    .setUser(Objects.requireNonNull(user, "user"))
                    .setRole(Objects.requireNonNull(role, "role")))
            .build());
  }

  /**
   * The bearer token {@code id} ({@link CreatedToken#id()}) stops being
   * valid at once, everywhere: every later request with it, on connections
   * open before too, is {@code UNAUTHENTICATED}. As {@link #grant}.
   */
  public void revokeToken(String id) {
    changeAccess(
        ChangeAccessRequest.newBuilder().setRevokeToken(Objects.requireNonNull(id, "id")).build());
  }

  /**
   * Orders one access change (any of {@link #grant}, {@link #revoke},
   * {@link #assignRole}, {@link #unassignRole}, {@link #revokeToken}); as
   * {@link #grant}. Sent to one node, with the operation timeout; sent to
   * another only when the node refused the connection (it surely took
   * nothing).
   *
   * @throws AmuletException {@code OUTCOME_UNKNOWN} when no answer came in
   *     time (it may have taken effect)
   */
  public void changeAccess(ChangeAccessRequest change) {
    Objects.requireNonNull(change, "change");
    if (change.getChangeCase() == ChangeAccessRequest.ChangeCase.CHANGE_NOT_SET) {
      throw new IllegalArgumentException("an access change with no change set");
    }
    AdminCall.call(this, "change access", false, stub -> stub.changeAccess(change));
  }

  /**
   * Member {@code node} leaves the cluster gracefully (docs/membership.md);
   * cluster admin only. Refused with nothing changed ({@code
   * FAILED_PRECONDITION}, {@code INVALID_ARGUMENT} for node 0) as the
   * proto's {@code ChangeMembership} lists.
   */
  public void leave(int node) {
    MembershipCalls.leave(this, node);
  }

  /**
   * A new node at {@code peerAddress} (serving clients at {@code
   * clientAddress}, both {@code ip:port}) joins the cluster
   * (docs/membership.md); returns its id. Cluster admin only. Refused as
   * the proto's {@code ChangeMembership} lists; not sent again when no
   * answer came (it may have been ordered: look at the view first).
   */
  public int join(String peerAddress, String clientAddress) {
    return MembershipCalls.join(this, peerAddress, clientAddress);
  }

  /**
   * A new bearer token for {@code user}, valid for {@code ttlSeconds} (1 to
   * 31,536,000; 0: a day). The secret is in the reply only ({@link
   * CreatedToken#token()}): a client given it by {@link
   * ClientConfig#withToken} acts as {@code user}, with the user's roles,
   * until it expires or is revoked ({@link #revokeToken}). Ordered like an
   * access change and, like one, needs the cluster admin role; as {@link
   * #grant}.
   */
  public CreatedToken createToken(String user, long ttlSeconds) {
    Objects.requireNonNull(user, "user");
    if (ttlSeconds < 0) {
      throw new IllegalArgumentException("token lifetime " + ttlSeconds + " s < 0");
    }
    CreateTokenResponse r =
        AdminCall.call(
            this,
            "create token",
            false,
            stub ->
                stub.createToken(
                    CreateTokenRequest.newBuilder().setUser(user).setTtlSeconds(ttlSeconds).build()));
    return new CreatedToken(r.getToken(), r.getId(), r.getExpiresUnixMicros());
  }

  /**
   * The access configuration (users' roles, roles' grants, tokens' ids,
   * users and expiries; never a secret) as a node's replicas last executed
   * it. Cluster admin only ({@code PERMISSION_DENIED} otherwise).
   */
  public AccessConfiguration access() {
    return AdminCall.call(
        this, "get access", true, stub -> stub.getAccess(GetAccessRequest.getDefaultInstance()));
  }

  /** Who a node takes this client for: its user, token id, roles. */
  public WhoAmI whoAmI() {
    WhoAmIResponse r =
        AdminCall.call(
            this, "who am I", true, stub -> stub.whoAmI(WhoAmIRequest.getDefaultInstance()));
    return new WhoAmI(
        r.getUser(), r.getToken().isEmpty() ? null : r.getToken(), r.getRolesList(), r.getSecure());
  }

  /** Closes the idle sessions (best effort; they would expire anyway) and the channels. */
  @Override
  public void close() {
    if (closed) {
      return;
    }
    closed = true;
    sessions.closeIdle();
    for (ManagedChannel c : channels.values()) {
      c.shutdownNow();
    }
    for (ManagedChannel c : channels.values()) {
      try {
        c.awaitTermination(1, TimeUnit.SECONDS);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        break;
      }
    }
    channels.clear();
  }

  static String checkMapName(String name) {
    return checkName(name, "map");
  }

  /** Maps and logs name alike. */
  static String checkName(String name, String what) {
    if (name == null || !MAP_NAME.matcher(name).matches()) {
      throw new IllegalArgumentException(
          "bad " + what + " name " + name + ": use 1 to 128 ASCII letters, digits, '_', '-' or '.'");
    }
    return name;
  }

  // ---- channels and the map ----------------------------------------------

  private ManagedChannel channel(String address) {
    return channels.computeIfAbsent(
        address,
        a -> {
          int colon = a.lastIndexOf(':');
          if (colon < 0) {
            throw new IllegalArgumentException("bad address " + a + ": use host:port");
          }
          String host = a.substring(0, colon);
          int port = Integer.parseInt(a.substring(colon + 1));
          if (ssl == null) {
            return ManagedChannelBuilder.forAddress(host, port)
                .usePlaintext()
                .maxInboundMessageSize(REPLY_BYTES_MAX)
                .disableRetry()
                .intercept(interceptors)
                .build();
          }
          // The address given, the name verified: every node certificate
          // names amulet-node (TlsFiles#NODE_SERVER_NAME).
          return NettyChannelBuilder.forAddress(host, port)
              .sslContext(ssl)
              .overrideAuthority(TlsFiles.NODE_SERVER_NAME)
              .maxInboundMessageSize(REPLY_BYTES_MAX)
              .disableRetry()
              .intercept(interceptors)
              .build();
        });
  }

  /** The TLS files this client connects with; null: plaintext. */
  public TlsFiles tls() {
    return tls;
  }

  /** A stub of {@code address} whose calls end after the attempt timeout. */
  AmuletGrpc.AmuletBlockingStub stub(String address) {
    return AmuletGrpc.newBlockingStub(channel(address))
        .withDeadlineAfter(config.attemptTimeout().toMillis(), TimeUnit.MILLISECONDS);
  }

  /** A random node of the cached map, else a random seed. */
  String anyNode() {
    Routing r = routing;
    List<String> all = r == null ? seeds : new ArrayList<>(r.addresses.values());
    if (all.isEmpty()) {
      all = seeds;
    }
    return all.get(ThreadLocalRandom.current().nextInt(all.size()));
  }

  private Routing fetchMap(String address) {
    return Routing.fromProto(stub(address).getPartitionMap(GetPartitionMapRequest.getDefaultInstance()));
  }

  /** Fetches the partition map (from {@code address}, or any node) and keeps it if not older. */
  void refreshMap(String address) {
    try {
      Routing fresh = fetchMap(address != null ? address : anyNode());
      synchronized (this) {
        if (routing == null || fresh.version >= routing.version) {
          routing = fresh;
        }
      }
    } catch (RuntimeException e) {
      // The next attempt tries again.
    }
  }

  Routing routing() {
    return routing;
  }

  /**
   * Runs one map request (its op set, no header) in a session, retrying as
   * the protocol allows.
   */
  MapResponse execute(MapRequest op, Placement placement) {
    return sessions.execute(op, placement);
  }

  /** The seed addresses given to {@link #connect}. */
  List<String> seeds() {
    return seeds;
  }

  /** Whether {@link #close} was called. */
  boolean isClosed() {
    return closed;
  }

  /** How map and log commands choose their replica (tests). */
  ReplicaChooser replicas() {
    return sessions.replicas();
  }

  /** How this client's eventual maps send their requests. */
  EventualRequests eventualRequests() {
    return eventualRequests;
  }

  /** The read versions this client's transactions share. */
  ReadVersions readVersions() {
    return readVersions;
  }

  /** The channel to {@code address} (transactions' reads, batchers, eventual requests). */
  ManagedChannel channelAt(String address) {
    return channel(address);
  }

  static void sleepNanos(long nanos) {
    try {
      TimeUnit.NANOSECONDS.sleep(nanos);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new AmuletException(AmuletException.Kind.UNAVAILABLE, "interrupted");
    }
  }
}
