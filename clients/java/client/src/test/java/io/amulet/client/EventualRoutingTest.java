package io.amulet.client;

import static org.junit.Assert.assertArrayEquals;
import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertNull;
import static org.junit.Assert.assertThrows;
import static org.junit.Assert.assertTrue;

import amulet.v1.AmuletOuterClass;
import amulet.v1.AmuletOuterClass.EventualDeleteRequest;
import amulet.v1.AmuletOuterClass.EventualGetRequest;
import amulet.v1.AmuletOuterClass.EventualPutRequest;
import amulet.v1.AmuletOuterClass.MapRequest;
import amulet.v1.AmuletOuterClass.MapResponse;
import com.google.protobuf.ByteString;
import io.grpc.Metadata;
import io.grpc.Status;
import io.grpc.stub.StreamObserver;
import java.io.IOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.After;
import org.junit.Before;
import org.junit.Test;

/**
 * The eventual map's requests and fail-over against fake nodes (gRPC
 * servers on 127.0.0.1 in this JVM, no cluster): arguments sent as given,
 * replies as the node gave them, errors and their kinds, reads failing over
 * from a dead or stopping node, writes only from a refused connection, and
 * {@code quorum-not-reached} never resent.
 */
public class EventualRoutingTest {
  private static final Metadata.Key<String> REASON =
      Metadata.Key.of("amulet-reason", Metadata.ASCII_STRING_MARSHALLER);

  /** What a fake node answers to eventual requests. */
  enum Mode {
    OK,
    QUORUM_NOT_REACHED,
    /** UNAVAILABLE without a reason: stopping or not ready. */
    STOPPING,
    BAD_CONTEXT,
    NOT_EVENTUAL,
    NOT_FOUND
  }

  /** A fake node: the partition map of the test, sessions, and eventual requests as its mode says. */
  final class FakeNode extends FakeNodeServer {
    final String name;
    volatile Mode mode = Mode.OK;
    final AtomicInteger eventualCalls = new AtomicInteger();
    final List<Object> requests = new CopyOnWriteArrayList<>();

    FakeNode(String name) {
      this.name = name;
    }

    @Override
    AmuletOuterClass.PartitionMap partitionMap() {
      return EventualRoutingTest.this.partitionMap();
    }

    @Override
    public void execute(MapRequest request, StreamObserver<MapResponse> out) {
      requests.add(request);
      out.onNext(MapResponse.newBuilder().setDone(AmuletOuterClass.Done.getDefaultInstance()).build());
      out.onCompleted();
    }

    private void answer(Object request, StreamObserver<AmuletOuterClass.Versioned> out) {
      eventualCalls.incrementAndGet();
      requests.add(request);
      Metadata trailers = new Metadata();
      switch (mode) {
        case OK:
          out.onNext(
              AmuletOuterClass.Versioned.newBuilder()
                  .addValues(ByteString.copyFromUtf8(name))
                  .addValues(ByteString.copyFromUtf8("b"))
                  .setContext(ByteString.copyFromUtf8("ctx-" + name))
                  .build());
          out.onCompleted();
          return;
        case QUORUM_NOT_REACHED:
          trailers.put(REASON, "quorum-not-reached");
          out.onError(Status.UNAVAILABLE.withDescription("1 of 3 answered").asRuntimeException(trailers));
          return;
        case STOPPING:
          out.onError(Status.UNAVAILABLE.withDescription("stopping").asRuntimeException());
          return;
        case BAD_CONTEXT:
          trailers.put(REASON, "bad-context");
          out.onError(Status.INVALID_ARGUMENT.withDescription("bad context").asRuntimeException(trailers));
          return;
        case NOT_EVENTUAL:
          trailers.put(REASON, "not-eventual");
          out.onError(
              Status.FAILED_PRECONDITION.withDescription("ordered map").asRuntimeException(trailers));
          return;
        case NOT_FOUND:
          out.onError(Status.NOT_FOUND.withDescription("no such map").asRuntimeException());
          return;
        default:
          throw new AssertionError(mode);
      }
    }

    @Override
    public void eventualGet(EventualGetRequest request, StreamObserver<AmuletOuterClass.Versioned> out) {
      answer(request, out);
    }

    @Override
    public void eventualPut(EventualPutRequest request, StreamObserver<AmuletOuterClass.Versioned> out) {
      answer(request, out);
    }

    @Override
    public void eventualDelete(
        EventualDeleteRequest request, StreamObserver<AmuletOuterClass.Versioned> out) {
      answer(request, out);
    }
  }

  private final List<FakeNode> nodes = new ArrayList<>();
  private FakeNode a;
  private FakeNode b;
  /** A port nothing listens on: connections to it are refused. */
  private String dead;
  private AmuletClient client;
  /** Maps the fake partition map lists (eventual). */
  private final List<String> maps = new CopyOnWriteArrayList<>();

  private AmuletOuterClass.PartitionMap partitionMap() {
    AmuletOuterClass.PartitionMap.Builder m =
        AmuletOuterClass.PartitionMap.newBuilder()
            .setVersion(1)
            .addPartitions(
                AmuletOuterClass.Partition.newBuilder().setId(0).setStream(1).addReplicas(1).addReplicas(2))
            .addTokenRing(AmuletOuterClass.TokenRange.newBuilder().setFirstToken(0).setPartition(0));
    m.addNodes(AmuletOuterClass.NodeAddress.newBuilder().setNode(1).setAddress(a.address));
    m.addNodes(AmuletOuterClass.NodeAddress.newBuilder().setNode(2).setAddress(b.address));
    m.addNodes(AmuletOuterClass.NodeAddress.newBuilder().setNode(3).setAddress(dead));
    for (String map : maps) {
      m.addKeyspaces(
          AmuletOuterClass.Keyspace.newBuilder()
              .setName(map)
              .setLayout(
                  AmuletOuterClass.Layout.newBuilder()
                      .setEventual(AmuletOuterClass.EventualLayout.newBuilder().setReplicas(2))));
    }
    m.setVersion(1 + maps.size());
    return m.build();
  }

  @Before
  public void start() throws IOException {
    a = new FakeNode("a");
    b = new FakeNode("b");
    nodes.add(a);
    nodes.add(b);
    a.start();
    b.start();
    try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
      dead = "127.0.0.1:" + s.getLocalPort();
    }
    client =
        AmuletClient.connect(
            List.of(a.address),
            ClientConfig.defaults()
                .withPlaintext()
                .withAttemptTimeout(Duration.ofSeconds(2))
                .withOperationTimeout(Duration.ofSeconds(10))
                .withBatchesInFlight(0));
  }

  @After
  public void stop() throws InterruptedException {
    if (client != null) {
      client.close();
    }
    for (FakeNode n : nodes) {
      n.stop();
    }
  }

  private static byte[] utf8(String s) {
    return s.getBytes(StandardCharsets.UTF_8);
  }

  private static String str(byte[] b) {
    return new String(b, StandardCharsets.UTF_8);
  }

  @Test
  public void requestsCarryTheirArgumentsAndRepliesTheirValues() {
    client.eventualRequests().useNode(a.address);
    EventualMap m = client.eventualMap("carts");
    Versioned got = m.get(utf8("k"), 3);
    assertEquals(List.of("a", "b"), got.values().stream().map(EventualRoutingTest::str).toList());
    assertEquals(Context.fromBytes(utf8("ctx-a")), got.context());
    assertEquals(
        EventualGetRequest.newBuilder().setMap("carts").setKey(ByteString.copyFromUtf8("k")).setR(3).build(),
        a.requests.get(0));

    Context raw = Context.fromBytes(new byte[] {(byte) 0xff, 0, 1});
    m.put(utf8("k"), utf8("v"), raw, 2);
    assertEquals(
        EventualPutRequest.newBuilder()
            .setMap("carts")
            .setKey(ByteString.copyFromUtf8("k"))
            .setValue(ByteString.copyFromUtf8("v"))
            .setContext(ByteString.copyFrom(raw.toBytes()))
            .setW(2)
            .build(),
        a.requests.get(1));

    m.delete(utf8("k"), got.context());
    assertEquals(
        EventualDeleteRequest.newBuilder()
            .setMap("carts")
            .setKey(ByteString.copyFromUtf8("k"))
            .setContext(ByteString.copyFromUtf8("ctx-a"))
            .build(),
        a.requests.get(2));

    m.put(utf8(""), new byte[0], Context.EMPTY);
    assertEquals(
        EventualPutRequest.newBuilder().setMap("carts").build(), a.requests.get(3));
    assertEquals(0, b.eventualCalls.get());
  }

  @Test
  public void updateWritesWithTheReadsContext() {
    client.eventualRequests().useNode(a.address);
    EventualMap m = client.eventualMap("carts");
    List<String> seen = new ArrayList<>();
    m.update(
        utf8("k"),
        values -> {
          values.forEach(v -> seen.add(str(v)));
          return utf8("a+b");
        });
    assertEquals(List.of("a", "b"), seen);
    EventualPutRequest put = (EventualPutRequest) a.requests.get(1);
    assertEquals("a+b", put.getValue().toStringUtf8());
    assertEquals("ctx-a", put.getContext().toStringUtf8());

    m.update(utf8("k"), values -> null, 1, 3);
    assertEquals(1, ((EventualGetRequest) a.requests.get(2)).getR());
    EventualDeleteRequest delete = (EventualDeleteRequest) a.requests.get(3);
    assertEquals("ctx-a", delete.getContext().toStringUtf8());
    assertEquals(3, delete.getW());
  }

  @Test
  public void badArgumentsAreRefusedBeforeSending() {
    EventualMap m = client.eventualMap("carts");
    assertThrows(IllegalArgumentException.class, () -> m.get(utf8("k"), -1));
    assertThrows(IllegalArgumentException.class, () -> m.put(utf8("k"), utf8("v"), Context.EMPTY, -1));
    assertThrows(IllegalArgumentException.class, () -> m.delete(utf8("k"), Context.EMPTY, -2));
    assertThrows(NullPointerException.class, () -> m.get(null));
    assertThrows(NullPointerException.class, () -> m.put(utf8("k"), null, Context.EMPTY));
    assertThrows(NullPointerException.class, () -> m.put(utf8("k"), utf8("v"), null));
    assertThrows(NullPointerException.class, () -> m.delete(utf8("k"), null));
    assertThrows(IllegalArgumentException.class, () -> client.eventualMap("a b"));
    assertThrows(IllegalArgumentException.class, () -> client.createEventualMap("x", -1));
    assertEquals(0, a.eventualCalls.get() + b.eventualCalls.get());
  }

  @Test
  public void createEventualMapSendsTheLayout() {
    EventualMap m = client.createEventualMap("carts", 3, 8);
    assertEquals("carts", m.name());
    client.createEventualMap("more", 2);
    // Each went to a replica of the partition (a or b).
    List<MapRequest> creates = new ArrayList<>();
    for (FakeNode n : nodes) {
      for (Object r : n.requests) {
        creates.add((MapRequest) r);
      }
    }
    creates.sort((x, y) -> x.getCreateMap().getMap().compareTo(y.getCreateMap().getMap()));
    assertEquals(2, creates.size());
    assertEquals("carts", creates.get(0).getCreateMap().getMap());
    assertEquals(
        AmuletOuterClass.EventualLayout.newBuilder().setReplicas(3).setVnodes(8).build(),
        creates.get(0).getCreateMap().getLayout().getEventual());
    assertEquals("more", creates.get(1).getCreateMap().getMap());
    assertEquals(
        AmuletOuterClass.EventualLayout.newBuilder().setReplicas(2).build(),
        creates.get(1).getCreateMap().getLayout().getEventual());
  }

  @Test
  public void refusalsKeepTheirKindAndReason() {
    client.eventualRequests().useNode(a.address);
    EventualMap m = client.eventualMap("carts");
    a.mode = Mode.BAD_CONTEXT;
    IllegalArgumentException bad =
        assertThrows(IllegalArgumentException.class, () -> m.put(utf8("k"), utf8("v"), Context.EMPTY));
    assertTrue(bad.getMessage(), bad.getMessage().contains("bad-context"));
    a.mode = Mode.NOT_EVENTUAL;
    AmuletException ordered = assertThrows(AmuletException.class, () -> m.get(utf8("k")));
    assertEquals(AmuletException.Kind.FAILED_PRECONDITION, ordered.kind());
    assertEquals("not-eventual", ordered.reason());
    a.mode = Mode.NOT_FOUND;
    AmuletException missing = assertThrows(AmuletException.class, () -> m.delete(utf8("k"), Context.EMPTY));
    assertEquals(AmuletException.Kind.NOT_FOUND, missing.kind());
    assertNull(missing.reason());
    // None of them is a node failure: nothing went elsewhere.
    assertEquals(3, a.eventualCalls.get());
    assertEquals(0, b.eventualCalls.get());
    assertEquals(a.address, client.eventualRequests().currentNode());
  }

  @Test
  public void quorumNotReachedIsNeverResent() {
    client.eventualRequests().useNode(a.address);
    EventualMap m = client.eventualMap("carts");
    a.mode = Mode.QUORUM_NOT_REACHED;
    AmuletException read = assertThrows(AmuletException.class, () -> m.get(utf8("k"), 3));
    assertEquals(AmuletException.Kind.UNAVAILABLE, read.kind());
    assertEquals("quorum-not-reached", read.reason());
    AmuletException write =
        assertThrows(AmuletException.class, () -> m.put(utf8("k"), utf8("v"), Context.EMPTY, 3));
    assertEquals(AmuletException.Kind.UNAVAILABLE, write.kind());
    assertEquals("quorum-not-reached", write.reason());
    assertTrue(write.getMessage(), write.getMessage().contains("may have taken effect"));
    assertEquals(2, a.eventualCalls.get());
    assertEquals(0, b.eventualCalls.get());
    // The node answered: it stays current.
    assertEquals(a.address, client.eventualRequests().currentNode());
  }

  @Test
  public void readsFailOverFromADeadNode() {
    client.eventualRequests().useNode(dead);
    Versioned got = client.eventualMap("carts").get(utf8("k"));
    String took = str(got.values().get(0));
    assertTrue(took, took.equals("a") || took.equals("b"));
    assertEquals(1, a.eventualCalls.get() + b.eventualCalls.get());
    // The node that answered is current now.
    assertEquals(took.equals("a") ? a.address : b.address, client.eventualRequests().currentNode());
  }

  @Test
  public void writesFailOverFromARefusedConnection() {
    client.eventualRequests().useNode(dead);
    client.eventualMap("carts").put(utf8("k"), utf8("v"), Context.EMPTY);
    assertEquals(1, a.eventualCalls.get() + b.eventualCalls.get());
    client.eventualRequests().useNode(dead);
    client.eventualMap("carts").delete(utf8("k"), Context.EMPTY);
    assertEquals(2, a.eventualCalls.get() + b.eventualCalls.get());
  }

  @Test
  public void readsFailOverFromAStoppingNode() {
    client.eventualRequests().useNode(a.address);
    a.mode = Mode.STOPPING;
    Versioned got = client.eventualMap("carts").get(utf8("k"));
    assertEquals("b", str(got.values().get(0)));
    assertEquals(1, a.eventualCalls.get());
    assertEquals(1, b.eventualCalls.get());
    assertEquals(b.address, client.eventualRequests().currentNode());
  }

  @Test
  public void writesToAStoppingNodeAreNotResent() {
    client.eventualRequests().useNode(a.address);
    a.mode = Mode.STOPPING;
    EventualMap m = client.eventualMap("carts");
    AmuletException e =
        assertThrows(AmuletException.class, () -> m.put(utf8("k"), utf8("v"), Context.EMPTY));
    assertEquals(AmuletException.Kind.OUTCOME_UNKNOWN, e.kind());
    assertEquals(1, a.eventualCalls.get());
    assertEquals(0, b.eventualCalls.get());
    // The next request goes to another node (b, or the dead one, which
    // refuses: then one of the others).
    assertTrue(!client.eventualRequests().currentNode().equals(a.address));
    a.mode = Mode.OK;
    m.put(utf8("k"), utf8("v"), Context.EMPTY);
    assertEquals(2, a.eventualCalls.get() + b.eventualCalls.get());
  }

  @Test
  public void aReadWithEveryNodeDownGivesUpAtTheOperationTimeout() throws InterruptedException {
    a.mode = Mode.STOPPING;
    b.mode = Mode.STOPPING;
    client.eventualRequests().useNode(a.address);
    long start = System.nanoTime();
    AmuletException e =
        assertThrows(AmuletException.class, () -> client.eventualMap("carts").get(utf8("k")));
    long took = System.nanoTime() - start;
    assertEquals(AmuletException.Kind.UNAVAILABLE, e.kind());
    assertNull(e.reason());
    assertTrue("gave up after " + took + " ns", took >= TimeUnit.SECONDS.toNanos(9));
    assertTrue("gave up after " + took + " ns", took < TimeUnit.SECONDS.toNanos(20));
    assertTrue(a.eventualCalls.get() > 1);
    assertTrue(b.eventualCalls.get() > 1);
    // Usable again once a node answers.
    b.mode = Mode.OK;
    a.mode = Mode.OK;
    assertEquals(2, client.eventualMap("carts").get(utf8("k")).size());
  }

  @Test
  public void notFoundFromANodeBehindTheCreationGoesElsewhere() {
    maps.add("carts");
    client.eventualRequests().useNode(a.address);
    a.mode = Mode.NOT_FOUND;
    // A write too: NOT_FOUND is a verdict, the node took nothing.
    Versioned put = client.eventualMap("carts").put(utf8("k"), utf8("v"), Context.EMPTY);
    assertEquals("b", str(put.values().get(0)));
    assertEquals(1, a.eventualCalls.get());
    assertEquals(1, b.eventualCalls.get());
    // A map the newest partition map does not have is not found at once.
    client.eventualRequests().useNode(a.address);
    AmuletException missing =
        assertThrows(AmuletException.class, () -> client.eventualMap("other").get(utf8("k")));
    assertEquals(AmuletException.Kind.NOT_FOUND, missing.kind());
    assertEquals(2, a.eventualCalls.get());
    assertEquals(1, b.eventualCalls.get());
  }

  @Test
  public void theNodeThatCreatedAMapTakesTheNextRequests() {
    client.eventualRequests().useNode(dead);
    client.createEventualMap("carts", 2);
    String current = client.eventualRequests().currentNode();
    assertTrue(current, current.equals(a.address) || current.equals(b.address));
  }

  @Test
  public void closedClientRefuses() {
    EventualMap m = client.eventualMap("carts");
    client.close();
    assertThrows(IllegalStateException.class, () -> m.get(utf8("k")));
    client = null;
  }

  @Test
  public void valuesComeBackAsGiven() {
    client.eventualRequests().useNode(b.address);
    Versioned v = client.eventualMap("carts").get(utf8("k"));
    assertArrayEquals(utf8("b"), v.values().get(0));
    assertArrayEquals(utf8("b"), v.values().get(1));
    assertEquals("ctx-b", str(v.context().toBytes()));
  }
}
