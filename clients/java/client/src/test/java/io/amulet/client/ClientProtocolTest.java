package io.amulet.client;

import static org.junit.Assert.assertArrayEquals;
import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertNull;
import static org.junit.Assert.assertThrows;
import static org.junit.Assert.assertTrue;

import amulet.v1.AmuletOuterClass.MapRequest;
import amulet.v1.AmuletOuterClass.RequestHeader;
import io.amulet.testing.DevCluster;
import io.grpc.CallOptions;
import io.grpc.Channel;
import io.grpc.ClientCall;
import io.grpc.ClientInterceptor;
import io.grpc.ForwardingClientCall;
import io.grpc.ForwardingClientCallListener;
import io.grpc.Metadata;
import io.grpc.MethodDescriptor;
import io.grpc.Status;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.Test;

/** Routing, retries, sessions and exactly-once resends, against a live cluster. */
public class ClientProtocolTest {
  /**
   * Lets the first {@code drops} Execute calls of an op reach the cluster
   * but hands the client UNAVAILABLE instead of the reply (a reply lost on
   * the way back); records every header sent.
   */
  static final class DropReplies implements ClientInterceptor {
    final MapRequest.OpCase op;
    final AtomicInteger drops;
    final List<RequestHeader> sent = Collections.synchronizedList(new ArrayList<>());
    /** Runs on the sending thread before a request whose reply is dropped goes out. */
    volatile Runnable beforeDrop = () -> {};
    /**
     * Drop only a reply that is a response (the request executed): any other
     * (such as {@code behind} from a replica not yet at the map version)
     * reaches the client, and the drop waits for the next send.
     */
    volatile boolean onlyResponses;
    /** Runs when a reply it drops has come back, before the client hears (a writer's turn). */
    volatile Runnable afterDrop = () -> {};

    DropReplies(MapRequest.OpCase op, int drops) {
      this.op = op;
      this.drops = new AtomicInteger(drops);
    }

    @Override
    public <Q, R> ClientCall<Q, R> interceptCall(
        MethodDescriptor<Q, R> method, CallOptions options, Channel next) {
      if (!method.getFullMethodName().endsWith("/Execute")
          && !method.getFullMethodName().endsWith("/ExecuteBatch")) {
        return next.newCall(method, options);
      }
      return new ForwardingClientCall.SimpleForwardingClientCall<Q, R>(next.newCall(method, options)) {
        private volatile boolean drop;
        private volatile R held;

        @Override
        public void start(Listener<R> listener, Metadata headers) {
          super.start(
              new ForwardingClientCallListener.SimpleForwardingClientCallListener<R>(listener) {
                @Override
                public void onMessage(R message) {
                  if (drop) {
                    held = message;
                  } else {
                    super.onMessage(message);
                  }
                }

                @Override
                public void onClose(Status status, Metadata trailers) {
                  if (drop && onlyResponses && !isResponse(status, held)) {
                    drop = false;
                    drops.incrementAndGet();
                    if (held != null) {
                      super.onMessage(held);
                    }
                  }
                  if (drop) {
                    afterDrop.run();
                  }
                  super.onClose(
                      drop ? Status.UNAVAILABLE.withDescription("reply dropped by the test") : status,
                      drop ? new Metadata() : trailers);
                }
              },
              headers);
        }

        @Override
        public void sendMessage(Q message) {
          List<MapRequest> requests =
              message instanceof MapRequest
                  ? List.of((MapRequest) message)
                  : ((amulet.v1.AmuletOuterClass.MapRequestBatch) message).getRequestsList();
          for (MapRequest r : requests) {
            if (r.getOpCase() == op) {
              sent.add(r.getHeader());
              if (drops.getAndDecrement() > 0) {
                drop = true;
                beforeDrop.run();
              }
            }
          }
          super.sendMessage(message);
        }
      };
    }

    /** Whether a reply is a response (in a batch: every outcome), not a status or failure. */
    private static boolean isResponse(Status status, Object reply) {
      if (!status.isOk()) {
        return false;
      }
      if (reply instanceof amulet.v1.AmuletOuterClass.MapResponseBatch) {
        for (amulet.v1.AmuletOuterClass.MapOutcome o :
            ((amulet.v1.AmuletOuterClass.MapResponseBatch) reply).getOutcomesList()) {
          if (o.getOutcomeCase() != amulet.v1.AmuletOuterClass.MapOutcome.OutcomeCase.RESPONSE) {
            return false;
          }
        }
        return true;
      }
      return reply != null;
    }
  }

  /**
   * Breaks the first {@code breaks} ReadSnapshot streams after their first
   * page: the client sees UNAVAILABLE, as when a replica goes away.
   */
  static final class BreakStreams implements ClientInterceptor {
    final AtomicInteger breaks;
    final AtomicInteger opened = new AtomicInteger();

    BreakStreams(int breaks) {
      this.breaks = new AtomicInteger(breaks);
    }

    @Override
    public <Q, R> ClientCall<Q, R> interceptCall(
        MethodDescriptor<Q, R> method, CallOptions options, Channel next) {
      if (!method.getFullMethodName().endsWith("/ReadSnapshot")) {
        return next.newCall(method, options);
      }
      opened.incrementAndGet();
      boolean breakIt = breaks.getAndDecrement() > 0;
      ClientCall<Q, R> call = next.newCall(method, options);
      return new ForwardingClientCall.SimpleForwardingClientCall<Q, R>(call) {
        private volatile boolean broken;

        @Override
        public void start(Listener<R> listener, Metadata headers) {
          super.start(
              new ForwardingClientCallListener.SimpleForwardingClientCallListener<R>(listener) {
                @Override
                public void onMessage(R message) {
                  if (broken) {
                    return;
                  }
                  super.onMessage(message);
                  if (breakIt) {
                    broken = true;
                    call.cancel("broken by the test", null);
                  }
                }

                @Override
                public void onClose(Status status, Metadata trailers) {
                  super.onClose(
                      broken ? Status.UNAVAILABLE.withDescription("stream broken by the test") : status,
                      broken ? new Metadata() : trailers);
                }
              },
              headers);
        }
      };
    }
  }

  /**
   * Answers the first {@code refusals} Execute calls of an op with {@code
   * status} and the {@code amulet-error} kind {@code kind} without sending
   * them (a refusal that changed nothing); records every header sent.
   */
  static final class Refuse implements ClientInterceptor {
    static final Metadata.Key<String> AMULET_ERROR =
        Metadata.Key.of("amulet-error", Metadata.ASCII_STRING_MARSHALLER);
    final MapRequest.OpCase op;
    final AtomicInteger refusals;
    final Status status;
    final String kind;
    final List<RequestHeader> sent = Collections.synchronizedList(new ArrayList<>());

    Refuse(MapRequest.OpCase op, int refusals, Status status, String kind) {
      this.op = op;
      this.refusals = new AtomicInteger(refusals);
      this.status = status;
      this.kind = kind;
    }

    @Override
    public <Q, R> ClientCall<Q, R> interceptCall(
        MethodDescriptor<Q, R> method, CallOptions options, Channel next) {
      if (!method.getFullMethodName().endsWith("/Execute")) {
        return next.newCall(method, options);
      }
      // The real call starts only once the request is seen and not refused.
      return new ClientCall<Q, R>() {
        private Listener<R> listener;
        private Metadata headers;
        private ClientCall<Q, R> real;
        private int requested;
        private boolean refused;

        @Override
        public void start(Listener<R> listener, Metadata headers) {
          this.listener = listener;
          this.headers = headers;
        }

        @Override
        public void request(int count) {
          if (real != null) {
            real.request(count);
          } else {
            requested += count;
          }
        }

        @Override
        public void sendMessage(Q message) {
          MapRequest r = (MapRequest) message;
          if (r.getOpCase() == op) {
            sent.add(r.getHeader());
            refused = refusals.getAndDecrement() > 0;
          }
          if (refused) {
            return;
          }
          real = next.newCall(method, options);
          real.start(listener, headers);
          if (requested > 0) {
            real.request(requested);
          }
          real.sendMessage(message);
        }

        @Override
        public void halfClose() {
          if (refused) {
            Metadata trailers = new Metadata();
            if (kind != null) {
              trailers.put(AMULET_ERROR, kind);
            }
            listener.onClose(status, trailers);
          } else if (real != null) {
            real.halfClose();
          }
        }

        @Override
        public void cancel(String message, Throwable cause) {
          if (real != null) {
            real.cancel(message, cause);
          }
        }
      };
    }
  }

  /**
   * A refusal for a passing state of the cluster (ABORTED, {@code
   * amulet-error: retryable}, such as another reconfiguration taking
   * effect) changed nothing: the client resends the same session and
   * sequence, and the operation succeeds.
   */
  @Test
  public void aRetryableRefusalIsResentWithTheSameSequence() {
    String name = ByteMapTest.fresh();
    Refuse refuse =
        new Refuse(
            MapRequest.OpCase.PUT,
            2,
            Status.ABORTED.withDescription("another reconfiguration is taking effect; retry"),
            "retryable");
    try (AmuletClient c =
        AmuletClient.connect(
            DevCluster.get().addresses(), DevCluster.get().config().withBatchesInFlight(0), refuse)) {
      ByteMap m = c.createMap(name);
      assertNull(m.put(b("k"), b("v")));
      assertEquals(3, refuse.sent.size());
      for (RequestHeader h : refuse.sent) {
        assertEquals(refuse.sent.get(0).getSession(), h.getSession());
        assertEquals(refuse.sent.get(0).getSequence(), h.getSequence());
      }
      assertArrayEquals(b("v"), m.get(b("k")));
    }
  }

  /** Only the kind makes ABORTED retryable: without it the status is final. */
  @Test
  public void anAbortedStatusWithoutTheRetryableKindIsFinal() {
    String name = ByteMapTest.fresh();
    Refuse refuse = new Refuse(MapRequest.OpCase.PUT, 1, Status.ABORTED, null);
    try (AmuletClient c =
        AmuletClient.connect(
            DevCluster.get().addresses(), DevCluster.get().config().withBatchesInFlight(0), refuse)) {
      ByteMap m = c.createMap(name);
      AmuletException e = assertThrows(AmuletException.class, () -> m.put(b("k"), b("v")));
      assertEquals(AmuletException.Kind.PROTOCOL, e.kind());
      assertEquals(1, refuse.sent.size());
    }
  }

  @Test
  public void aBrokenSnapshotStreamResumesAfterTheLastKeyTaken() {
    String name = ByteMapTest.fresh();
    BreakStreams breaker = new BreakStreams(4);
    try (AmuletClient c =
        AmuletClient.connect(
            DevCluster.get().addresses(), DevCluster.get().config().withPageEntries(10), breaker)) {
      ByteMap m = c.createMap(name);
      List<java.util.Map.Entry<byte[], byte[]>> entries = new ArrayList<>();
      java.util.TreeSet<String> expected = new java.util.TreeSet<>();
      for (int i = 0; i < 200; i++) {
        String k = String.format("k%04d", i);
        expected.add(k);
        entries.add(new java.util.AbstractMap.SimpleImmutableEntry<>(b(k), b("v" + i)));
      }
      m.putAll(entries);
      List<String> got = new ArrayList<>();
      try (Snapshot snap = m.snapshot()) {
        snap.forEachRemaining(e -> got.add(new String(e.getKey(), java.nio.charset.StandardCharsets.UTF_8)));
      }
      assertEquals(new ArrayList<>(expected), got);
      assertTrue("streams opened " + breaker.opened.get(), breaker.opened.get() >= 3 + 4);
    }
  }

  static byte[] b(String s) {
    return ByteMapTest.b(s);
  }

  @Test
  public void aResendAfterALostReplyAppliesOnceAndGetsTheFirstReply() {
    lostReplies(DevCluster.get().config().withBatchesInFlight(0));
  }

  @Test
  public void aResendAfterALostBatchReplyAppliesOnceAndGetsTheFirstReply() {
    lostReplies(DevCluster.get().config());
  }

  private void lostReplies(ClientConfig config) {
    String name = ByteMapTest.fresh();
    DropReplies dropper = new DropReplies(MapRequest.OpCase.PUT_IF_ABSENT, 2);
    try (AmuletClient c = AmuletClient.connect(DevCluster.get().addresses(), config, dropper)) {
      ByteMap m = c.createMap(name);
      // Applied by the first send; the two resends (same session and
      // sequence) get the stored reply "it was set", not "it exists".
      assertNull(m.putIfAbsent(b("k"), b("first")));
      // Two dropped replies, then the answer (a replica not yet at the new
      // map version may add a "behind" and another resend).
      int sends = dropper.sent.size();
      assertTrue("sends " + sends, sends >= 3);
      RequestHeader first = dropper.sent.get(0);
      for (RequestHeader h : dropper.sent) {
        assertEquals(first.getSession(), h.getSession());
        assertEquals(first.getSequence(), h.getSequence());
      }
      assertArrayEquals(b("first"), m.get(b("k")));
      // Later operations of the session take later sequences (the get took one).
      assertArrayEquals(b("first"), m.putIfAbsent(b("k"), b("second")));
      assertEquals(first.getSequence() + 2, dropper.sent.get(sends).getSequence());
    }
  }

  @Test
  public void aResentMergeFieldsAppliesOnce() {
    resentMergeFields(DevCluster.get().config().withBatchesInFlight(0));
  }

  @Test
  public void aResentBatchedMergeFieldsAppliesOnce() {
    resentMergeFields(DevCluster.get().config());
  }

  /**
   * mergeFields goes the way of every write: its resend after a lost reply
   * keeps the session and sequence and gets the stored reply. Another
   * writer replaces the record between the first send's execution and the
   * resend, so a merge executed twice would show (field a back at 2).
   */
  private void resentMergeFields(ClientConfig config) {
    String name = ByteMapTest.fresh();
    DropReplies dropper = new DropReplies(MapRequest.OpCase.MERGE_FIELDS, 1);
    dropper.onlyResponses = true;
    try (AmuletClient c = AmuletClient.connect(DevCluster.get().addresses(), config, dropper)) {
      ByteMap m = c.createMap(name);
      m.put(b("k"), FieldRecord.encode(Map.of(b("a"), b("1"))));
      byte[] between = FieldRecord.encode(Map.of(b("a"), b("other"), b("z"), b("9")));
      try (AmuletClient other = DevCluster.get().client()) {
        dropper.afterDrop = () -> other.byteMap(name).put(b("k"), between);
        assertTrue(m.mergeFields(b("k"), Map.of(b("a"), b("2"))));
      }
      assertTrue("sends " + dropper.sent.size(), dropper.sent.size() >= 2);
      for (RequestHeader h : dropper.sent) {
        assertEquals(dropper.sent.get(0).getSession(), h.getSession());
        assertEquals(dropper.sent.get(0).getSequence(), h.getSequence());
      }
      assertArrayEquals(between, m.get(b("k")));
    }
  }

  @Test
  public void aResentAppendLandsOnce() {
    resentAppend(DevCluster.get().config().withBatchesInFlight(0));
  }

  @Test
  public void aResentBatchedAppendLandsOnce() {
    resentAppend(DevCluster.get().config());
  }

  /**
   * A log append goes the way of every write: its resend after a lost
   * reply keeps the session and sequence and gets the stored reply (the
   * position it got). Another writer appends between the first send's
   * execution and the resend, so an append executed twice would show (a
   * third entry, and the position 2).
   */
  private void resentAppend(ClientConfig config) {
    String name = ByteMapTest.fresh();
    DropReplies dropper = new DropReplies(MapRequest.OpCase.APPEND, 1);
    dropper.onlyResponses = true;
    try (AmuletClient c = AmuletClient.connect(DevCluster.get().addresses(), config, dropper)) {
      AmuletLog log = c.createLog(name);
      try (AmuletClient other = DevCluster.get().client()) {
        dropper.afterDrop = () -> other.log(name).append(b("other"));
        assertEquals(0, log.append(b("mine")));
      }
      assertTrue("sends " + dropper.sent.size(), dropper.sent.size() >= 2);
      for (RequestHeader h : dropper.sent) {
        assertEquals(dropper.sent.get(0).getSession(), h.getSession());
        assertEquals(dropper.sent.get(0).getSequence(), h.getSequence());
      }
      assertEquals(
          List.of("mine", "other"), LogTest.strings(log.read(0, 10).entries()));
    }
  }

  /** The same for a multi-append across two logs: each of its entries lands once. */
  @Test
  public void aResentMultiAppendLandsOnce() {
    String a = ByteMapTest.fresh();
    String bLog = ByteMapTest.fresh();
    DropReplies dropper = new DropReplies(MapRequest.OpCase.MULTI_APPEND, 1);
    dropper.onlyResponses = true;
    try (AmuletClient c =
        AmuletClient.connect(
            DevCluster.get().addresses(), DevCluster.get().config().withBatchesInFlight(0), dropper)) {
      c.createLog(a);
      c.createLog(bLog);
      try (AmuletClient other = DevCluster.get().client()) {
        dropper.afterDrop = () -> other.log(a).append(b("other"));
        assertArrayEquals(
            new long[] {0, 0, 1},
            c.multiAppend(
                List.of(Map.entry(a, b("a0")), Map.entry(bLog, b("b0")), Map.entry(bLog, b("b1")))));
      }
      assertTrue("sends " + dropper.sent.size(), dropper.sent.size() >= 2);
      for (RequestHeader h : dropper.sent) {
        assertEquals(dropper.sent.get(0).getSession(), h.getSession());
        assertEquals(dropper.sent.get(0).getSequence(), h.getSequence());
      }
      assertEquals(List.of("a0", "other"), LogTest.strings(c.log(a).read(0, 10).entries()));
      assertEquals(List.of("b0", "b1"), LogTest.strings(c.log(bLog).read(0, 10).entries()));
    }
  }

  /**
   * DMap §III-C with repartitioning: a resend of one sequence goes by the
   * map its first attempt was routed by, even when another thread refreshed
   * the cache meanwhile (under a newer map the command may belong to
   * another stream, which knows nothing of an execution under the old one).
   * The replica answers the stale-map resend it executed with its reply.
   */
  @Test
  public void aResendKeepsTheMapItsFirstAttemptWasRoutedBy() {
    String name = ByteMapTest.fresh();
    DropReplies dropper = new DropReplies(MapRequest.OpCase.PUT, 1);
    try (AmuletClient other = DevCluster.get().client();
        AmuletClient c =
            AmuletClient.connect(
                DevCluster.get().addresses(),
                DevCluster.get().config().withBatchesInFlight(0),
                dropper)) {
      ByteMap m = c.createMap(name);
      dropper.beforeDrop =
          () -> {
            // The map version moves on and this client's cache with it
            // while the first attempt is under way. The node the refresh
            // asks may not have executed the new map yet (CI once read
            // the old version): ask until the cache moved, at most 2 s.
            long before = c.partitionMapVersion();
            other.createMap(ByteMapTest.fresh());
            for (int i = 0; i < 400 && c.partitionMapVersion() <= before; i++) {
              c.refreshMap(null);
              if (c.partitionMapVersion() <= before) {
                java.util.concurrent.locks.LockSupport.parkNanos(5_000_000L);
              }
            }
          };
      assertNull(m.put(b("k"), b("v")));
      long routedBy = dropper.sent.get(0).getMapVersion();
      assertTrue(c.partitionMapVersion() > routedBy);
      assertTrue("resends " + dropper.sent.size(), dropper.sent.size() >= 2);
      // The resend after the lost reply keeps the first map; only a replica
      // answering "stale-map" (one that has not executed the first send
      // yet) moves a later resend on to the new one.
      assertEquals(routedBy, dropper.sent.get(1).getMapVersion());
      for (RequestHeader h : dropper.sent) {
        assertEquals(dropper.sent.get(0).getSequence(), h.getSequence());
      }
      assertArrayEquals(b("v"), m.get(b("k")));
    }
  }

  @Test
  public void aClientWithAStaleMapRefreshesIt() {
    String name = ByteMapTest.fresh();
    try (AmuletClient a = DevCluster.get().client();
        AmuletClient b = DevCluster.get().client()) {
      long before = b.partitionMapVersion();
      a.createMap(name).put(b("k"), b("v"));
      // b's cached map predates the map: routed by the old version, the
      // replica answers stale-map and b fetches the new map.
      assertArrayEquals(b("v"), b.byteMap(name).get(b("k")));
      assertTrue(b.partitionMapVersion() > before);
    }
  }

  @Test
  public void aDeadSeedIsSkipped() {
    List<String> seeds = new ArrayList<>();
    seeds.add("127.0.0.1:1");
    seeds.addAll(DevCluster.get().addresses());
    try (AmuletClient c = AmuletClient.connect(seeds, DevCluster.get().config())) {
      assertEquals(3, c.partitionIds().size());
    }
  }

  @Test
  public void concurrentWritersEachUseTheirOwnSession() throws Exception {
    String name = ByteMapTest.fresh();
    try (AmuletClient c = DevCluster.get().client()) {
      ByteMap m = c.createMap(name);
      m.put(b("counter"), new byte[] {0});
      ExecutorService pool = Executors.newFixedThreadPool(8);
      try {
        List<Future<?>> futures = new ArrayList<>();
        for (int t = 0; t < 8; t++) {
          futures.add(
              pool.submit(
                  () -> {
                    for (int i = 0; i < 10; i++) {
                      while (true) {
                        byte[] old = m.get(b("counter"));
                        byte[] next = {(byte) (old[0] + 1)};
                        if (m.replaceIfEquals(b("counter"), old, next)) {
                          break;
                        }
                      }
                    }
                    return null;
                  }));
        }
        for (Future<?> f : futures) {
          f.get(60, TimeUnit.SECONDS);
        }
      } finally {
        pool.shutdownNow();
      }
      assertArrayEquals(new byte[] {80}, m.get(b("counter")));
    }
  }

}
