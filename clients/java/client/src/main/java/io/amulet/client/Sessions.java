package io.amulet.client;

import amulet.v1.AmuletGrpc;
import amulet.v1.AmuletOuterClass.CloseSessionRequest;
import amulet.v1.AmuletOuterClass.MapRequest;
import amulet.v1.AmuletOuterClass.MapResponse;
import amulet.v1.AmuletOuterClass.OpenSessionRequest;
import amulet.v1.AmuletOuterClass.RequestHeader;
import io.grpc.Metadata;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import java.security.SecureRandom;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * How a client runs its map and log requests: each in a session, at the
 * session's next sequence number, sent to a replica of the first partition
 * it involves and resent as the protocol allows, so it applies at most
 * once ({@link AmuletClient} lists the rules). Keeps the client's idle
 * sessions and its batchers.
 */
final class Sessions {
  private static final SecureRandom RANDOM = new SecureRandom();

  private final AmuletClient client;
  private final ClientConfig config;
  private final Map<String, Batcher> batchers = new ConcurrentHashMap<>();
  /** The replica each attempt goes to: the preferred one, or a random one. */
  private final ReplicaChooser replicas;
  private final List<Session> idleSessions = new ArrayList<>();

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
    /** The node gave no answer, or is behind: left out for a while ({@link ReplicaChooser}). */
    final boolean suspect;

    Retry(String why, boolean maybeApplied) {
      this(why, maybeApplied, false, false);
    }

    Retry(String why, boolean maybeApplied, boolean staleMap, boolean suspect) {
      super(why, null, false, false);
      this.maybeApplied = maybeApplied;
      this.staleMap = staleMap;
      this.suspect = suspect;
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
    /**
     * The node the last attempt failed at (null after none or a success):
     * the next goes to a random other one if there is one, not to the
     * preferred one.
     */
    Integer failedAt;
  }

  Sessions(AmuletClient client, ClientConfig config) {
    this.client = client;
    this.config = config;
    this.replicas = new ReplicaChooser(config);
  }

  /** How this client chooses the replica of an attempt (tests). */
  ReplicaChooser replicas() {
    return replicas;
  }

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
    if (client.isClosed()) {
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
        client.refreshMap(answeredBy[0]);
        if (answeredBy[0] != null) {
          // It executed the change: eventual requests go there next.
          client.eventualRequests().useNode(answeredBy[0]);
        }
      }
    }
  }

  private MapResponse executeIn(Session s, MapRequest op, Placement placement, String[] answeredBy) {
    long deadline = System.nanoTime() + config.operationTimeout().toNanos();
    long backoff = AmuletClient.BACKOFF_MIN_NANOS;
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
      AmuletClient.sleepNanos(backoff);
      backoff = Math.min(backoff * 2, AmuletClient.BACKOFF_MAX_NANOS);
    }
  }

  private void ensureSession(Session s) throws Retry {
    long now = System.nanoTime();
    if (s.open && now - s.renewedNanos <= config.sessionLease().toNanos() / 2) {
      return;
    }
    Routing r = client.routing();
    Integer node = r == null ? null : replicas.anyNode(r);
    String address = node == null ? client.anyNode() : r.addresses.get(node);
    OpenSessionRequest request =
        OpenSessionRequest.newBuilder()
            .setSession(s.id)
            .setLeaseMicros(config.sessionLease().toNanos() / 1000)
            .setMapVersion(client.routing().version)
            .build();
    try {
      AmuletGrpc.AmuletBlockingStub stub = client.stub(address);
      if (s.open) {
        stub.keepAlive(request);
      } else {
        stub.openSession(request);
      }
    } catch (StatusRuntimeException e) {
      try {
        onError(e, s, address);
      } catch (Retry retry) {
        if (retry.suspect && node != null) {
          replicas.suspect(node);
        }
        throw retry;
      }
    }
    if (node != null) {
      replicas.executed(node);
    }
    s.open = true;
    s.renewedNanos = now;
  }

  private MapResponse attempt(
      Session s, MapRequest op, Placement placement, String[] answeredBy, Attempts attempts)
      throws Retry {
    if (attempts.pinned == null) {
      attempts.pinned = client.routing();
    }
    Routing r = attempts.pinned;
    int partition = r.partitionsFor(placement).get(0);
    int node = replicas.choose(r, partition, attempts.failedAt);
    String address = r.addresses.get(node);
    attempts.failedAt = node;
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
        response = client.stub(address).execute(request);
      } else {
        response =
            batchers
                .computeIfAbsent(
                    address,
                    a ->
                        new Batcher(
                            client.channelAt(a),
                            config.batchesInFlight(),
                            config.attemptTimeout().toMillis()))
                .execute(request, config.attemptTimeout().toMillis());
      }
      replicas.executed(node);
      answeredBy[0] = address;
      attempts.failedAt = null;
      return response;
    } catch (StatusRuntimeException e) {
      try {
        onError(e, s, address);
      } catch (Retry retry) {
        if (retry.suspect) {
          replicas.suspect(node);
        }
        throw retry;
      }
      throw new AssertionError("onError always throws");
    }
  }

  /** Throws Retry for what the protocol retries, else the final error. */
  private void onError(StatusRuntimeException e, Session s, String address) throws Retry {
    Status status = e.getStatus();
    Metadata trailers = e.getTrailers();
    String kind = trailers == null ? null : trailers.get(AmuletClient.AMULET_ERROR);
    String message = address + ": " + status.getCode() + ": " + status.getDescription();
    String tls = TlsFiles.failure(status.getCause());
    if (tls != null) {
      message += " (" + tls + ")";
    }
    if (kind != null) {
      switch (kind) {
        case "stale-map":
        case "not-a-replica":
          client.refreshMap(null);
          throw new Retry(message, false, true, false);
        case "session-expired":
          s.open = false;
          throw new Retry(message, false);
        case "behind":
          // Not ordered (catching up): resend with the same sequence,
          // elsewhere for a while.
          throw new Retry(message, false, false, true);
        case "retryable":
          // Refused for a passing state of the cluster: resend with the
          // same sequence.
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
        // No answer (in time): resend with the same sequence, elsewhere
        // for a while.
        throw new Retry(message, true, false, true);
      default:
        throw AmuletException.fromStatus(status);
    }
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

  /** Closes the idle sessions (best effort; they would expire anyway). */
  void closeIdle() {
    List<Session> idle;
    synchronized (idleSessions) {
      idle = new ArrayList<>(idleSessions);
      idleSessions.clear();
    }
    for (Session s : idle) {
      if (!s.open || client.routing() == null) {
        continue;
      }
      try {
        client.stub(client.anyNode())
            .closeSession(
                CloseSessionRequest.newBuilder()
                    .setSession(s.id)
                    .setMapVersion(client.routing().version)
                    .build());
      } catch (RuntimeException e) {
        // Best effort.
      }
    }
  }
}
