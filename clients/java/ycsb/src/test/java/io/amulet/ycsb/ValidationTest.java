package io.amulet.ycsb;

import static org.junit.Assert.assertArrayEquals;
import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertFalse;
import static org.junit.Assert.assertTrue;

import io.amulet.client.ClientConfig;
import io.amulet.client.TlsFiles;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import java.util.Properties;
import java.util.TreeMap;
import java.util.function.Function;
import org.junit.Rule;
import org.junit.Test;
import org.junit.rules.TemporaryFolder;
import site.ycsb.DBException;

/** The YCSB+T-style counter of amulet.validate and init's refusals, without a cluster. */
public class ValidationTest {
  @Rule public final TemporaryFolder tmp = new TemporaryFolder();

  private static byte[] utf8(String s) {
    return s.getBytes(StandardCharsets.UTF_8);
  }

  @Test
  public void countersAreDecimalAndAnythingElseCountsZero() {
    assertEquals(0, AmuletYcsbClient.counterOf(null));
    assertEquals(0, AmuletYcsbClient.counterOf(new byte[0]));
    assertEquals(0, AmuletYcsbClient.counterOf(utf8("12a")));
    assertEquals(0, AmuletYcsbClient.counterOf(utf8("-3")));
    // YCSB's loaded values: 100 random printable characters.
    assertEquals(0, AmuletYcsbClient.counterOf(utf8("7".repeat(99) + "x")));
    assertEquals(0, AmuletYcsbClient.counterOf(utf8("1".repeat(19))));
    for (long n : new long[] {0, 1, 9, 10, 12345, 999_999_999_999_999_999L}) {
      assertEquals(n, AmuletYcsbClient.counterOf(AmuletYcsbClient.counterBytes(n)));
    }
  }

  @Test
  public void anUpdateIncrementsTheCounterOverYcsbsValue() {
    Map<String, byte[]> fields = new TreeMap<>();
    fields.put("field0", utf8("random bytes from the load"));
    fields.put("field1", utf8("one"));
    byte[] record = AmuletYcsbClient.encode(fields);

    // YCSB's read-modify-write chose field0 itself: the counter wins.
    Map<String, byte[]> changes = new TreeMap<>();
    changes.put("field0", utf8("new random value"));
    changes.put("field2", utf8("two"));
    Map<String, byte[]> once = AmuletYcsbClient.updated(record, changes, "field0");
    assertArrayEquals(utf8("1"), once.get("field0"));
    assertArrayEquals(utf8("one"), once.get("field1"));
    assertArrayEquals(utf8("two"), once.get("field2"));

    Map<String, byte[]> twice =
        AmuletYcsbClient.updated(AmuletYcsbClient.encode(once), Map.of(), "field0");
    assertEquals(2, AmuletYcsbClient.counterOf(twice.get("field0")));

    // Without a counter field, an update is YCSB's merge.
    Map<String, byte[]> plain = AmuletYcsbClient.updated(record, changes, null);
    assertArrayEquals(utf8("new random value"), plain.get("field0"));
  }

  @Test
  public void theCheckComparesGrowthWithCommits() {
    TransactionStats.Validation ok = TransactionStats.check(5, 105, 100, 0);
    assertTrue(ok.ok);
    assertEquals("validation: ok (100 increments)", ok.line);

    // A lost update: two commits, one increment.
    TransactionStats.Validation lost = TransactionStats.check(0, 99, 100, 0);
    assertFalse(lost.ok);
    assertEquals("validation: FAILED expected 100 got 99", lost.line);
    assertFalse(TransactionStats.check(0, 101, 100, 0).ok);

    // Commits of unknown outcome may or may not have applied.
    assertTrue(TransactionStats.check(0, 100, 100, 2).ok);
    assertTrue(TransactionStats.check(0, 102, 100, 2).ok);
    TransactionStats.Validation over = TransactionStats.check(0, 103, 100, 2);
    assertFalse(over.ok);
    assertEquals("validation: FAILED expected 100 to 102 got 103", over.line);
  }

  @Test
  public void validateRefusesSettingsItCannotCheck() {
    Properties p = new Properties();
    p.setProperty("amulet.validate", "true");
    p.setProperty("workload", TransactionalWorkload.class.getName());
    assertInitFails(p, "needs amulet.transactional=true");

    p.setProperty("amulet.transactional", "true");
    p.setProperty("workload", "site.ycsb.workloads.CoreWorkload");
    assertInitFails(p, "needs workload=io.amulet.ycsb.TransactionalWorkload");

    p.setProperty("workload", TransactionalWorkload.class.getName());
    p.setProperty("dataintegrity", "true");
    assertInitFails(p, "dataintegrity");
  }

  /** A TLS directory with (empty) files for the users admin and bob. */
  private Path tlsDir() throws IOException {
    Path dir = tmp.newFolder("tls").toPath();
    for (String f : new String[] {"ca.pem", "admin.pem", "admin.key", "bob.pem", "bob.key"}) {
      Files.write(dir.resolve(f), new byte[0]);
    }
    return dir;
  }

  @Test
  public void tlsComesFromThePropertiesElseTheEnvironment() throws Exception {
    Path dir = tlsDir();
    Function<String, String> none = name -> null;
    Properties p = new Properties();
    assertEquals(null, AmuletYcsbClient.clientConfig(p, none).tlsInUse());

    // The environment: AMULET_TLS_DIR, AMULET_USER (default admin).
    Map<String, String> env = new TreeMap<>();
    env.put(TlsFiles.TLS_DIR_ENV, dir.toString());
    ClientConfig fromEnv = AmuletYcsbClient.clientConfig(p, env::get);
    assertEquals(TlsFiles.inDir(dir, "admin"), fromEnv.tlsInUse());
    env.put(TlsFiles.USER_ENV, "bob");
    assertEquals(TlsFiles.inDir(dir, "bob"), AmuletYcsbClient.clientConfig(p, env::get).tlsInUse());

    // The properties win over the environment.
    p.setProperty("amulet.user", "admin");
    assertEquals(TlsFiles.inDir(dir, "admin"), AmuletYcsbClient.clientConfig(p, env::get).tlsInUse());
    p.setProperty("amulet.tlsdir", dir.toString());
    p.setProperty("amulet.user", "bob");
    assertEquals(TlsFiles.inDir(dir, "bob"), AmuletYcsbClient.clientConfig(p, none).tlsInUse());
    // An empty amulet.tlsdir: plaintext, whatever the environment says.
    p.setProperty("amulet.tlsdir", "");
    assertEquals(null, AmuletYcsbClient.clientConfig(p, env::get).tlsInUse());
  }

  @Test
  public void aMissingTlsFileOrABadUserIsRefusedAtInit() throws Exception {
    Path dir = tlsDir();
    Properties p = new Properties();
    p.setProperty("amulet.addrs", "127.0.0.1:1");
    p.setProperty("amulet.tlsdir", dir.toString());
    p.setProperty("amulet.user", "carol");
    assertInitFails(p, "carol.pem: no such file");
    p.setProperty("amulet.user", "../bob");
    assertInitFails(p, "bad TLS user name");
    p.setProperty("amulet.tlsdir", dir.resolve("nowhere").toString());
    p.setProperty("amulet.user", "admin");
    assertInitFails(p, "does not exist");
  }

  /** init refuses before it connects, so no cluster is needed. */
  private static void assertInitFails(Properties p, String why) {
    AmuletYcsbClient db = new AmuletYcsbClient();
    db.setProperties(p);
    try {
      db.init();
    } catch (DBException e) {
      assertTrue(e.getMessage(), e.getMessage().contains(why));
      return;
    }
    db.cleanup();
    throw new AssertionError("init accepted " + p);
  }
}
