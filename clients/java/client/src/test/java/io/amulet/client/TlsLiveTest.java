package io.amulet.client;

import static org.junit.Assert.assertArrayEquals;
import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertThrows;
import static org.junit.Assert.assertTrue;

import io.amulet.testing.DevCluster;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import org.junit.Assume;
import org.junit.BeforeClass;
import org.junit.ClassRule;
import org.junit.Test;
import org.junit.rules.TemporaryFolder;

/**
 * TLS against real nodes: the shared {@code amulet dev} cluster ({@link
 * DevCluster#get()}, with TLS, its certificates made by {@code amulet
 * dev}), which every live test uses over TLS. The refusals of another
 * CA's certificates need {@code openssl}.
 */
public class TlsLiveTest {
  @ClassRule public static final TemporaryFolder TMP = new TemporaryFolder();

  private static DevCluster cluster;

  @BeforeClass
  public static void start() {
    cluster = DevCluster.get();
  }

  private static ClientConfig config() {
    return ClientConfig.defaults()
        .withAttemptTimeout(Duration.ofSeconds(2))
        .withOperationTimeout(Duration.ofSeconds(10));
  }

  private static byte[] b(String s) {
    return s.getBytes(StandardCharsets.UTF_8);
  }

  @Test(timeout = 120_000)
  public void theAdminOfAmuletDevWritesAndReads() {
    try (AmuletClient c =
        AmuletClient.connect(cluster.addresses(), config().withTlsDir(cluster.tlsDir(), "admin"))) {
      c.createMapIfAbsent("tls-live");
      ByteMap m = c.byteMap("tls-live");
      for (int i = 0; i < 50; i++) {
        m.put(b("k" + i), b("v" + i));
      }
      for (int i = 0; i < 50; i++) {
        assertArrayEquals(b("v" + i), m.get(b("k" + i)));
      }
      assertEquals(50, m.size());
      // A snapshot (ReadSnapshot streams) over TLS too.
      int seen = 0;
      try (Snapshot s = m.snapshot()) {
        while (s.hasNext()) {
          s.next();
          seen++;
        }
      }
      assertEquals(50, seen);
    }
  }

  @Test(timeout = 120_000)
  public void aNodeCertificateUsedByAClientIsUnauthenticatedAtOnce() {
    Path dir = cluster.tlsDir();
    ClientConfig asNode2 =
        config()
            .withOperationTimeout(Duration.ofSeconds(30))
            .withTls(dir.resolve("ca.pem"), dir.resolve("node-2.pem"), dir.resolve("node-2.key"));
    long start = System.nanoTime();
    AmuletException e =
        assertThrows(AmuletException.class, () -> AmuletClient.connect(cluster.addresses(), asNode2));
    long millis = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);
    assertEquals(e.getMessage(), AmuletException.Kind.UNAUTHENTICATED, e.kind());
    assertTrue(e.getMessage(), e.getMessage().contains("node 2"));
    // Final: not retried until the 30 s operation timeout.
    assertTrue("refused in " + millis + " ms", millis < 10_000);
  }

  @Test(timeout = 120_000)
  public void aPlaintextClientIsRefused() {
    long start = System.nanoTime();
    AmuletException e =
        assertThrows(
            AmuletException.class,
            () -> AmuletClient.connect(cluster.addresses(), config().withPlaintext()));
    long millis = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);
    assertEquals(e.getMessage(), AmuletException.Kind.UNAVAILABLE, e.kind());
    // The node alerts in TLS: known at once, not at the operation timeout.
    assertTrue(e.getMessage(), e.getMessage().contains("the node answered in TLS"));
    assertTrue(e.getMessage(), e.getMessage().contains("plaintext"));
    assertTrue("took " + millis + " ms: " + e.getMessage(), millis < 5_000);
  }

  @Test(timeout = 120_000)
  public void certificatesOfAnotherCaAreRefused() throws IOException {
    Assume.assumeTrue("the openssl command is needed", TestCerts.opensslAvailable());
    Path other = TMP.newFolder("other").toPath();
    TestCerts.ca(other, "ca");
    TestCerts.user(other, "ca", other, "admin");
    Path dev = cluster.tlsDir();
    // A client certificate of another CA is never taken. The nodes take
    // connections without a certificate too (a bearer token names the user
    // then), and name the CA they accept in their certificate request: the
    // JDK presents a certificate only when its issuer is named, so it
    // presents none, and the node refuses the request (UNAUTHENTICATED: no
    // certificate and no token). A TLS stack that presents it anyway fails
    // the handshake (UNAVAILABLE). Either way at once, and nothing is served.
    ClientConfig foreign =
        config().withTls(dev.resolve("ca.pem"), other.resolve("admin.pem"), other.resolve("admin.key"));
    long start = System.nanoTime();
    AmuletException e =
        assertThrows(AmuletException.class, () -> AmuletClient.connect(cluster.addresses(), foreign));
    long millis = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);
    if (e.kind() == AmuletException.Kind.UNAUTHENTICATED) {
      assertTrue(e.getMessage(), e.getMessage().contains("no client certificate"));
    } else {
      assertEquals(e.getMessage(), AmuletException.Kind.UNAVAILABLE, e.kind());
      assertTrue(e.getMessage(), e.getMessage().contains("TLS handshake failed"));
    }
    assertTrue("took " + millis + " ms: " + e.getMessage(), millis < 5_000);
    // The client refuses nodes whose CA is not the one it trusts.
    refusedQuickly(config().withTls(other.resolve("ca.pem"), dev.resolve("admin.pem"), dev.resolve("admin.key")));
  }

  private static void refusedQuickly(ClientConfig config) {
    long start = System.nanoTime();
    AmuletException e =
        assertThrows(AmuletException.class, () -> AmuletClient.connect(cluster.addresses(), config));
    long millis = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);
    assertEquals(e.getMessage(), AmuletException.Kind.UNAVAILABLE, e.kind());
    assertTrue(e.getMessage(), e.getMessage().contains("TLS handshake failed"));
    assertTrue("took " + millis + " ms: " + e.getMessage(), millis < 5_000);
  }
}
