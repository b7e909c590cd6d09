package io.amulet.client;

import static org.junit.Assert.assertArrayEquals;
import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertFalse;
import static org.junit.Assert.assertNotEquals;
import static org.junit.Assert.assertNull;
import static org.junit.Assert.assertThrows;
import static org.junit.Assert.assertTrue;

import amulet.v1.AmuletOuterClass.AccessConfiguration;
import amulet.v1.AmuletOuterClass.RoleGrant;
import amulet.v1.AmuletOuterClass.RoleGrants;
import amulet.v1.AmuletOuterClass.TokenInfo;
import amulet.v1.AmuletOuterClass.UserRoles;
import io.amulet.testing.DevCluster;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.regex.Pattern;
import org.junit.AfterClass;
import org.junit.BeforeClass;
import org.junit.Test;
import org.junit.function.ThrowingRunnable;

/**
 * Access control against real nodes (docs/security.md): the shared {@code
 * amulet dev} cluster ({@link DevCluster#get()}, with TLS), whose user
 * {@code admin} holds the built-in role {@code cluster-admin}. As the Rust
 * client's attack tests (crates/amulet-client/tests/access.rs): each
 * unauthorized request is refused with its status, at once (never
 * retried), and changes nothing; a token authenticates its user until
 * revoked or expired, and a forged one never does; a grant revoked while a
 * snapshot or a tail is open ends it with {@code PERMISSION_DENIED}.
 * Every map, log and role name has a suffix of its own, so the tests leave
 * the cluster's other users alone.
 */
public class AccessLiveTest {
  private static final Pattern TOKEN = Pattern.compile("amt1\\.([0-9a-f]{16})\\.[0-9a-f]{64}");

  private static DevCluster cluster;
  private static AmuletClient admin;
  private static final List<AmuletClient> clients = new ArrayList<>();
  private static final String SUFFIX =
      Long.toHexString(ThreadLocalRandom.current().nextLong() & 0xffffffffL);

  @BeforeClass
  public static void start() {
    cluster = DevCluster.get();
    admin = connect(cluster.config());
  }

  @AfterClass
  public static void stop() {
    for (AmuletClient c : clients) {
      c.close();
    }
  }

  /** Short timeouts: a refusal retried until the operation timeout would show. */
  private static ClientConfig withTimeouts(ClientConfig c) {
    return c.withAttemptTimeout(Duration.ofSeconds(2)).withOperationTimeout(Duration.ofSeconds(20));
  }

  private static AmuletClient connect(ClientConfig config) {
    AmuletClient c = AmuletClient.connect(cluster.addresses(), withTimeouts(config));
    synchronized (clients) {
      clients.add(c);
    }
    return c;
  }

  private static String name(String base) {
    return base + "-" + SUFFIX;
  }

  private static byte[] b(String s) {
    return s.getBytes(StandardCharsets.UTF_8);
  }

  /**
   * {@code op} fails with {@code kind} well before the 20 s operation
   * timeout (a refusal is final, not retried).
   */
  private static AmuletException refused(AmuletException.Kind kind, String what, ThrowingRunnable op) {
    long start = System.nanoTime();
    AmuletException e = assertThrows(what, AmuletException.class, op);
    long millis = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);
    assertEquals(what + ": " + e.getMessage(), kind, e.kind());
    assertTrue(what + " took " + millis + " ms: " + e.getMessage(), millis < 10_000);
    return e;
  }

  private static AmuletException denied(String what, ThrowingRunnable op) {
    return refused(AmuletException.Kind.PERMISSION_DENIED, what, op);
  }

  private static AmuletException unauthenticated(String what, ThrowingRunnable op) {
    return refused(AmuletException.Kind.UNAUTHENTICATED, what, op);
  }

  private static boolean grants(AccessConfiguration access, String role, String map, Permission p) {
    for (RoleGrants r : access.getRolesList()) {
      if (r.getRole().equals(role)) {
        for (RoleGrant g : r.getGrantsList()) {
          if (g.getMap().equals(map) && g.getPermission() == p.toProto()) {
            return true;
          }
        }
      }
    }
    return false;
  }

  private static List<String> rolesOf(AccessConfiguration access, String user) {
    for (UserRoles u : access.getUsersList()) {
      if (u.getUser().equals(user)) {
        return u.getRolesList();
      }
    }
    return List.of();
  }

  @Test(timeout = 240_000)
  public void aReadOnlyUserReadsAndEverythingElseIsDeniedAndChangesNothing() {
    String carts = name("acl-carts");
    String secret = name("acl-secret");
    String readers = name("readers");
    ByteMap adminCarts = admin.createMapIfAbsent(carts);
    ByteMap adminSecret = admin.createMapIfAbsent(secret);
    for (int i = 0; i < 10; i++) {
      adminCarts.put(b("k" + i), b("v"));
    }
    adminSecret.put(b("s"), b("1"));
    admin.grant(readers, carts, Permission.READ);
    admin.assignRole("alice", readers);

    AccessConfiguration access = admin.access();
    assertTrue(access.toString(), grants(access, readers, carts, Permission.READ));
    assertTrue(access.toString(), rolesOf(access, "alice").contains(readers));
    assertTrue(access.toString(), rolesOf(access, "admin").contains("cluster-admin"));
    WhoAmI me = admin.whoAmI();
    assertEquals("admin", me.user());
    assertTrue(me.toString(), me.roles().contains("cluster-admin"));
    assertNull(me.tokenId());
    assertTrue(me.secure());

    // alice: her own certificate, made by `amulet cert create-client`.
    AmuletClient alice = connect(cluster.userConfig("alice"));
    WhoAmI who = alice.whoAmI();
    assertEquals("alice", who.user());
    assertTrue(who.toString(), who.roles().contains(readers));
    assertNull(who.tokenId());

    // Reads of the map granted: one by one, ranges, a snapshot.
    ByteMap aliceCarts = alice.byteMap(carts);
    assertArrayEquals(b("v"), aliceCarts.get(b("k1")));
    assertEquals(10, aliceCarts.size());
    int seen = 0;
    try (Snapshot s = aliceCarts.snapshot()) {
      while (s.hasNext()) {
        s.next();
        seen++;
      }
    }
    assertEquals(10, seen);
    assertArrayEquals(b("v"), alice.transact(tx -> tx.get(carts, b("k2"))));

    // Writes are denied, and change nothing.
    denied("a reader's put", () -> aliceCarts.put(b("k1"), b("stolen")));
    denied("a reader's remove", () -> aliceCarts.remove(b("k2")));
    denied("a reader's clear", aliceCarts::clear);
    denied("a reader's put unbatched",
        () -> connect(cluster.userConfig("alice").withBatchesInFlight(0))
            .byteMap(carts).put(b("k3"), b("stolen")));
    denied(
        "a reader's transaction",
        () -> alice.transact(tx -> {
          tx.put(carts, b("k4"), b("stolen"));
          return null;
        }));
    denied("a reader dropping the map", () -> alice.dropMap(carts));
    // A map not granted: not even told whether it exists.
    denied("reading a map not granted", () -> alice.byteMap(secret).get(b("s")));
    denied("reading a map that does not exist", () -> alice.byteMap(name("acl-nothing")).get(b("s")));
    denied("creating a map", () -> alice.createMap(name("acl-alices")));
    // Access control is the cluster admin's.
    denied("a reader granting herself write", () -> alice.grant(readers, carts, Permission.WRITE));
    denied("a reader making herself cluster admin", () -> alice.assignRole("alice", "cluster-admin"));
    denied("a reader reading the access configuration", alice::access);
    denied("a reader creating a token", () -> alice.createToken("alice", 60));

    for (int i = 0; i < 10; i++) {
      assertArrayEquals("k" + i, b("v"), adminCarts.get(b("k" + i)));
    }
    assertEquals(10, adminCarts.size());
    assertEquals(1, adminSecret.size());
    refused(
        AmuletException.Kind.NOT_FOUND,
        "the map alice tried to create",
        () -> admin.byteMap(name("acl-alices")).get(b("x")));
    assertEquals(rolesOf(access, "alice"), rolesOf(admin.access(), "alice"));

    // Unassigned: alice may read nothing any more.
    admin.unassignRole("alice", readers);
    assertFalse(rolesOf(admin.access(), "alice").contains(readers));
    denied("a read after the role was unassigned", () -> aliceCarts.get(b("k1")));
    admin.revoke(readers, carts);
    assertFalse(grants(admin.access(), readers, carts, Permission.READ));
    admin.dropMap(carts);
    admin.dropMap(secret);
  }

  @Test(timeout = 240_000)
  public void aGrantRevokedWhileASnapshotOrATailIsOpenEndsItWithPermissionDenied() {
    String big = name("acl-big");
    String events = name("acl-events");
    String role = name("followers");
    String user = "alice";
    ByteMap adminBig = admin.createMapIfAbsent(big);
    // Larger than the streams' HTTP/2 windows (1 MiB each): most pages are
    // sent after the revocation (those already sent are not recalled).
    byte[] value = new byte[64 * 1024];
    for (int i = 0; i < 240; i++) {
      adminBig.put(b(String.format("b%03d", i)), value);
    }
    AmuletLog adminEvents = admin.createLogIfAbsent(events);
    adminEvents.append(b("e0"));
    admin.grant(role, big, Permission.READ);
    admin.grant(role, events, Permission.READ);
    admin.assignRole(user, role);
    AmuletClient alice = connect(cluster.userConfig(user).withPageEntries(1));

    // The snapshot: a page of each partition read, then revoked.
    Snapshot snapshot = alice.byteMap(big).snapshot();
    assertTrue(snapshot.hasNext());
    snapshot.next();
    admin.revoke(role, big);
    int afterRevocation = 0;
    long start = System.nanoTime();
    AmuletException e = null;
    try {
      while (snapshot.hasNext()) {
        snapshot.next();
        afterRevocation++;
      }
    } catch (AmuletException x) {
      e = x;
    }
    long millis = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);
    assertTrue("the snapshot went on to its end: " + afterRevocation + " entries", e != null);
    assertEquals(e.getMessage(), AmuletException.Kind.PERMISSION_DENIED, e.kind());
    assertTrue(afterRevocation + " entries after the revocation", afterRevocation < 239);
    assertTrue("took " + millis + " ms", millis < 10_000);
    snapshot.close();

    // The tail: its first entry, then revoked.
    try (LogTail tail = alice.log(events).tail(0)) {
      assertArrayEquals(b("e0"), tail.next().value());
      admin.revoke(role, events);
      start = System.nanoTime();
      e = assertThrows(AmuletException.class, () -> tail.poll(Duration.ofSeconds(30)));
      millis = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);
      assertEquals(e.getMessage(), AmuletException.Kind.PERMISSION_DENIED, e.kind());
      assertTrue("took " + millis + " ms", millis < 10_000);
      assertEquals("reconnects", 0, tail.reconnects());
    }
    admin.unassignRole(user, role);
    admin.dropMap(big);
    admin.dropLog(events);
  }

  @Test(timeout = 240_000)
  public void aTokenAuthenticatesUntilRevokedAndAForgedOneNeverDoes() throws Exception {
    String carts = name("acl-token-carts");
    String other = name("acl-token-other");
    String events = name("acl-token-events");
    String writers = name("writers");
    String carol = name("carol");
    Path ca = cluster.tlsDir().resolve("ca.pem");
    ByteMap adminCarts = admin.createMapIfAbsent(carts);
    admin.createMapIfAbsent(other).put(b("x"), b("1"));
    admin.createLogIfAbsent(events);
    admin.grant(writers, carts, Permission.WRITE);
    admin.grant(writers, events, Permission.WRITE);
    admin.assignRole(carol, writers);

    CreatedToken created = admin.createToken(carol, 3600);
    java.util.regex.Matcher m = TOKEN.matcher(created.token());
    assertTrue(created.id(), m.matches());
    assertEquals(m.group(1), created.id());
    assertFalse("toString hides the secret", created.toString().contains(created.token()));
    assertFalse(created.toString().contains(created.token().substring(22)));
    long now = System.currentTimeMillis() * 1000;
    assertTrue(created.expiresUnixMicros() > now + 3_500_000_000L);
    assertTrue(created.expiresUnixMicros() < now + 3_700_000_000L);
    AccessConfiguration access = admin.access();
    boolean listed = false;
    for (TokenInfo t : access.getTokensList()) {
      listed |= t.getId().equals(created.id()) && t.getUser().equals(carol);
    }
    assertTrue(access.getTokensList().toString(), listed);
    assertFalse("the access configuration never shows a secret",
        access.toString().contains(created.token().substring(22)));

    // The token's user, with its role: writes and reads (unary calls,
    // batched and not, a snapshot's and a tail's streams).
    ClientConfig withToken = cluster.config().withToken(ca, created.token());
    assertFalse(withToken.toString().contains(created.token().substring(22)));
    AmuletClient carolClient = connect(withToken);
    assertFalse(carolClient.tls().hasCertificate());
    ByteMap carolCarts = carolClient.byteMap(carts);
    carolCarts.put(b("c"), b("1"));
    assertArrayEquals(b("1"), carolCarts.get(b("c")));
    connect(withToken.withBatchesInFlight(0)).byteMap(carts).put(b("d"), b("1"));
    int seen = 0;
    try (Snapshot s = carolCarts.snapshot()) {
      while (s.hasNext()) {
        s.next();
        seen++;
      }
    }
    assertEquals(2, seen);
    AmuletLog carolEvents = carolClient.log(events);
    carolEvents.append(b("e0"));
    try (LogTail tail = carolEvents.tail(0)) {
      assertArrayEquals(b("e0"), tail.next().value());
    }
    WhoAmI who = carolClient.whoAmI();
    assertEquals(carol, who.user());
    assertEquals(created.id(), who.tokenId());
    assertEquals(List.of(writers), who.roles());
    assertTrue(who.secure());
    // Its user's roles only.
    denied("a token's user reading a map not granted", () -> carolClient.byteMap(other).get(b("x")));
    denied("a token's user creating a token", () -> carolClient.createToken(carol, 60));

    // A forged token: the right id, another secret (its last hex digit).
    String token = created.token();
    char last = token.charAt(token.length() - 1);
    String forged = token.substring(0, token.length() - 1) + (last == '0' ? '1' : '0');
    AmuletException e =
        unauthenticated("a forged token", () -> connect(cluster.config().withToken(ca, forged)));
    assertFalse(e.getMessage(), e.getMessage().contains(forged.substring(22)));
    unauthenticated("a malformed token", () -> connect(cluster.config().withToken(ca, "amt1.nonsense")));
    // No certificate and no token.
    unauthenticated(
        "no credential", () -> connect(cluster.config().withTls(TlsFiles.caOnly(ca))));

    // Revoked: the same token is refused, on a connection open before the
    // revocation too, and nothing it sends changes anything.
    admin.revokeToken(created.id());
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
    while (true) {
      // Every node refuses it once its replicas executed the revocation.
      try {
        carolCarts.get(b("c"));
      } catch (AmuletException x) {
        assertEquals(x.getMessage(), AmuletException.Kind.UNAUTHENTICATED, x.kind());
        break;
      }
      assertTrue("the revoked token still reads", System.nanoTime() < deadline);
      Thread.sleep(50);
    }
    unauthenticated("a put with the revoked token", () -> carolCarts.put(b("c"), b("2")));
    unauthenticated("a new client with the revoked token", () -> connect(withToken));
    assertFalse(rolesOf(admin.access(), carol).isEmpty());
    for (TokenInfo t : admin.access().getTokensList()) {
      assertNotEquals("the revoked token is gone", created.id(), t.getId());
    }
    assertArrayEquals(b("1"), adminCarts.get(b("c")));

    // An expired token (a second's lifetime).
    CreatedToken shortLived = admin.createToken(carol, 1);
    Thread.sleep(1_100);
    unauthenticated(
        "an expired token", () -> connect(cluster.config().withToken(ca, shortLived.token())));

    admin.unassignRole(carol, writers);
    admin.dropMap(carts);
    admin.dropMap(other);
    admin.dropLog(events);
  }

  @Test(timeout = 120_000)
  public void badAccessChangesAreIllegalArguments() {
    // The last cluster admin cannot lose the role.
    IllegalArgumentException e =
        assertThrows(IllegalArgumentException.class, () -> admin.unassignRole("admin", "cluster-admin"));
    assertTrue(e.getMessage(), e.getMessage().contains("access-change-refused"));
    assertTrue(admin.whoAmI().roles().contains("cluster-admin"));
    // Names of 1 to 256 bytes without control characters; cluster-admin's
    // grants are built in.
    assertThrows(IllegalArgumentException.class, () -> admin.grant("", "m", Permission.READ));
    assertThrows(IllegalArgumentException.class, () -> admin.grant("bad\u0001", "m", Permission.READ));
    assertThrows(IllegalArgumentException.class, () -> admin.assignRole("x".repeat(257), "r"));
    assertThrows(
        IllegalArgumentException.class, () -> admin.grant("cluster-admin", "m", Permission.READ));
    assertThrows(IllegalArgumentException.class, () -> admin.createToken("carol", 400_000_000L));
    assertThrows(IllegalArgumentException.class, () -> admin.createToken("carol", -1));
    // Grants of every map ("*") are listed as such.
    String all = name("auditors");
    admin.grant(all, "*", Permission.READ);
    assertTrue(grants(admin.access(), all, "*", Permission.READ));
    admin.revoke(all, "*");
    assertFalse(grants(admin.access(), all, "*", Permission.READ));
  }
}
