package io.amulet.client;

import static org.junit.Assert.assertArrayEquals;
import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertNull;
import static org.junit.Assert.assertThrows;
import static org.junit.Assert.assertTrue;

import amulet.v1.AmuletOuterClass;
import amulet.v1.AmuletOuterClass.MapRequest;
import amulet.v1.AmuletOuterClass.MapResponse;
import com.google.protobuf.ByteString;
import io.grpc.stub.StreamObserver;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.After;
import org.junit.Assume;
import org.junit.BeforeClass;
import org.junit.ClassRule;
import org.junit.Test;
import org.junit.rules.TemporaryFolder;

/**
 * TLS with mutual authentication against a fake node serving TLS as the
 * Rust node does (its certificate from the cluster CA, a client
 * certificate from that CA required). The certificates are made by {@code
 * openssl} for the test ({@link TestCerts}); without it the tests are
 * skipped.
 */
public class TlsTest {
  @ClassRule public static final TemporaryFolder TMP = new TemporaryFolder();

  /** The cluster's TLS directory: ca.pem, node-1, admin, and a node without amulet-node. */
  private static Path good;
  /** Another CA's directory: ca.pem, a node with amulet-node, admin. */
  private static Path other;

  @BeforeClass
  public static void makeCertificates() throws IOException {
    Assume.assumeTrue("the openssl command is needed to make test certificates", TestCerts.opensslAvailable());
    good = TMP.newFolder("good").toPath();
    TestCerts.ca(good, "ca");
    TestCerts.node(good, "ca", good, "node-1", "DNS:amulet-node,DNS:node-1.amulet,IP:127.0.0.1");
    TestCerts.node(good, "ca", good, "stranger", "DNS:localhost,DNS:node-9.amulet,IP:127.0.0.1");
    TestCerts.user(good, "ca", good, "admin");
    other = TMP.newFolder("other").toPath();
    TestCerts.ca(other, "ca");
    TestCerts.node(other, "ca", other, "node-1", "DNS:amulet-node,DNS:node-1.amulet,IP:127.0.0.1");
    TestCerts.user(other, "ca", other, "admin");
  }

  /** A fake node with a map of its own; counts every call that reached it. */
  static final class TlsNode extends FakeNodeServer {
    final AtomicInteger calls = new AtomicInteger();
    final Map<ByteString, ByteString> data = new ConcurrentHashMap<>();
    /** The address its partition map gives node 1 (null: its own). */
    volatile String mapAddress;

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
          .addNodes(AmuletOuterClass.NodeAddress.newBuilder().setNode(1).setAddress(mapAddress != null ? mapAddress : address))
          .build();
    }

    @Override
    public void getPartitionMap(
        AmuletOuterClass.GetPartitionMapRequest request,
        StreamObserver<AmuletOuterClass.PartitionMap> out) {
      calls.incrementAndGet();
      super.getPartitionMap(request, out);
    }

    @Override
    public void openSession(
        AmuletOuterClass.OpenSessionRequest request,
        StreamObserver<AmuletOuterClass.SessionResponse> out) {
      calls.incrementAndGet();
      super.openSession(request, out);
    }

    /** Get and Put of the one map; anything else an empty value. */
    private MapResponse apply(MapRequest r) {
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
      calls.incrementAndGet();
      out.onNext(apply(request));
      out.onCompleted();
    }

    @Override
    public void executeBatch(
        AmuletOuterClass.MapRequestBatch batch,
        StreamObserver<AmuletOuterClass.MapResponseBatch> out) {
      calls.incrementAndGet();
      AmuletOuterClass.MapResponseBatch.Builder reply = AmuletOuterClass.MapResponseBatch.newBuilder();
      for (MapRequest r : batch.getRequestsList()) {
        reply.addOutcomes(AmuletOuterClass.MapOutcome.newBuilder().setResponse(apply(r)));
      }
      out.onNext(reply.build());
      out.onCompleted();
    }
  }

  private final List<TlsNode> nodes = new ArrayList<>();
  private final List<AmuletClient> clients = new ArrayList<>();

  @After
  public void stop() throws InterruptedException {
    for (AmuletClient c : clients) {
      c.close();
    }
    for (TlsNode n : nodes) {
      n.server.shutdownNow();
      n.server.awaitTermination(5, TimeUnit.SECONDS);
    }
  }

  /** A node serving TLS with {@code dir/<name>.pem}, requiring client certificates of the good CA. */
  private TlsNode node(Path dir, String name) throws IOException {
    TlsNode n = new TlsNode();
    n.startTls(
        dir.resolve(name + ".pem").toFile(),
        dir.resolve(name + ".key").toFile(),
        good.resolve("ca.pem").toFile());
    nodes.add(n);
    return n;
  }

  private static ClientConfig config() {
    return ClientConfig.defaults()
        .withAttemptTimeout(Duration.ofSeconds(2))
        .withOperationTimeout(Duration.ofSeconds(8));
  }

  private AmuletClient connect(TlsNode n, ClientConfig config) {
    AmuletClient c = AmuletClient.connect(List.of(n.address), config);
    clients.add(c);
    return c;
  }

  /** Connecting fails UNAVAILABLE well before the operation timeout, naming TLS; nothing reached the node. */
  private void refusedQuickly(TlsNode n, ClientConfig config) {
    long start = System.nanoTime();
    AmuletException e = assertThrows(AmuletException.class, () -> connect(n, config));
    long millis = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);
    assertEquals(e.getMessage(), AmuletException.Kind.UNAVAILABLE, e.kind());
    assertTrue(e.getMessage(), e.getMessage().contains("TLS"));
    assertTrue(e.getMessage(), e.getMessage().contains("handshake failed"));
    assertTrue("took " + millis + " ms: " + e.getMessage(), millis < 4_000);
    assertEquals("calls that reached the node", 0, n.calls.get());
  }

  private static byte[] b(String s) {
    return s.getBytes(StandardCharsets.UTF_8);
  }

  @Test(timeout = 60_000)
  public void aClientWithACertificateOfTheCaGetsAndPuts() throws Exception {
    TlsNode n = node(good, "node-1");
    // Batched (ExecuteBatch) and one Execute per operation.
    for (ClientConfig config :
        List.of(config().withTlsDir(good, "admin"), config().withTlsDir(good, "admin").withBatchesInFlight(0))) {
      AmuletClient c = connect(n, config);
      assertEquals(TlsFiles.inDir(good, "admin"), c.tls());
      ByteMap m = c.byteMap("m");
      m.put(b("k"), b("v1"));
      assertArrayEquals(b("v1"), m.get(b("k")));
      assertArrayEquals(b("v1"), m.put(b("k"), b("v2")));
      assertArrayEquals(b("v2"), m.get(b("k")));
      assertNull(m.get(b("absent")));
      m.put(b("k"), b("v1"));
    }
    // The files given one by one.
    AmuletClient c =
        connect(
            n,
            config()
                .withTls(good.resolve("ca.pem"), good.resolve("admin.pem"), good.resolve("admin.key")));
    assertArrayEquals(b("v1"), c.byteMap("m").get(b("k")));
    assertTrue(n.calls.get() > 0);
  }

  @Test(timeout = 60_000)
  public void aClientCertificateOfAnotherCaIsRefused() throws Exception {
    TlsNode n = node(good, "node-1");
    refusedQuickly(
        n,
        config()
            .withTls(good.resolve("ca.pem"), other.resolve("admin.pem"), other.resolve("admin.key")));
  }

  @Test(timeout = 60_000)
  public void aNodeCertificateWithoutAmuletNodeIsRefused() throws Exception {
    // From the right CA, valid for 127.0.0.1 and localhost, but not amulet-node.
    TlsNode n = node(good, "stranger");
    refusedQuickly(n, config().withTlsDir(good, "admin"));
  }

  @Test(timeout = 60_000)
  public void aNodeCertificateOfAnotherCaIsRefused() throws Exception {
    // Names amulet-node, but its CA is not ca.pem: the client trusts nothing else.
    TlsNode n = node(other, "node-1");
    refusedQuickly(n, config().withTlsDir(good, "admin"));
  }

  @Test(timeout = 60_000)
  public void aTlsClientAgainstAPlaintextNodeIsRefused() throws Exception {
    TlsNode n = new TlsNode();
    n.start();
    nodes.add(n);
    refusedQuickly(n, config().withTlsDir(good, "admin"));
  }

  @Test(timeout = 60_000)
  public void aPlaintextClientFailsCleanly() throws Exception {
    TlsNode n = node(good, "node-1");
    long start = System.nanoTime();
    AmuletException e =
        assertThrows(
            AmuletException.class,
            () -> connect(n, config().withPlaintext().withOperationTimeout(Duration.ofSeconds(2))));
    long millis = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);
    assertEquals(e.getMessage(), AmuletException.Kind.UNAVAILABLE, e.kind());
    assertTrue(e.getMessage(), e.getMessage().contains("plaintext"));
    assertTrue(e.getMessage(), e.getMessage().contains("TLS"));
    assertTrue("took " + millis + " ms", millis < 10_000);
    assertEquals(0, n.calls.get());
  }

  @Test(timeout = 60_000)
  public void aReplicaWithABadCertificateFailsOperationsSayingTls() throws Exception {
    // The seed is fine; its map sends the partition's commands to a node
    // whose certificate does not name amulet-node.
    TlsNode seed = node(good, "node-1");
    TlsNode stranger = node(good, "stranger");
    seed.mapAddress = stranger.address;
    AmuletClient c = connect(seed, config().withTlsDir(good, "admin").withOperationTimeout(Duration.ofSeconds(1)));
    AmuletException e = assertThrows(AmuletException.class, () -> c.byteMap("m").get(b("k")));
    assertEquals(e.getMessage(), AmuletException.Kind.UNAVAILABLE, e.kind());
    assertTrue(e.getMessage(), e.getMessage().contains("TLS handshake failed"));
    assertTrue(e.getMessage(), e.getMessage().contains("amulet-node"));
    assertEquals(0, stranger.calls.get());
  }

  @Test
  public void missingFilesAreNamed() throws Exception {
    Path dir = TMP.newFolder("partial").toPath();
    Files.copy(good.resolve("ca.pem"), dir.resolve("ca.pem"));
    Files.copy(good.resolve("admin.pem"), dir.resolve("admin.pem"));
    IllegalArgumentException e =
        assertThrows(IllegalArgumentException.class, () -> ClientConfig.defaults().withTlsDir(dir, "admin"));
    assertTrue(e.getMessage(), e.getMessage().contains(dir.resolve("admin.key").toString()));
    assertTrue(e.getMessage(), e.getMessage().contains("no such file"));
    e = assertThrows(IllegalArgumentException.class, () -> ClientConfig.defaults().withTlsDir(dir, "bob"));
    assertTrue(e.getMessage(), e.getMessage().contains(dir.resolve("bob.pem").toString()));
    e =
        assertThrows(
            IllegalArgumentException.class,
            () -> ClientConfig.defaults().withTlsDir(good, "../good/admin"));
    assertTrue(e.getMessage(), e.getMessage().contains("bad TLS user name"));
    Path nowhere = dir.resolve("nowhere");
    e = assertThrows(IllegalArgumentException.class, () -> ClientConfig.defaults().withTlsDir(nowhere, "admin"));
    assertTrue(e.getMessage(), e.getMessage().contains(nowhere.toString()));
    e =
        assertThrows(
            IllegalArgumentException.class,
            () -> ClientConfig.defaults().withTls(nowhere.resolve("ca.pem"), good.resolve("admin.pem"), good.resolve("admin.key")));
    assertTrue(e.getMessage(), e.getMessage().contains(nowhere.resolve("ca.pem").toString()));
    // Files removed after the configuration was made: named at connect, before any connection.
    Files.copy(good.resolve("admin.key"), dir.resolve("admin.key"));
    ClientConfig config = ClientConfig.defaults().withTlsDir(dir, "admin");
    Files.delete(dir.resolve("ca.pem"));
    e = assertThrows(IllegalArgumentException.class, () -> AmuletClient.connect(List.of("127.0.0.1:1"), config));
    assertTrue(e.getMessage(), e.getMessage().contains(dir.resolve("ca.pem").toString()));
  }

  @Test
  public void unusableFilesAreNamedAtConnect() throws Exception {
    List<String> seeds = List.of("127.0.0.1:1");
    // A SEC1 key ("BEGIN EC PRIVATE KEY"): not PKCS#8.
    ClientConfig sec1 =
        ClientConfig.defaults().withTls(good.resolve("ca.pem"), good.resolve("admin.pem"), good.resolve("admin.sec1.key"));
    IllegalArgumentException e =
        assertThrows(IllegalArgumentException.class, () -> AmuletClient.connect(seeds, sec1));
    assertTrue(e.getMessage(), e.getMessage().contains(good.resolve("admin.sec1.key").toString()));
    assertTrue(e.getMessage(), e.getMessage().contains("PKCS#8"));
    // The key of another certificate.
    ClientConfig mismatch =
        ClientConfig.defaults().withTls(good.resolve("ca.pem"), good.resolve("admin.pem"), good.resolve("node-1.key"));
    e = assertThrows(IllegalArgumentException.class, () -> AmuletClient.connect(seeds, mismatch));
    assertTrue(e.getMessage(), e.getMessage().contains("is not the key of the certificate " + good.resolve("admin.pem")));
    // No certificate in the CA file.
    ClientConfig noCa =
        ClientConfig.defaults().withTls(good.resolve("ca.key"), good.resolve("admin.pem"), good.resolve("admin.key"));
    e = assertThrows(IllegalArgumentException.class, () -> AmuletClient.connect(seeds, noCa));
    assertTrue(e.getMessage(), e.getMessage().contains(good.resolve("ca.key") + ": holds no PEM certificate"));
  }

  @Test
  public void theEnvironmentGivesTheDefault() throws Exception {
    Map<String, String> env = new java.util.HashMap<>();
    ClientConfig defaults = ClientConfig.defaults();
    assertNull(defaults.tls());
    assertNull(defaults.tlsInUse(env::get));
    env.put(TlsFiles.TLS_DIR_ENV, "");
    assertNull(defaults.tlsInUse(env::get));
    env.put(TlsFiles.TLS_DIR_ENV, good.toString());
    TlsFiles admin = defaults.tlsInUse(env::get);
    assertEquals(good.resolve("ca.pem"), admin.ca());
    assertEquals(good.resolve("admin.pem"), admin.cert());
    assertEquals(good.resolve("admin.key"), admin.key());
    env.put(TlsFiles.USER_ENV, "bob");
    assertEquals(good.resolve("bob.key"), defaults.tlsInUse(env::get).key());
    // Explicit settings win over the environment.
    assertNull(defaults.withPlaintext().tlsInUse(env::get));
    assertEquals(
        TlsFiles.inDir(other, "admin"), defaults.withTlsDir(other, "admin").tlsInUse(env::get));
    // Other settings keep the TLS ones.
    assertEquals(
        TlsFiles.inDir(other, "admin"),
        defaults.withTlsDir(other, "admin").withPageEntries(7).withOneReplicaPerPartition(false).tls());
    // A missing file of the environment's directory is named at connect.
    env.put(TlsFiles.USER_ENV, "bob");
    IllegalArgumentException e =
        assertThrows(IllegalArgumentException.class, () -> defaults.tlsInUse(env::get).sslContext());
    assertTrue(e.getMessage(), e.getMessage().contains(good.resolve("bob.pem").toString()));
  }
}
