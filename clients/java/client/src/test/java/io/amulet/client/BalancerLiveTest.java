package io.amulet.client;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertFalse;
import static org.junit.Assert.assertThrows;
import static org.junit.Assert.assertTrue;

import amulet.v1.AmuletOuterClass.BalancerStatus;
import amulet.v1.AmuletOuterClass.StatusResponse;
import io.amulet.testing.DevCluster;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.SortedMap;
import java.util.TreeMap;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import org.junit.After;
import org.junit.AfterClass;
import org.junit.Before;
import org.junit.BeforeClass;
import org.junit.Test;

/**
 * The balancer switch ({@code SetBalancer}, docs/dynatree.md "Pause and
 * decisions") against the shared {@code amulet dev} cluster ({@link
 * DevCluster#get()}, with TLS): every node paused answers {@code
 * enabled=false} and its Status says so, then resumed answers {@code true};
 * a user without the cluster admin role is refused at once and switches
 * nothing. Each node's switch is put back as it was after each test (it is
 * kept across restarts, and the other tests share the cluster).
 */
public class BalancerLiveTest {
  private static DevCluster cluster;
  private static AmuletClient admin;
  private static Balancer balancer;
  private static final List<AmuletClient> clients = new ArrayList<>();
  /** Each node's switch before the test (node id -> enabled). */
  private final Map<Integer, Boolean> before = new TreeMap<>();

  @BeforeClass
  public static void start() {
    cluster = DevCluster.get();
    admin = connect(cluster.config());
    balancer = new Balancer(admin);
  }

  @AfterClass
  public static void stop() {
    for (AmuletClient c : clients) {
      c.close();
    }
  }

  private static AmuletClient connect(ClientConfig config) {
    ClientConfig patient =
        config
            .withAttemptTimeout(Duration.ofSeconds(2))
            .withOperationTimeout(Duration.ofSeconds(20));
    AmuletClient c = AmuletClient.connect(cluster.addresses(), patient);
    clients.add(c);
    return c;
  }

  private static Map<Integer, String> nodes() {
    return new TreeMap<>(admin.routing().addresses);
  }

  @Before
  public void remember() {
    assertEquals(nodes().toString(), 3, nodes().size());
    for (int node : nodes().keySet()) {
      before.put(node, balancer.status(node).getEnabled());
    }
  }

  @After
  public void restore() {
    for (Map.Entry<Integer, Boolean> e : before.entrySet()) {
      balancer.set(e.getKey(), e.getValue());
    }
  }

  @Test(timeout = 60_000)
  public void pausingAndResumingEveryNode() {
    SortedMap<Integer, Balancer.Answer> paused = balancer.setEverywhere(false);
    assertEquals(nodes().keySet(), paused.keySet());
    for (Balancer.Answer a : paused.values()) {
      assertTrue("node " + a.node() + ": " + a.error(), a.ok());
      assertEquals(nodes().get(a.node()), a.address());
      assertFalse("node " + a.node(), a.get().getEnabled());
      assertTrue(a.status().getRecentCount() <= 16);
    }
    for (Map.Entry<Integer, String> n : nodes().entrySet()) {
      StatusResponse s = admin.status(n.getValue());
      assertEquals((int) n.getKey(), s.getNode());
      assertTrue(s.hasBalancer());
      assertFalse("node " + n.getKey(), s.getBalancer().getEnabled());
      assertFalse(balancer.status(n.getKey()).getEnabled());
      assertFalse(balancer.status(n.getValue()).getEnabled());
    }

    // Pausing again changes nothing; one node resumed alone, by address or id.
    int first = nodes().keySet().iterator().next();
    assertFalse(balancer.set(nodes().get(first), false).getEnabled());
    BalancerStatus resumed = balancer.set(first, true);
    assertTrue(resumed.getEnabled());
    for (int node : nodes().keySet()) {
      assertEquals("node " + node, node == first, balancer.status(node).getEnabled());
    }

    for (Balancer.Answer a : balancer.setEverywhere(true).values()) {
      assertTrue("node " + a.node() + ": " + a.error(), a.ok() && a.status().getEnabled());
      assertTrue(admin.status(a.address()).getBalancer().getEnabled());
    }
  }

  @Test(timeout = 60_000)
  public void aUserWithoutTheAdminRoleIsRefusedAndSwitchesNothing() {
    String user = "balancer-" + Integer.toHexString(ThreadLocalRandom.current().nextInt(1 << 24));
    AmuletClient nobody = connect(cluster.userConfig(user));
    Balancer theirs = new Balancer(nobody);
    int node = nodes().keySet().iterator().next();
    boolean running = before.get(node);
    assertEquals(running, theirs.status(node).getEnabled()); // reading it needs no role

    long start = System.nanoTime();
    AmuletException e = assertThrows(AmuletException.class, () -> theirs.set(node, !running));
    assertEquals(e.getMessage(), AmuletException.Kind.PERMISSION_DENIED, e.kind());
    assertTrue("not retried", TimeUnit.NANOSECONDS.toSeconds(System.nanoTime() - start) < 10);
    for (Balancer.Answer a : theirs.setEverywhere(!running).values()) {
      assertFalse(a.ok());
      AmuletException error = (AmuletException) a.error();
      assertEquals(AmuletException.Kind.PERMISSION_DENIED, error.kind());
      assertThrows(AmuletException.class, a::get);
    }
    for (Map.Entry<Integer, Boolean> b : before.entrySet()) {
      assertEquals("node " + b.getKey(), b.getValue(), balancer.status(b.getKey()).getEnabled());
    }
  }

  @Test
  public void aNodeNotInTheMapIsRefusedByTheClient() {
    assertThrows(IllegalArgumentException.class, () -> balancer.set(99_999, false));
    assertThrows(IllegalArgumentException.class, () -> balancer.status(99_999));
  }
}
