package io.amulet.client;

import static org.junit.Assert.assertArrayEquals;
import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertFalse;
import static org.junit.Assert.assertNotNull;
import static org.junit.Assert.assertNull;
import static org.junit.Assert.assertThrows;
import static org.junit.Assert.assertTrue;

import amulet.v1.AmuletGrpc;
import amulet.v1.AmuletOuterClass;
import amulet.v1.AmuletOuterClass.MapRequest;
import amulet.v1.AmuletOuterClass.MapResponse;
import com.google.protobuf.ByteString;
import io.grpc.Grpc;
import io.grpc.ManagedChannel;
import io.grpc.ManagedChannelBuilder;
import io.grpc.Metadata;
import io.grpc.ServerCall;
import io.grpc.ServerCallHandler;
import io.grpc.ServerInterceptor;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.grpc.netty.shaded.io.netty.handler.ssl.ClientAuth;
import io.grpc.stub.StreamObserver;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import javax.net.ssl.SSLPeerUnverifiedException;
import javax.net.ssl.SSLSession;
import org.junit.After;
import org.junit.Assume;
import org.junit.ClassRule;
import org.junit.Test;
import org.junit.rules.TemporaryFolder;

/**
 * Bearer tokens without a cluster: the configuration ({@code withToken},
 * {@code AMULET_TOKEN}, a token never in plaintext, never in {@code
 * toString}), the interceptor's {@code authorization} metadata on unary and
 * streaming calls, a client with a token over TLS against a fake node
 * taking connections without a client certificate (certificates by {@code
 * openssl}; skipped without it), and refusals ({@code UNAUTHENTICATED},
 * {@code PERMISSION_DENIED}) that end a connect, a snapshot's stream and a
 * log tail at once, never retried.
 */
public class BearerTokenTest {
  @ClassRule public static final TemporaryFolder TMP = new TemporaryFolder();

  /** A token as a node makes them: amt1.<16 hex>.<64 hex>. */
  private static final String TOKEN =
      "amt1.0123456789abcdef." + "5e".repeat(31) + "c7";
  private static final String SECRET = TOKEN.substring(TOKEN.lastIndexOf('.') + 1);

  private final List<AuthNode> nodes = new ArrayList<>();
  private final List<AmuletClient> clients = new ArrayList<>();
  private final List<ManagedChannel> channels = new ArrayList<>();

  @After
  public void stop() throws InterruptedException {
    for (AmuletClient c : clients) {
      c.close();
    }
    for (ManagedChannel c : channels) {
      c.shutdownNow();
    }
    for (AuthNode n : nodes) {
      n.server.shutdownNow();
      n.server.awaitTermination(5, TimeUnit.SECONDS);
    }
  }

  /** One call as the node received it. */
  static final class Seen {
    final String method;
    /** The authorization metadata (null: none). */
    final String authorization;
    /** Whether the connection presented a client certificate (null: plaintext). */
    final Boolean certificate;

    Seen(String method, String authorization, Boolean certificate) {
      this.method = method;
      this.authorization = authorization;
      this.certificate = certificate;
    }

    @Override
    public String toString() {
      return method + " authorization=" + (authorization != null) + " certificate=" + certificate;
    }
  }

  /**
   * Records every call's metadata; when {@link #required} is set, refuses a
   * call without {@code authorization: Bearer REQUIRED} with
   * UNAUTHENTICATED, as a node refuses a bad token.
   */
  static final class Recorder implements ServerInterceptor {
    final List<Seen> seen = new CopyOnWriteArrayList<>();
    volatile String required;

    @Override
    public <Q, R> ServerCall.Listener<Q> interceptCall(
        ServerCall<Q, R> call, Metadata headers, ServerCallHandler<Q, R> next) {
      String authorization = headers.get(BearerToken.AUTHORIZATION);
      Boolean certificate = null;
      SSLSession session = call.getAttributes().get(Grpc.TRANSPORT_ATTR_SSL_SESSION);
      if (session != null) {
        try {
          certificate = session.getPeerCertificates().length > 0;
        } catch (SSLPeerUnverifiedException e) {
          certificate = false;
        }
      }
      seen.add(
          new Seen(call.getMethodDescriptor().getBareMethodName(), authorization, certificate));
      if (required != null && !("Bearer " + required).equals(authorization)) {
        call.close(
            Status.UNAUTHENTICATED.withDescription(
                "the bearer token is not valid (malformed, unknown, revoked or expired)"),
            new Metadata());
        return new ServerCall.Listener<Q>() {};
      }
      return next.startCall(call, headers);
    }
  }

  /**
   * A fake node of one partition with the map {@code m} (Get and Put) and
   * any log (its bounds 0..3); its snapshot and tail streams fail with
   * {@link #streamRefusal}, counted.
   */
  static final class AuthNode extends FakeNodeServer {
    final Map<ByteString, ByteString> data = new ConcurrentHashMap<>();
    final AtomicInteger snapshotCalls = new AtomicInteger();
    final AtomicInteger tailCalls = new AtomicInteger();
    volatile Status streamRefusal = Status.PERMISSION_DENIED.withDescription("may not read");

    @Override
    AmuletOuterClass.PartitionMap partitionMap() {
      return AmuletOuterClass.PartitionMap.newBuilder()
          .setVersion(1)
          .addPartitions(
              AmuletOuterClass.Partition.newBuilder().setId(0).setStream(1).addReplicas(1))
          .addTokenRing(AmuletOuterClass.TokenRange.newBuilder().setFirstToken(0).setPartition(0))
          .addKeyspaces(
              AmuletOuterClass.Keyspace.newBuilder()
                  .setName("m")
                  .setLayout(
                      AmuletOuterClass.Layout.newBuilder()
                          .setHash(AmuletOuterClass.HashLayout.getDefaultInstance())))
          .addNodes(AmuletOuterClass.NodeAddress.newBuilder().setNode(1).setAddress(address))
          .build();
    }

    private MapResponse apply(MapRequest r) {
      if (r.hasLogBounds()) {
        return MapResponse.newBuilder()
            .setLogBounds(AmuletOuterClass.LogBoundsReply.newBuilder().setFirst(0).setEnd(3))
            .build();
      }
      AmuletOuterClass.OptionalValue.Builder v = AmuletOuterClass.OptionalValue.newBuilder();
      ByteString previous = null;
      if (r.hasGet()) {
        previous = data.get(r.getGet().getKey());
      } else if (r.hasPut()) {
        previous = data.put(r.getPut().getKey(), r.getPut().getValue());
      }
      if (previous != null) {
        v.setValue(previous);
      }
      return MapResponse.newBuilder().setValue(v).build();
    }

    @Override
    public void execute(MapRequest request, StreamObserver<MapResponse> out) {
      out.onNext(apply(request));
      out.onCompleted();
    }

    @Override
    public void executeBatch(
        AmuletOuterClass.MapRequestBatch batch,
        StreamObserver<AmuletOuterClass.MapResponseBatch> out) {
      AmuletOuterClass.MapResponseBatch.Builder reply = AmuletOuterClass.MapResponseBatch.newBuilder();
      for (MapRequest r : batch.getRequestsList()) {
        reply.addOutcomes(AmuletOuterClass.MapOutcome.newBuilder().setResponse(apply(r)));
      }
      out.onNext(reply.build());
      out.onCompleted();
    }

    @Override
    public void readSnapshot(
        AmuletOuterClass.ReadSnapshotRequest request,
        StreamObserver<AmuletOuterClass.SnapshotPage> out) {
      snapshotCalls.incrementAndGet();
      out.onError(streamRefusal.asRuntimeException());
    }

    @Override
    public void tailLog(
        AmuletOuterClass.TailLogRequest request, StreamObserver<AmuletOuterClass.LogEntries> out) {
      tailCalls.incrementAndGet();
      out.onError(streamRefusal.asRuntimeException());
    }
  }

  private static byte[] b(String s) {
    return s.getBytes(StandardCharsets.UTF_8);
  }

  private static Path caFile() throws IOException {
    Path dir = TMP.getRoot().toPath().resolve("plain-ca");
    Files.createDirectories(dir);
    Path ca = dir.resolve("ca.pem");
    if (!Files.exists(ca)) {
      Files.write(ca, b("not checked before connect"));
    }
    return ca;
  }

  private static ClientConfig config() {
    return ClientConfig.defaults()
        .withAttemptTimeout(Duration.ofSeconds(2))
        .withOperationTimeout(Duration.ofSeconds(20));
  }

  private AmuletClient connect(AuthNode n, ClientConfig config) {
    AmuletClient c = AmuletClient.connect(List.of(n.address), config);
    clients.add(c);
    return c;
  }

  @Test
  public void toStringNeverShowsTheToken() throws IOException {
    ClientConfig c = config().withToken(caFile(), TOKEN);
    String shown = c.toString();
    assertFalse(shown, shown.contains(SECRET));
    assertFalse(shown, shown.contains(TOKEN));
    assertTrue(shown, shown.contains("token=<secret>"));
    assertTrue(c.tokenInUse());
    assertEquals(TOKEN, c.tokenInUse(name -> null));
    // Whitespace around a pasted token is dropped, as the Rust client does.
    assertEquals(TOKEN, config().withToken(caFile(), "  " + TOKEN + "\n").tokenInUse(name -> null));
    // The CA only: no certificate of the client's own.
    assertEquals(TlsFiles.caOnly(caFile()), c.tls());
    assertEquals(TlsFiles.caOnly(caFile()), c.tlsInUse(name -> null));
    assertFalse(c.tls().hasCertificate());
    assertNull(c.tls().cert());
    assertFalse(c.tls().toString(), c.tls().toString().contains("null"));

    CreatedToken created = new CreatedToken(TOKEN, "0123456789abcdef", 1_800_000_000_000_000L);
    assertFalse(created.toString(), created.toString().contains(SECRET));
    assertTrue(created.toString(), created.toString().contains("0123456789abcdef"));
    assertEquals(TOKEN, created.token());

    assertEquals("BearerToken(<secret>)", new BearerToken(TOKEN).toString());
    // Configurations without a token say so, and read no environment to.
    assertTrue(config().withPlaintext().toString().contains("token=none"));
    assertTrue(config().toString().contains("token=$AMULET_TOKEN"));
  }

  @Test
  public void badTokensAndMissingFilesAreRefusedWithoutShowingTheToken() throws IOException {
    Path ca = caFile();
    for (String bad : List.of("", "   ", TOKEN + " x", TOKEN + "\u00e9", "amt1.\n" + SECRET)) {
      IllegalArgumentException e =
          assertThrows(IllegalArgumentException.class, () -> config().withToken(ca, bad));
      assertFalse(e.getMessage(), e.getMessage().contains(SECRET));
    }
    assertThrows(NullPointerException.class, () -> config().withToken(ca, null));
    Path missing = ca.resolveSibling("missing.pem");
    IllegalArgumentException e =
        assertThrows(IllegalArgumentException.class, () -> config().withToken(missing, TOKEN));
    assertTrue(e.getMessage(), e.getMessage().contains(missing.toString()));
    assertThrows(IllegalArgumentException.class, () -> TlsFiles.caOnly(missing));
  }

  @Test
  public void theEnvironmentsTokenUsesTheCaOfAmuletTlsDirAndNeverPlaintext() throws IOException {
    Path dir = TMP.newFolder("env").toPath();
    Map<String, String> env = new HashMap<>();
    env.put(ClientConfig.TOKEN_ENV, TOKEN);
    env.put(TlsFiles.TLS_DIR_ENV, dir.toString());
    env.put(TlsFiles.USER_ENV, "bob");
    ClientConfig defaults = ClientConfig.defaults();
    assertEquals(TOKEN, defaults.tokenInUse(env::get));
    // With a token the directory's CA only: the token names the user.
    TlsFiles tls = defaults.tlsInUse(env::get);
    assertEquals(TlsFiles.caOnlyUnchecked(dir.resolve("ca.pem")), tls);
    assertFalse(tls.hasCertificate());
    AmuletClient.checkTokenOverTls(defaults.tokenInUse(env::get), tls);
    assertFalse(defaults.toString().contains(SECRET));

    // No AMULET_TLS_DIR: a token never goes in plaintext.
    env.remove(TlsFiles.TLS_DIR_ENV);
    assertNull(defaults.tlsInUse(env::get));
    IllegalArgumentException e =
        assertThrows(
            IllegalArgumentException.class,
            () -> AmuletClient.checkTokenOverTls(defaults.tokenInUse(env::get), defaults.tlsInUse(env::get)));
    assertTrue(e.getMessage(), e.getMessage().contains("TLS only"));
    assertFalse(e.getMessage(), e.getMessage().contains(SECRET));
    AmuletClient.checkTokenOverTls(null, null);

    // Explicit settings win over the environment.
    env.put(TlsFiles.TLS_DIR_ENV, dir.toString());
    assertNull(defaults.withPlaintext().tokenInUse(env::get));
    assertNull(defaults.withPlaintext().tlsInUse(env::get));
    assertNull(defaults.withoutToken().tokenInUse(env::get));
    assertEquals(
        TlsFiles.fromEnv(env::get), defaults.withoutToken().tlsInUse(env::get)); // bob's files
    assertEquals(TOKEN.replace("0123", "4567"),
        defaults.withToken(caFile(), TOKEN.replace("0123", "4567")).tokenInUse(env::get));
    // An empty variable is no token.
    env.put(ClientConfig.TOKEN_ENV, " ");
    assertNull(defaults.tokenInUse(env::get));
    env.remove(ClientConfig.TOKEN_ENV);
    assertNull(defaults.tokenInUse(env::get));
  }

  @Test(timeout = 60_000)
  public void theInterceptorAddsTheHeaderToUnaryAndStreamingCalls() throws Exception {
    Recorder recorder = new Recorder();
    AuthNode n = new AuthNode();
    n.start(recorder);
    nodes.add(n);
    ManagedChannel channel =
        ManagedChannelBuilder.forTarget(n.address)
            .usePlaintext()
            .intercept(new BearerToken(TOKEN))
            .build();
    channels.add(channel);
    AmuletGrpc.AmuletBlockingStub stub =
        AmuletGrpc.newBlockingStub(channel).withDeadlineAfter(10, TimeUnit.SECONDS);
    stub.getPartitionMap(AmuletOuterClass.GetPartitionMapRequest.getDefaultInstance());
    Iterator<AmuletOuterClass.SnapshotPage> pages =
        stub.readSnapshot(AmuletOuterClass.ReadSnapshotRequest.getDefaultInstance());
    assertThrows(StatusRuntimeException.class, pages::hasNext);
    Iterator<AmuletOuterClass.LogEntries> tail =
        stub.tailLog(AmuletOuterClass.TailLogRequest.newBuilder().setLog("l").build());
    assertThrows(StatusRuntimeException.class, tail::hasNext);
    assertEquals(recorder.seen.toString(), 3, recorder.seen.size());
    for (Seen s : recorder.seen) {
      assertEquals(s.method, "Bearer " + TOKEN, s.authorization);
    }
    assertEquals(
        List.of("GetPartitionMap", "ReadSnapshot", "TailLog"),
        recorder.seen.stream().map(s -> s.method).collect(java.util.stream.Collectors.toList()));
  }

  @Test(timeout = 60_000)
  public void aClientWithATokenSendsItOnEveryCallOverTlsWithoutACertificate() throws Exception {
    Assume.assumeTrue("the openssl command is needed", TestCerts.opensslAvailable());
    Path dir = TMP.newFolder("tls").toPath();
    TestCerts.ca(dir, "ca");
    TestCerts.node(dir, "ca", dir, "node-1", "DNS:amulet-node,DNS:node-1.amulet,IP:127.0.0.1");
    Recorder recorder = new Recorder();
    recorder.required = TOKEN;
    AuthNode n = new AuthNode();
    n.startTls(
        dir.resolve("node-1.pem").toFile(),
        dir.resolve("node-1.key").toFile(),
        dir.resolve("ca.pem").toFile(),
        ClientAuth.OPTIONAL,
        recorder);
    nodes.add(n);

    // Batched (ExecuteBatch) and one Execute per operation.
    for (ClientConfig config :
        List.of(
            config().withToken(dir.resolve("ca.pem"), TOKEN),
            config().withToken(dir.resolve("ca.pem"), TOKEN).withBatchesInFlight(0))) {
      AmuletClient c = connect(n, config);
      assertFalse(c.tls().hasCertificate());
      ByteMap m = c.byteMap("m");
      m.put(b("k"), b("v1"));
      assertArrayEquals(b("v1"), m.get(b("k")));
    }
    List<String> methods = new ArrayList<>();
    for (Seen s : recorder.seen) {
      assertEquals(s.toString(), "Bearer " + TOKEN, s.authorization);
      assertEquals(s.toString(), Boolean.FALSE, s.certificate);
      methods.add(s.method);
    }
    assertTrue(methods.toString(), methods.contains("GetPartitionMap"));
    assertTrue(methods.toString(), methods.contains("OpenSession"));
    assertTrue(methods.toString(), methods.contains("ExecuteBatch"));
    assertTrue(methods.toString(), methods.contains("Execute"));

    // A token the node does not take: UNAUTHENTICATED at once, asked once.
    recorder.seen.clear();
    String forged = TOKEN.substring(0, TOKEN.length() - 1) + "8";
    long start = System.nanoTime();
    AmuletException e =
        assertThrows(
            AmuletException.class,
            () -> connect(n, config().withToken(dir.resolve("ca.pem"), forged)));
    long millis = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);
    assertEquals(e.getMessage(), AmuletException.Kind.UNAUTHENTICATED, e.kind());
    assertFalse(e.getMessage(), e.getMessage().contains(forged.substring(22)));
    assertEquals(recorder.seen.toString(), 1, recorder.seen.size());
    assertTrue("took " + millis + " ms", millis < 5_000);
    // Nor is anything retried later: a call the node refuses fails at once.
    AmuletClient good = connect(n, config().withToken(dir.resolve("ca.pem"), TOKEN));
    recorder.required = "amt1.ffffffffffffffff." + "00".repeat(32); // as after a revocation
    recorder.seen.clear();
    start = System.nanoTime();
    e = assertThrows(AmuletException.class, () -> good.byteMap("m").put(b("k"), b("v2")));
    millis = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);
    assertEquals(e.getMessage(), AmuletException.Kind.UNAUTHENTICATED, e.kind());
    assertTrue("took " + millis + " ms", millis < 5_000);
    assertTrue(recorder.seen.toString(), recorder.seen.size() <= 2); // OpenSession at most, then final
    // The refused put changed nothing.
    assertEquals(ByteString.copyFrom(b("v1")), n.data.get(ByteString.copyFrom(b("k"))));
  }

  @Test(timeout = 60_000)
  public void aRefusedSnapshotStreamEndsTheIterationWithoutReconnecting() throws Exception {
    AuthNode n = new AuthNode();
    n.start();
    nodes.add(n);
    AmuletClient c = connect(n, config().withPlaintext());
    for (Status refusal :
        List.of(
            Status.PERMISSION_DENIED.withDescription("the user may not read m"),
            Status.UNAUTHENTICATED.withDescription("the bearer token is not valid"))) {
      n.streamRefusal = refusal;
      n.snapshotCalls.set(0);
      Snapshot s = new Snapshot(c, 7, List.of(0), null, false);
      long start = System.nanoTime();
      AmuletException e = assertThrows(AmuletException.class, s::hasNext);
      long millis = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);
      assertEquals(e.getMessage(), AmuletException.Kind.valueOf(refusal.getCode().name()), e.kind());
      assertEquals("ReadSnapshot calls", 1, n.snapshotCalls.get());
      assertTrue("took " + millis + " ms", millis < 5_000);
      s.close();
    }
  }

  @Test(timeout = 60_000)
  public void aRefusedTailStreamEndsTheTailWithoutReconnecting() throws Exception {
    AuthNode n = new AuthNode();
    n.start();
    nodes.add(n);
    AmuletClient c = connect(n, config().withPlaintext());
    for (Status refusal :
        List.of(
            Status.PERMISSION_DENIED.withDescription("the user may not read l"),
            Status.UNAUTHENTICATED.withDescription("the bearer token is not valid"))) {
      n.streamRefusal = refusal;
      n.tailCalls.set(0);
      try (LogTail tail = c.log("l").tail(0)) {
        long start = System.nanoTime();
        AmuletException e =
            assertThrows(AmuletException.class, () -> tail.poll(Duration.ofSeconds(30)));
        long millis = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);
        assertEquals(e.getMessage(), AmuletException.Kind.valueOf(refusal.getCode().name()), e.kind());
        assertEquals("TailLog calls", 1, n.tailCalls.get());
        assertEquals(0, tail.reconnects());
        assertTrue("took " + millis + " ms", millis < 5_000);
        assertNotNull(tail.log());
      }
    }
  }
}
