package io.amulet.client;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertFalse;
import static org.junit.Assert.assertNotEquals;
import static org.junit.Assert.assertNotNull;
import static org.junit.Assert.assertNull;
import static org.junit.Assert.assertTrue;

import amulet.v1.AmuletOuterClass;
import amulet.v1.AmuletOuterClass.MapRequest;
import amulet.v1.AmuletOuterClass.MapResponse;
import io.grpc.Metadata;
import io.grpc.Status;
import io.grpc.stub.StreamObserver;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.After;
import org.junit.Test;

/**
 * The replica a command attempt goes to ({@link ReplicaChooser}, {@link
 * Routing#preferred}, {@link Routing#score}), as the Rust client's
 * crates/amulet-client/src/rules/routing.rs: the score bit for bit, a seed's
 * one replica, the spread over seeds and when a replica leaves, suspects
 * left out for two attempt timeouts, resends to a random other replica;
 * then through {@link AmuletClient} against three fake nodes.
 */
public class ReplicaPreferenceTest {
  private static final Duration ATTEMPT = Duration.ofMillis(300);

  /** One partition (0) on nodes 1, 2, 3, all with an address. */
  static Routing threeReplicas(String... addresses) {
    return Routing.fromProto(threeReplicaMap(addresses));
  }

  /** The map of {@link #threeReplicas}; default addresses when none are given. */
  static AmuletOuterClass.PartitionMap threeReplicaMap(String... addresses) {
    AmuletOuterClass.PartitionMap.Builder m =
        AmuletOuterClass.PartitionMap.newBuilder()
            .setVersion(1)
            .addPartitions(
                AmuletOuterClass.Partition.newBuilder()
                    .setId(0)
                    .setStream(1)
                    .addReplicas(1)
                    .addReplicas(2)
                    .addReplicas(3))
            .addTokenRing(AmuletOuterClass.TokenRange.newBuilder().setFirstToken(0).setPartition(0))
            .addKeyspaces(
                AmuletOuterClass.Keyspace.newBuilder()
                    .setName("m")
                    .setLayout(
                        AmuletOuterClass.Layout.newBuilder()
                            .setHash(AmuletOuterClass.HashLayout.getDefaultInstance())));
    for (int node = 1; node <= 3; node++) {
      String address = addresses.length == 0 ? "127.0.0.1:" + (7100 + node) : addresses[node - 1];
      m.addNodes(AmuletOuterClass.NodeAddress.newBuilder().setNode(node).setAddress(address));
    }
    return m.build();
  }

  /** A chooser with {@code seed} (null: random) on a clock the test moves. */
  static ReplicaChooser chooser(Long seed, AtomicLong clock) {
    return new ReplicaChooser(seed, ATTEMPT, clock::get);
  }

  // ---- the Rust client's function, offline ---------------------------------

  @Test
  public void theScoreIsTheRustClients() {
    // From crates/amulet-client/src/rules/routing.rs `score` (fed4fd8), run
    // outside the repository with these inputs.
    assertEquals(0x0000000000000000L, Routing.score(0L, 0));
    assertEquals(0xe220a8397b1dcdafL, Routing.score(0L, 1));
    assertEquals(0x6e789e6aa1b965f4L, Routing.score(0L, 2));
    assertEquals(0x06c45d188009454fL, Routing.score(0L, 3));
    assertEquals(0xbdd732262feb6e95L, Routing.score(42L, 1));
    assertEquals(0xd9639a006c85adb0L, Routing.score(42L, 2));
    assertEquals(0x5fd30d2fcbef75e3L, Routing.score(42L, 3));
    assertEquals(0xde0a564cbcd060c4L, Routing.score(-1L, 1));
    assertEquals(0x967abbb139cf395aL, Routing.score(0x0123456789abcdefL, 7));
    // Node ids are unsigned 32-bit: u32::MAX.
    assertEquals(0x8d9bd22782df8583L, Routing.score(0x8000000000000000L, -1));
  }

  @Test
  public void thePreferredReplicaIsTheRustClients() {
    // Seed 0: node 1 scores 0xe220... (negative as a signed long), so a
    // signed comparison would pick node 2.
    assertEquals(Integer.valueOf(1), Routing.preferred(List.of(1, 2, 3), 0L));
    assertEquals(Integer.valueOf(2), Routing.preferred(List.of(2, 3), 0L));
    assertEquals(Integer.valueOf(1), Routing.preferred(List.of(1, 2, 3), 1L));
    assertEquals(Integer.valueOf(2), Routing.preferred(List.of(1, 2, 3), 42L));
    assertEquals(Integer.valueOf(1), Routing.preferred(List.of(1, 2, 3), -1L));
    assertEquals(Integer.valueOf(3), Routing.preferred(List.of(2, 3), -1L));
    assertEquals(Integer.valueOf(2), Routing.preferred(List.of(1, 2, 3), 0x0123456789abcdefL));
    // The order of the candidates does not matter.
    assertEquals(Integer.valueOf(1), Routing.preferred(List.of(3, 2, 1), 0L));
    // A tie (the same node twice) is that node; no candidate, none.
    assertEquals(Integer.valueOf(2), Routing.preferred(List.of(2, 2), 5L));
    assertNull(Routing.preferred(List.of(), 1L));
  }

  @Test
  public void preferredReplicasSpreadOverSeedsAndMoveApart() {
    // The Rust test's seeds (rules/tests.rs): seed * 0x2545F4914F6CDD1D.
    int[] count = new int[3];
    int[] movedTo = new int[3];
    for (long i = 0; i < 3_000; i++) {
      long seed = i * 0x2545F4914F6CDD1DL;
      int first = Routing.preferred(List.of(1, 2, 3), seed);
      count[first - 1]++;
      // Without node 1, the clients that preferred it split over the other
      // two; the others keep theirs.
      int next = Routing.preferred(List.of(2, 3), seed);
      if (first == 1) {
        movedTo[next - 1]++;
      } else {
        assertEquals("seed " + seed + " lost its replica", first, next);
      }
    }
    for (int c : count) {
      assertTrue("uneven: " + java.util.Arrays.toString(count), c >= 850 && c <= 1_150);
    }
    assertTrue(java.util.Arrays.toString(movedTo), movedTo[1] > 350 && movedTo[2] > 350);
    // Exactly the Rust client's counts for the same seeds.
    assertEquals("[973, 986, 1041]", java.util.Arrays.toString(count));
    assertEquals("[0, 469, 504]", java.util.Arrays.toString(movedTo));
  }

  @Test
  public void randomSeedsSpreadAndAnyRemovedNodeSplits() {
    // Seeds as clients draw them, and each node removed in turn.
    java.util.Random random = new java.util.Random(7);
    long[] seeds = new long[3_000];
    int[] count = new int[4];
    for (int i = 0; i < seeds.length; i++) {
      seeds[i] = random.nextLong();
      count[Routing.preferred(List.of(1, 2, 3), seeds[i])]++;
    }
    for (int node = 1; node <= 3; node++) {
      assertTrue("uneven: " + java.util.Arrays.toString(count), count[node] >= 850 && count[node] <= 1_150);
    }
    for (int removed = 1; removed <= 3; removed++) {
      List<Integer> rest = new ArrayList<>(List.of(1, 2, 3));
      rest.remove(Integer.valueOf(removed));
      int[] movedTo = new int[4];
      for (long seed : seeds) {
        int first = Routing.preferred(List.of(1, 2, 3), seed);
        int next = Routing.preferred(rest, seed);
        if (first == removed) {
          movedTo[next]++;
        } else {
          assertEquals(first, next);
        }
      }
      for (int node : rest) {
        assertTrue(removed + " removed: " + java.util.Arrays.toString(movedTo), movedTo[node] > 350);
      }
    }
  }

  // ---- the chooser, offline -------------------------------------------------

  @Test
  public void oneSeedOneReplicaOverManyCalls() {
    Routing r = threeReplicas();
    AtomicLong clock = new AtomicLong();
    Set<Integer> seen = new HashSet<>();
    for (long seed = 0; seed < 200; seed++) {
      ReplicaChooser c = chooser(seed, clock);
      Set<Integer> chosen = new HashSet<>();
      for (int i = 0; i < 100; i++) {
        chosen.add(c.choose(r, 0, null));
      }
      assertEquals("seed " + seed + ": " + chosen, 1, chosen.size());
      assertEquals(Routing.preferred(List.of(1, 2, 3), seed), chosen.iterator().next());
      // Another chooser with the same seed (another client) agrees.
      assertEquals(chosen.iterator().next().intValue(), chooser(seed, clock).choose(r, 0, null));
      seen.addAll(chosen);
    }
    assertEquals("200 seeds use every replica", Set.of(1, 2, 3), seen);
    // Without a preference, the same calls spread.
    ReplicaChooser random = chooser(null, clock);
    Set<Integer> spread = new HashSet<>();
    for (int i = 0; i < 200; i++) {
      spread.add(random.choose(r, 0, null));
    }
    assertEquals(Set.of(1, 2, 3), spread);
  }

  @Test
  public void theOptionDecidesWhetherTheClientPrefers() {
    assertTrue(ClientConfig.defaults().oneReplicaPerPartition());
    ClientConfig off = ClientConfig.defaults().withOneReplicaPerPartition(false);
    assertFalse(off.oneReplicaPerPartition());
    assertTrue(off.withOneReplicaPerPartition(true).oneReplicaPerPartition());
    // Other settings keep it.
    assertFalse(off.withAttemptTimeout(Duration.ofSeconds(1)).withBatchesInFlight(3).oneReplicaPerPartition());
    assertNull(new ReplicaChooser(off).seed());
    assertNotNull(new ReplicaChooser(ClientConfig.defaults()).seed());
    // Each client draws its own seed.
    Set<Long> seeds = new HashSet<>();
    for (int i = 0; i < 20; i++) {
      seeds.add(new ReplicaChooser(ClientConfig.defaults()).seed());
    }
    assertTrue(seeds.size() > 1);
  }

  @Test
  public void aSuspectIsSkippedAndComesBackAfterTwoAttemptTimeouts() {
    Routing r = threeReplicas();
    long twice = 2 * ATTEMPT.toNanos();
    for (long seed = 0; seed < 100; seed++) {
      AtomicLong clock = new AtomicLong(seed * 1_000_000_007L - (1L << 40));
      ReplicaChooser c = chooser(seed, clock);
      int preferred = c.choose(r, 0, null);
      c.suspect(preferred);
      assertTrue(c.suspected(preferred));
      List<Integer> rest = new ArrayList<>(List.of(1, 2, 3));
      rest.remove(Integer.valueOf(preferred));
      int next = Routing.preferred(rest, seed);
      for (int i = 0; i < 20; i++) {
        assertEquals("seed " + seed + ": to its next-highest replica", next, c.choose(r, 0, null));
      }
      clock.addAndGet(twice - 1);
      assertEquals(next, c.choose(r, 0, null));
      clock.addAndGet(1);
      assertFalse(c.suspected(preferred));
      assertEquals("seed " + seed + ": back after its time", preferred, c.choose(r, 0, null));
      // An executed attempt clears a suspect before its time.
      c.suspect(preferred);
      assertEquals(next, c.choose(r, 0, null));
      c.executed(preferred);
      assertEquals(preferred, c.choose(r, 0, null));
      // Every replica suspected: all of them are candidates again.
      for (int node = 1; node <= 3; node++) {
        c.suspect(node);
      }
      assertEquals(preferred, c.choose(r, 0, null));
      // Two suspected: the third.
      c.executed(next);
      assertEquals(next, c.choose(r, 0, null));
    }
  }

  @Test
  public void withoutAPreferenceSuspectsAreSkippedToo() {
    Routing r = threeReplicas();
    AtomicLong clock = new AtomicLong();
    ReplicaChooser c = chooser(null, clock);
    c.suspect(2);
    Set<Integer> seen = new HashSet<>();
    for (int i = 0; i < 200; i++) {
      seen.add(c.choose(r, 0, null));
    }
    assertEquals(Set.of(1, 3), seen);
  }

  @Test
  public void aSessionOpeningLeavesSuspectsOutToo() {
    Routing r = threeReplicas();
    AtomicLong clock = new AtomicLong();
    ReplicaChooser c = chooser(null, clock);
    c.suspect(2);
    Set<Integer> seen = new HashSet<>();
    for (int i = 0; i < 200; i++) {
      seen.add(c.anyNode(r));
    }
    assertEquals(Set.of(1, 3), seen);
    // Every node suspected: any of them, rather than none.
    c.suspect(1);
    c.suspect(3);
    seen.clear();
    for (int i = 0; i < 200; i++) {
      seen.add(c.anyNode(r));
    }
    assertEquals(Set.of(1, 2, 3), seen);
  }

  @Test
  public void aResendAfterAFailureGoesToARandomOtherReplica() {
    Routing r = threeReplicas();
    AtomicLong clock = new AtomicLong();
    for (long seed = 0; seed < 100; seed++) {
      ReplicaChooser c = chooser(seed, clock);
      int preferred = c.choose(r, 0, null);
      for (int failed = 1; failed <= 3; failed++) {
        Set<Integer> resentTo = new HashSet<>();
        for (int i = 0; i < 100; i++) {
          int to = c.choose(r, 0, failed);
          assertNotEquals("seed " + seed + ": resent to the replica that failed", failed, to);
          resentTo.add(to);
        }
        // Both others, not only the preferred one: resends reach a third replica.
        assertEquals("seed " + seed + " after " + failed, 2, resentTo.size());
      }
      // The next operation (no failure before it) goes to the preferred one again.
      assertEquals(preferred, c.choose(r, 0, null));
      // The failed node a suspect as well: the resend goes to the third one.
      c.suspect(preferred);
      int other = preferred == 1 ? 2 : 1;
      c.suspect(other);
      int third = 6 - preferred - other;
      assertEquals(third, c.choose(r, 0, preferred));
    }
  }

  @Test
  public void aPartitionWithOneReplicaLeftGetsTheResendThere() {
    AmuletOuterClass.PartitionMap m =
        AmuletOuterClass.PartitionMap.newBuilder()
            .setVersion(1)
            .addPartitions(
                AmuletOuterClass.Partition.newBuilder().setId(0).setStream(1).addReplicas(1).addReplicas(2))
            .addTokenRing(AmuletOuterClass.TokenRange.newBuilder().setFirstToken(0).setPartition(0))
            // Node 1 has no address.
            .addNodes(AmuletOuterClass.NodeAddress.newBuilder().setNode(2).setAddress("127.0.0.1:1"))
            .addNodes(AmuletOuterClass.NodeAddress.newBuilder().setNode(3).setAddress("127.0.0.1:2"))
            .build();
    Routing r = Routing.fromProto(m);
    ReplicaChooser c = chooser(0L, new AtomicLong());
    assertEquals(List.of(2), r.replicasWithAddress(0));
    assertEquals(2, c.choose(r, 0, 2));
    c.suspect(2);
    assertEquals(2, c.choose(r, 0, null));
    AmuletException e =
        org.junit.Assert.assertThrows(AmuletException.class, () -> c.choose(r, 1, null));
    assertEquals(AmuletException.Kind.PROTOCOL, e.kind());
  }

  // ---- through the client, against fake nodes ------------------------------

  /** What a fake node answers to Execute and ExecuteBatch. */
  enum Mode {
    OK,
    /** UNAVAILABLE: down or stopping. */
    UNAVAILABLE,
    /** No answer at all: the client's attempt timeout passes. */
    SILENT,
    /** UNAVAILABLE with amulet-error behind. */
    BEHIND
  }

  /** A fake node: the test's partition map, sessions, and commands as its mode says. */
  final class FakeNode extends FakeNodeServer {
    final int id;
    volatile Mode mode = Mode.OK;
    /** Commands received (each request of a batch counts). */
    final AtomicInteger commands = new AtomicInteger();
    /** Commands executed. */
    final AtomicInteger executed = new AtomicInteger();
    final AtomicInteger batchCalls = new AtomicInteger();

    FakeNode(int id) {
      this.id = id;
    }

    @Override
    AmuletOuterClass.PartitionMap partitionMap() {
      return ReplicaPreferenceTest.this.partitionMap();
    }

    /** Null when the node executed it; else the status it fails with (null too when silent). */
    private Status outcome() {
      commands.incrementAndGet();
      attempts.add(id);
      switch (mode) {
        case OK:
          executed.incrementAndGet();
          return null;
        case UNAVAILABLE:
        case BEHIND:
          return Status.UNAVAILABLE.withDescription(mode + " (test)");
        case SILENT:
          return null;
        default:
          throw new AssertionError(mode);
      }
    }

    private MapResponse reply() {
      return MapResponse.newBuilder()
          .setValue(AmuletOuterClass.OptionalValue.getDefaultInstance())
          .build();
    }

    @Override
    public void execute(MapRequest request, StreamObserver<MapResponse> out) {
      Mode m = mode;
      Status failure = outcome();
      if (m == Mode.SILENT) {
        return;
      }
      if (failure != null) {
        Metadata trailers = new Metadata();
        if (m == Mode.BEHIND) {
          trailers.put(AmuletClient.AMULET_ERROR, "behind");
        }
        out.onError(failure.asRuntimeException(trailers));
        return;
      }
      out.onNext(reply());
      out.onCompleted();
    }

    @Override
    public void executeBatch(
        AmuletOuterClass.MapRequestBatch batch,
        StreamObserver<AmuletOuterClass.MapResponseBatch> out) {
      batchCalls.incrementAndGet();
      Mode m = mode;
      AmuletOuterClass.MapResponseBatch.Builder reply = AmuletOuterClass.MapResponseBatch.newBuilder();
      for (int i = 0; i < batch.getRequestsCount(); i++) {
        Status failure = outcome();
        if (failure == null) {
          reply.addOutcomes(AmuletOuterClass.MapOutcome.newBuilder().setResponse(reply()));
        } else {
          reply.addOutcomes(
              AmuletOuterClass.MapOutcome.newBuilder()
                  .setFailure(
                      AmuletOuterClass.Failure.newBuilder()
                          .setCode(failure.getCode().value())
                          .setMessage(failure.getDescription())
                          .setError(m == Mode.BEHIND ? "behind" : "")));
        }
      }
      if (m == Mode.SILENT) {
        return;
      }
      out.onNext(reply.build());
      out.onCompleted();
    }
  }

  private final List<FakeNode> nodes = new ArrayList<>();
  /** The node of every command received, in order. */
  private final List<Integer> attempts = new java.util.concurrent.CopyOnWriteArrayList<>();
  private final List<AmuletClient> clients = new ArrayList<>();

  private AmuletOuterClass.PartitionMap partitionMap() {
    String[] addresses = new String[3];
    for (int i = 0; i < 3; i++) {
      assertEquals(i + 1, nodes.get(i).id);
      addresses[i] = nodes.get(i).address;
    }
    return threeReplicaMap(addresses);
  }

  private AmuletClient startCluster(ClientConfig config) throws IOException {
    for (int id = 1; id <= 3; id++) {
      FakeNode n = new FakeNode(id);
      n.start();
      nodes.add(n);
    }
    return connect(config);
  }

  private AmuletClient connect(ClientConfig config) {
    AmuletClient c = AmuletClient.connect(List.of(nodes.get(0).address), config);
    clients.add(c);
    return c;
  }

  @After
  public void stop() throws InterruptedException {
    for (AmuletClient c : clients) {
      c.close();
    }
    for (FakeNode n : nodes) {
      n.server.shutdownNow();
      n.server.awaitTermination(5, TimeUnit.SECONDS);
    }
  }

  private static byte[] b(String s) {
    return s.getBytes(StandardCharsets.UTF_8);
  }

  /** Commands each node received (index: node id). */
  private int[] received() {
    int[] out = new int[4];
    for (FakeNode n : nodes) {
      out[n.id] = n.commands.get();
    }
    return out;
  }

  private int[] since(int[] before) {
    int[] now = received();
    for (int i = 0; i < now.length; i++) {
      now[i] -= before[i];
    }
    return now;
  }

  private static ClientConfig config() {
    return ClientConfig.defaults()
        .withPlaintext()
        .withAttemptTimeout(ATTEMPT)
        .withOperationTimeout(Duration.ofSeconds(10));
  }

  /** The node a client prefers for partition 0 when every replica is fine. */
  private static int preferredOf(AmuletClient client, List<Integer> among) {
    Long seed = client.replicas().seed();
    assertNotNull(seed);
    return Routing.preferred(among, seed);
  }

  @Test
  public void aClientSendsEveryCommandOfAPartitionToItsReplica() throws Exception {
    AmuletClient client = startCluster(config());
    int preferred = preferredOf(client, List.of(1, 2, 3));
    ByteMap m = client.byteMap("m");
    for (int i = 0; i < 30; i++) {
      m.put(b("k" + i), b("v"));
    }
    int[] got = received();
    assertEquals(java.util.Arrays.toString(got), 30, got[preferred]);
    // Other clients, other seeds: over 30 of them, every node is someone's.
    TreeMap<Integer, Integer> byNode = new TreeMap<>();
    for (int i = 0; i < 30; i++) {
      AmuletClient other = connect(config());
      int before = received()[preferredOf(other, List.of(1, 2, 3))];
      other.byteMap("m").put(b("x"), b("y"));
      assertEquals(before + 1, received()[preferredOf(other, List.of(1, 2, 3))]);
      byNode.merge(preferredOf(other, List.of(1, 2, 3)), 1, Integer::sum);
      other.close();
    }
    assertEquals(byNode.toString(), Set.of(1, 2, 3), byNode.keySet());
  }

  @Test
  public void concurrentOperationsAllGoToTheReplica() throws Exception {
    AmuletClient client = startCluster(config());
    int preferred = preferredOf(client, List.of(1, 2, 3));
    ByteMap m = client.byteMap("m");
    List<Thread> threads = new ArrayList<>();
    for (int t = 0; t < 8; t++) {
      int thread = t;
      threads.add(
          new Thread(
              () -> {
                for (int i = 0; i < 50; i++) {
                  m.put(b(thread + "-" + i), b("v"));
                }
              }));
    }
    threads.forEach(Thread::start);
    for (Thread t : threads) {
      t.join();
    }
    FakeNode p = nodes.get(preferred - 1);
    assertEquals(400, p.executed.get());
    assertEquals(java.util.Arrays.toString(received()), 400, received()[preferred]);
    // Through its batcher (ExecuteBatch), not one Execute call each.
    assertTrue("batches: " + p.batchCalls.get(), p.batchCalls.get() >= 1 && p.batchCalls.get() <= 400);
  }

  /** A failed preferred node: the resend elsewhere, then its next-highest, then back. */
  private void failOverAndBack(Mode failure) throws Exception {
    AmuletClient client = startCluster(config());
    int preferred = preferredOf(client, List.of(1, 2, 3));
    List<Integer> rest = new ArrayList<>(List.of(1, 2, 3));
    rest.remove(Integer.valueOf(preferred));
    int next = preferredOf(client, rest);
    ByteMap m = client.byteMap("m");
    m.put(b("warm"), b("up"));
    FakeNode p = nodes.get(preferred - 1);
    p.mode = failure;
    int[] before = received();
    m.put(b("a"), b("1"));
    int[] got = since(before);
    assertEquals(java.util.Arrays.toString(got), 1, got[preferred]);
    assertEquals("one resend, elsewhere: " + java.util.Arrays.toString(got), 1, got[rest.get(0)] + got[rest.get(1)]);
    assertTrue(client.replicas().suspected(preferred));
    // While it is a suspect, operations go to this client's next-highest replica.
    before = received();
    for (int i = 0; i < 10; i++) {
      m.put(b("b" + i), b("2"));
    }
    got = since(before);
    assertEquals(java.util.Arrays.toString(got), 0, got[preferred]);
    assertEquals(java.util.Arrays.toString(got), 10, got[next]);
    // Healthy again and two attempt timeouts later: back to it.
    p.mode = Mode.OK;
    Thread.sleep(2 * ATTEMPT.toMillis() + 100);
    assertFalse(client.replicas().suspected(preferred));
    before = received();
    for (int i = 0; i < 10; i++) {
      m.put(b("c" + i), b("3"));
    }
    got = since(before);
    assertEquals(java.util.Arrays.toString(got), 10, got[preferred]);
  }

  @Test
  public void anUnavailableReplicaIsLeftOutForAWhile() throws Exception {
    failOverAndBack(Mode.UNAVAILABLE);
  }

  @Test
  public void aSilentReplicaIsLeftOutForAWhile() throws Exception {
    failOverAndBack(Mode.SILENT);
  }

  @Test
  public void aReplicaBehindIsLeftOutForAWhile() throws Exception {
    failOverAndBack(Mode.BEHIND);
  }

  @Test
  public void resendsGoElsewhereThanTheReplicaThatJustFailed() throws Exception {
    // Unbatched, so that each attempt is one Execute call.
    AmuletClient client =
        startCluster(
            config().withBatchesInFlight(0).withOperationTimeout(Duration.ofMillis(1_500)));
    int preferred = preferredOf(client, List.of(1, 2, 3));
    for (FakeNode n : nodes) {
      n.mode = Mode.UNAVAILABLE;
    }
    AmuletException e =
        org.junit.Assert.assertThrows(
            AmuletException.class, () -> client.byteMap("m").put(b("z"), b("z")));
    assertEquals(AmuletException.Kind.OUTCOME_UNKNOWN, e.kind());
    List<Integer> order = new ArrayList<>(attempts);
    assertTrue("attempts " + order, order.size() >= 4);
    assertEquals("the first attempt to the preferred replica: " + order, preferred, (int) order.get(0));
    for (int i = 1; i < order.size(); i++) {
      assertNotEquals("a resend to the replica that just failed: " + order, order.get(i - 1), order.get(i));
    }
    // Every node suspected: the next operation still has candidates.
    for (FakeNode n : nodes) {
      n.mode = Mode.OK;
    }
    client.byteMap("m").put(b("ok"), b("ok"));
  }

  @Test
  public void withoutTheOptionEveryAttemptGoesToARandomReplica() throws Exception {
    AmuletClient client = startCluster(config().withOneReplicaPerPartition(false));
    assertNull(client.replicas().seed());
    ByteMap m = client.byteMap("m");
    for (int i = 0; i < 90; i++) {
      m.put(b("k" + i), b("v"));
    }
    int[] got = received();
    for (int node = 1; node <= 3; node++) {
      assertTrue(java.util.Arrays.toString(got), got[node] >= 10);
    }
  }
}
