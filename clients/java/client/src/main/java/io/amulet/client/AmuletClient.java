package io.amulet.client;

import amulet.v1.AmuletGrpc;
import amulet.v1.AmuletOuterClass;
import amulet.v1.AmuletOuterClass.CloseSessionRequest;
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
import amulet.v1.AmuletOuterClass.OpenSessionRequest;
import amulet.v1.AmuletOuterClass.RangeLayout;
import amulet.v1.AmuletOuterClass.RangeSplit;
import amulet.v1.AmuletOuterClass.ReadSnapshotRequest;
import amulet.v1.AmuletOuterClass.RequestHeader;
import amulet.v1.AmuletOuterClass.SnapshotPage;
import amulet.v1.AmuletOuterClass.StatusRequest;
import amulet.v1.AmuletOuterClass.StatusResponse;
import amulet.v1.AmuletOuterClass.TailLogRequest;
import com.google.protobuf.ByteString;
import io.amulet.codec.KeyCodec;
import io.amulet.codec.ValueCodec;
import io.amulet.map.AmuletMap;
import io.grpc.CallOptions;
import io.grpc.ClientCall;
import io.grpc.ManagedChannel;
import io.grpc.ManagedChannelBuilder;
import io.grpc.Metadata;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import java.security.SecureRandom;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.Iterator;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
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
 *   <li>each operation goes to a random replica of the first partition it
 *       involves, stamped with the cached map version;
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
  /** An eventual map's request: fewer than r or w replicas answered. */
  static final String QUORUM_NOT_REACHED = "quorum-not-reached";
  /**
   * How long a node waits for an eventual map's replicas before it answers
   * {@code quorum-not-reached}; an eventual request's attempt may take this
   * much longer than {@link ClientConfig#attemptTimeout()}.
   */
  static final Duration EVENTUAL_QUORUM_WAIT = Duration.ofSeconds(2);
  private static final SecureRandom RANDOM = new SecureRandom();

  private final ClientConfig config;
  private final List<String> seeds;
  private volatile Routing routing;
  private final Map<String, ManagedChannel> channels = new ConcurrentHashMap<>();
  private final Map<String, Batcher> batchers = new ConcurrentHashMap<>();
  private final List<Session> idleSessions = new ArrayList<>();
  private final ReadVersions readVersions = new ReadVersions(this);
  /** The node eventual maps' requests go to (null: none chosen yet). */
  private final AtomicReference<String> eventualNode = new AtomicReference<>();
  private volatile boolean closed;
  /** Test hooks: interceptors of every channel. */
  private final io.grpc.ClientInterceptor[] interceptors;

  /** A session and its next sequence number; one operation at a time. */
  static final class Session {
    final long id;
    long nextSequence = 1;
    long renewedNanos;
    boolean open;

    Session() {
      long id;
      do {
        id = RANDOM.nextLong();
      } while (id == 0);
      this.id = id;
    }
  }

  /** One attempt failed in a way the protocol retries. */
  private static final class Retry extends Exception {
    private static final long serialVersionUID = 1L;
    final boolean maybeApplied;
    /** The replica called the map the attempt was routed by stale. */
    final boolean staleMap;

    Retry(String why, boolean maybeApplied) {
      this(why, maybeApplied, false);
    }

    Retry(String why, boolean maybeApplied, boolean staleMap) {
      super(why, null, false, false);
      this.maybeApplied = maybeApplied;
      this.staleMap = staleMap;
    }
  }

  /**
   * What the attempts of one sequence share: the partition map they are
   * routed by and the replica the last one failed at.
   */
  private static final class Attempts {
    /**
     * Kept until a replica calls it stale: under a newer map (another
     * thread refreshed the cache) the command may belong to another stream
     * (a partition split or merged in between), whose session record does
     * not know an execution under the old one, so a resend there could
     * apply twice. A replica answers a stale-map resend it executed with
     * its reply.
     */
    Routing pinned;
    /** Where the last attempt failed; the next goes elsewhere if it can. */
    String failedAt;
  }

  private AmuletClient(
      List<String> seeds, ClientConfig config, io.grpc.ClientInterceptor[] interceptors) {
    this.seeds = List.copyOf(seeds);
    this.config = config;
    this.interceptors = interceptors;
  }

  /** Connects through any of {@code seeds} (client API addresses, host:port). */
  public static AmuletClient connect(List<String> seeds) {
    return connect(seeds, ClientConfig.defaults());
  }

  /** Connects through any of {@code seeds} with {@code config}. */
  public static AmuletClient connect(List<String> seeds, ClientConfig config) {
    return connect(seeds, config, new io.grpc.ClientInterceptor[0]);
  }

  /** As {@link #connect(List, ClientConfig)}, with gRPC interceptors on every channel (tests). */
  static AmuletClient connect(
      List<String> seeds, ClientConfig config, io.grpc.ClientInterceptor... interceptors) {
    if (seeds.isEmpty()) {
      throw new IllegalArgumentException("no seed address given");
    }
    AmuletClient client = new AmuletClient(seeds, config, interceptors);
    long deadline = System.nanoTime() + config.operationTimeout().toNanos();
    long backoff = BACKOFF_MIN_NANOS;
    String last = "";
    while (true) {
      for (String seed : seeds) {
        try {
          client.routing = client.fetchMap(seed);
          return client;
        } catch (StatusRuntimeException e) {
          last = seed + ": " + e.getStatus();
        } catch (AmuletException e) {
          last = seed + ": " + e.getMessage();
        }
      }
      if (System.nanoTime() + backoff >= deadline) {
        client.close();
        throw new AmuletException(
            AmuletException.Kind.UNAVAILABLE, "no seed answered with a partition map (" + last + ")");
      }
      sleepNanos(backoff);
      backoff = Math.min(backoff * 2, BACKOFF_MAX_NANOS);
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

  /** Closes the idle sessions (best effort; they would expire anyway) and the channels. */
  @Override
  public void close() {
    if (closed) {
      return;
    }
    closed = true;
    List<Session> idle;
    synchronized (idleSessions) {
      idle = new ArrayList<>(idleSessions);
      idleSessions.clear();
    }
    for (Session s : idle) {
      if (!s.open || routing == null) {
        continue;
      }
      try {
        stub(anyNode())
            .closeSession(
                CloseSessionRequest.newBuilder()
                    .setSession(s.id)
                    .setMapVersion(routing.version)
                    .build());
      } catch (RuntimeException e) {
        // Best effort.
      }
    }
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

  // ---- the protocol ------------------------------------------------------

  private static boolean readOnly(MapRequest.OpCase op) {
    switch (op) {
      case GET:
      case CONTAINS_KEY:
      case CONTAINS_VALUE:
      case SIZE:
      case IS_EMPTY:
      case FIRST_ENTRY:
      case LAST_ENTRY:
      case NEAREST_ENTRY:
      case RANGE:
      case READ_LOG:
      case LOG_BOUNDS:
      // A begin changes nothing but a read version that ends by its lease.
      case BEGIN_TRANSACTION:
        return true;
      default:
        return false;
    }
  }

  /**
   * Runs one map request (its op set, no header) in a session, retrying as
   * the protocol allows.
   */
  MapResponse execute(MapRequest op, Placement placement) {
    if (closed) {
      throw new IllegalStateException("the client is closed");
    }
    Session session = takeSession();
    String[] answeredBy = new String[1];
    // Creating or dropping a map or a log changes the partition map's keyspaces.
    boolean admin =
        op.getOpCase() == MapRequest.OpCase.CREATE_MAP
            || op.getOpCase() == MapRequest.OpCase.DROP_MAP
            || op.getOpCase() == MapRequest.OpCase.CREATE_LOG
            || op.getOpCase() == MapRequest.OpCase.DROP_LOG;
    try {
      return executeIn(session, op, placement, answeredBy);
    } finally {
      // The sequence is used up whatever happened: a later operation must
      // not be mistaken for a resend of this one.
      session.nextSequence++;
      giveBack(session);
      if (admin) {
        // The map version moved; the node that answered has the new map.
        refreshMap(answeredBy[0]);
        if (answeredBy[0] != null) {
          // It executed the change: eventual requests go there next.
          eventualNode.set(answeredBy[0]);
        }
      }
    }
  }

  private MapResponse executeIn(Session s, MapRequest op, Placement placement, String[] answeredBy) {
    long deadline = System.nanoTime() + config.operationTimeout().toNanos();
    long backoff = BACKOFF_MIN_NANOS;
    boolean maybeApplied = false;
    String last;
    Attempts attempts = new Attempts();
    while (true) {
      try {
        ensureSession(s);
        return attempt(s, op, placement, answeredBy, attempts);
      } catch (Retry r) {
        maybeApplied |= r.maybeApplied;
        last = r.getMessage();
        if (r.staleMap) {
          attempts.pinned = null;
        }
      }
      if (System.nanoTime() + backoff >= deadline) {
        String why = "gave up after " + config.operationTimeout() + ": " + last;
        if (maybeApplied && !readOnly(op.getOpCase())) {
          throw new AmuletException(AmuletException.Kind.OUTCOME_UNKNOWN, why);
        }
        throw new AmuletException(AmuletException.Kind.UNAVAILABLE, why);
      }
      sleepNanos(backoff);
      backoff = Math.min(backoff * 2, BACKOFF_MAX_NANOS);
    }
  }

  private void ensureSession(Session s) throws Retry {
    long now = System.nanoTime();
    if (s.open && now - s.renewedNanos <= config.sessionLease().toNanos() / 2) {
      return;
    }
    String address = anyNode();
    OpenSessionRequest request =
        OpenSessionRequest.newBuilder()
            .setSession(s.id)
            .setLeaseMicros(config.sessionLease().toNanos() / 1000)
            .setMapVersion(routing.version)
            .build();
    try {
      AmuletGrpc.AmuletBlockingStub stub = attemptStub(address);
      if (s.open) {
        stub.keepAlive(request);
      } else {
        stub.openSession(request);
      }
    } catch (StatusRuntimeException e) {
      onError(e, s, address);
    }
    s.open = true;
    s.renewedNanos = now;
  }

  private MapResponse attempt(
      Session s, MapRequest op, Placement placement, String[] answeredBy, Attempts attempts)
      throws Retry {
    if (attempts.pinned == null) {
      attempts.pinned = routing;
    }
    Routing r = attempts.pinned;
    int partition = r.partitionsFor(placement).get(0);
    List<String> replicas = new ArrayList<>(r.replicaAddresses(partition));
    if (replicas.isEmpty()) {
      throw new AmuletException(
          AmuletException.Kind.PROTOCOL, "no address for a replica of partition " + partition);
    }
    if (replicas.size() > 1) {
      replicas.remove(attempts.failedAt);
    }
    String address = replicas.get(ThreadLocalRandom.current().nextInt(replicas.size()));
    attempts.failedAt = address;
    MapRequest request =
        op.toBuilder()
            .setHeader(
                RequestHeader.newBuilder()
                    .setMapVersion(r.version)
                    .setPartition(partition)
                    .setSession(s.id)
                    .setSequence(s.nextSequence))
            .build();
    try {
      MapResponse response;
      // A commit goes alone: ExecuteBatch's Failure carries no conflict
      // map and key (amulet-conflict-map, amulet-conflict-key-bin).
      if (config.batchesInFlight() == 0 || op.getOpCase() == MapRequest.OpCase.COMMIT) {
        response = attemptStub(address).execute(request);
      } else {
        response =
            batchers
                .computeIfAbsent(
                    address,
                    a ->
                        new Batcher(
                            channel(a), config.batchesInFlight(), config.attemptTimeout().toMillis()))
                .execute(request, config.attemptTimeout().toMillis());
      }
      answeredBy[0] = address;
      attempts.failedAt = null;
      return response;
    } catch (StatusRuntimeException e) {
      onError(e, s, address);
      throw new AssertionError("onError always throws");
    }
  }

  /** Throws Retry for what the protocol retries, else the final error. */
  private void onError(StatusRuntimeException e, Session s, String address) throws Retry {
    Status status = e.getStatus();
    Metadata trailers = e.getTrailers();
    String kind = trailers == null ? null : trailers.get(AMULET_ERROR);
    String message = address + ": " + status.getCode() + ": " + status.getDescription();
    if (kind != null) {
      switch (kind) {
        case "stale-map":
        case "not-a-replica":
          refreshMap(null);
          throw new Retry(message, false, true);
        case "session-expired":
          s.open = false;
          throw new Retry(message, false);
        case "behind":
        case "retryable":
          // Not ordered (behind), or refused for a passing state of the
          // cluster (retryable): resend with the same sequence.
          throw new Retry(message, false);
        case "stale-sequence":
          throw new AmuletException(
              AmuletException.Kind.PROTOCOL, "the session ran ahead of this client");
        case "reply-lost":
          throw new AmuletException(AmuletException.Kind.OUTCOME_UNKNOWN, message);
        case "conflict":
        case "read-version-too-old":
          // A transaction's commit was refused; nothing applied.
          throw AmuletException.fromStatus(status, kind, trailers);
        default:
          break;
      }
    }
    switch (status.getCode()) {
      case DEADLINE_EXCEEDED:
      case UNAVAILABLE:
      case CANCELLED:
      case UNKNOWN:
        throw new Retry(message, true);
      default:
        throw AmuletException.fromStatus(status);
    }
  }

  // ---- eventual maps -----------------------------------------------------

  /**
   * Runs one eventual map request ({@code call} on a stub of the current
   * node), failing over as {@link #eventualMap} says.
   */
  <T> T eventual(
      String map,
      boolean write,
      java.util.function.Function<AmuletGrpc.AmuletBlockingStub, T> call) {
    if (closed) {
      throw new IllegalStateException("the client is closed");
    }
    long deadline = System.nanoTime() + config.operationTimeout().toNanos();
    long backoff = BACKOFF_MIN_NANOS;
    Set<String> failed = new HashSet<>();
    String address = currentEventualNode();
    while (true) {
      StatusRuntimeException error;
      try {
        return call.apply(
            AmuletGrpc.newBlockingStub(channel(address))
                .withDeadlineAfter(
                    config.attemptTimeout().plus(EVENTUAL_QUORUM_WAIT).toMillis(),
                    TimeUnit.MILLISECONDS));
      } catch (StatusRuntimeException e) {
        error = e;
      }
      Status status = error.getStatus();
      Metadata trailers = error.getTrailers();
      String reason = trailers == null ? null : trailers.get(AMULET_REASON);
      if (reason == null && trailers != null) {
        reason = trailers.get(AMULET_ERROR);
      }
      String message = address + ": " + status.getCode() + ": " + status.getDescription();
      boolean nodeFailed;
      // NOT_FOUND from a node behind the map's creation: another node may take it.
      boolean nodeBehind = false;
      switch (status.getCode()) {
        case UNAVAILABLE:
          nodeFailed = !QUORUM_NOT_REACHED.equals(reason);
          break;
        case DEADLINE_EXCEEDED:
        case CANCELLED:
        case UNKNOWN:
          nodeFailed = true;
          break;
        case NOT_FOUND:
          // The node may not have executed the map's creation yet: if the
          // newest partition map (the answering node's, if newer than the
          // cached one) has the map, the node is behind; it took nothing.
          refreshMap(address);
          nodeFailed = routing.knows(map);
          nodeBehind = nodeFailed;
          break;
        default:
          nodeFailed = false;
          break;
      }
      if (!nodeFailed) {
        if (QUORUM_NOT_REACHED.equals(reason)) {
          throw AmuletException.withReason(
              AmuletException.Kind.UNAVAILABLE,
              message + (write ? " (the write may have taken effect at some replicas)" : ""),
              reason);
        }
        throw AmuletException.fromStatus(status, reason);
      }
      failed.add(address);
      String next = nextEventualNode(address, failed);
      if (write && !nodeBehind && !connectionRefused(error)) {
        throw new AmuletException(
            AmuletException.Kind.OUTCOME_UNKNOWN,
            message + " (the node failed before answering: the write may have taken effect)");
      }
      long left = deadline - System.nanoTime();
      if (left <= 0) {
        if (nodeBehind) {
          throw AmuletException.fromStatus(status, reason);
        }
        throw new AmuletException(
            AmuletException.Kind.UNAVAILABLE,
            "gave up after " + config.operationTimeout() + ": " + message);
      }
      if (next == null) {
        // Every node failed once: pause, look for new nodes, go round again.
        sleepNanos(Math.min(backoff, left));
        backoff = Math.min(backoff * 2, BACKOFF_MAX_NANOS);
        refreshMap(null);
        failed.clear();
        failed.add(address);
        next = nextEventualNode(address, failed);
        if (next == null) {
          next = address;
        }
      }
      address = next;
    }
  }

  /** Whether the call failed because its connection was refused: the node surely did not take it. */
  static boolean connectionRefused(Throwable e) {
    for (int depth = 0; e != null && depth < 16; depth++, e = e.getCause()) {
      if (e instanceof java.net.ConnectException) {
        return true;
      }
    }
    return false;
  }

  /** The nodes eventual requests may go to: those of the partition map, else the seeds. */
  private List<String> eventualCandidates() {
    Set<String> all = new LinkedHashSet<>();
    Routing r = routing;
    if (r != null) {
      all.addAll(r.addresses.values());
    }
    if (all.isEmpty()) {
      all.addAll(seeds);
    }
    return new ArrayList<>(all);
  }

  /** The node eventual requests go to; chosen at random the first time. */
  String currentEventualNode() {
    String current = eventualNode.get();
    if (current != null) {
      return current;
    }
    List<String> all = eventualCandidates();
    eventualNode.compareAndSet(null, all.get(ThreadLocalRandom.current().nextInt(all.size())));
    return eventualNode.get();
  }

  /** Makes {@code address} the node eventual requests go to (tests). */
  void useEventualNode(String address) {
    eventualNode.set(Objects.requireNonNull(address));
  }

  /**
   * After {@code failedAddress} failed: makes another node current (unless
   * another thread already moved on) and returns a node not in {@code
   * failed} to try next, or null if every node is in it.
   */
  private String nextEventualNode(String failedAddress, Set<String> failed) {
    String current = eventualNode.get();
    if (current != null && !current.equals(failedAddress) && !failed.contains(current)) {
      return current;
    }
    List<String> left = eventualCandidates();
    left.removeAll(failed);
    if (left.isEmpty()) {
      return null;
    }
    String next = left.get(ThreadLocalRandom.current().nextInt(left.size()));
    eventualNode.compareAndSet(current, next);
    return next;
  }

  private Session takeSession() {
    synchronized (idleSessions) {
      if (!idleSessions.isEmpty()) {
        return idleSessions.remove(idleSessions.size() - 1);
      }
    }
    return new Session();
  }

  private void giveBack(Session s) {
    synchronized (idleSessions) {
      idleSessions.add(s);
    }
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
          return ManagedChannelBuilder.forAddress(
                  a.substring(0, colon), Integer.parseInt(a.substring(colon + 1)))
              .usePlaintext()
              .maxInboundMessageSize(REPLY_BYTES_MAX)
              .disableRetry()
              .intercept(interceptors)
              .build();
        });
  }

  private AmuletGrpc.AmuletBlockingStub stub(String address) {
    return AmuletGrpc.newBlockingStub(channel(address))
        .withDeadlineAfter(config.attemptTimeout().toMillis(), TimeUnit.MILLISECONDS);
  }

  private AmuletGrpc.AmuletBlockingStub attemptStub(String address) {
    return stub(address);
  }

  private String anyNode() {
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

  /** The read versions this client's transactions share. */
  ReadVersions readVersions() {
    return readVersions;
  }

  /** The channel to {@code address} (transactions' reads). */
  ManagedChannel channelAt(String address) {
    return channel(address);
  }

  /**
   * A stream of one partition's pages of a snapshot, after {@code after},
   * from a random replica; its deadline is the snapshot lease.
   */
  Iterator<SnapshotPage> readSnapshot(
      io.grpc.Context.CancellableContext context, int partition, long snapshot, byte[] after) {
    List<String> replicas = routing.replicaAddresses(partition);
    if (replicas.isEmpty()) {
      throw new AmuletException(
          AmuletException.Kind.PROTOCOL, "no address for a replica of partition " + partition);
    }
    String address = replicas.get(ThreadLocalRandom.current().nextInt(replicas.size()));
    ReadSnapshotRequest.Builder request =
        ReadSnapshotRequest.newBuilder()
            .setPartition(partition)
            .setSnapshot(snapshot)
            .setPageSize(config.pageEntries());
    if (after != null) {
      request.setAfter(ByteString.copyFrom(after));
    }
    AmuletGrpc.AmuletBlockingStub stub =
        AmuletGrpc.newBlockingStub(channel(address))
            .withDeadlineAfter(config.snapshotLease().toMillis(), TimeUnit.MILLISECONDS);
    try {
      return context.call(() -> stub.readSnapshot(request.build()));
    } catch (RuntimeException e) {
      throw e;
    } catch (Exception e) {
      throw new IllegalStateException(e);
    }
  }

  /**
   * Where a tail of {@code log} opens its stream: a random replica (not
   * {@code avoid} if the partition has another) of the partition that holds
   * the log by the cached map, as its requests are routed; any node when
   * the map does not know the log (it says whether the log exists, and
   * answers {@code not-a-replica} with its newer map if it does).
   */
  String tailAddress(String log, String avoid) {
    Routing r = routing;
    List<String> candidates = new ArrayList<>();
    if (r.knows(log)) {
      int partition = r.partitionsFor(AmuletLog.placement(log)).get(0);
      candidates.addAll(r.replicaAddresses(partition));
    }
    if (candidates.isEmpty()) {
      candidates.addAll(r.addresses.values());
    }
    if (candidates.isEmpty()) {
      candidates.addAll(seeds);
    }
    if (candidates.size() > 1) {
      candidates.remove(avoid);
    }
    return candidates.get(ThreadLocalRandom.current().nextInt(candidates.size()));
  }

  /**
   * A new, unstarted TailLog call to {@code address}, without a deadline
   * (the stream never ends by itself: the tail watches its heartbeats).
   *
   * @throws IllegalStateException if the client is closed
   */
  ClientCall<TailLogRequest, AmuletOuterClass.LogEntries> tailCall(String address) {
    if (closed) {
      throw new IllegalStateException("the client is closed");
    }
    return channel(address).newCall(AmuletGrpc.getTailLogMethod(), CallOptions.DEFAULT);
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
