package io.amulet.client;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertThrows;
import static org.junit.Assert.assertTrue;

import amulet.v1.AmuletOuterClass;
import amulet.v1.AmuletOuterClass.ChangeMembershipRequest;
import amulet.v1.AmuletOuterClass.ChangeMembershipResponse;
import io.grpc.Status;
import io.grpc.stub.StreamObserver;
import java.io.IOException;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.After;
import org.junit.Before;
import org.junit.Test;

/**
 * {@link AmuletClient#join} and {@link AmuletClient#leave} against one fake
 * node (docs/membership.md, {@code ChangeMembership}): the request sent, the
 * id answered, and refusals or a lost answer never sent again (a change may
 * have been ordered). The node checks the addresses, not the client.
 */
public class MembershipTest {
  /** A fake node that records membership changes and answers {@link #answer}. */
  static final class FakeNode extends FakeNodeServer {
    final List<ChangeMembershipRequest> changes = new CopyOnWriteArrayList<>();
    /** The status to fail with, or null: answer {@code node}. */
    final AtomicReference<Status> failure = new AtomicReference<>();
    volatile int node = 4;

    @Override
    AmuletOuterClass.PartitionMap partitionMap() {
      return AmuletOuterClass.PartitionMap.newBuilder()
          .setVersion(1)
          .addPartitions(AmuletOuterClass.Partition.newBuilder().setId(1).setStream(1).addReplicas(1))
          .addTokenRing(AmuletOuterClass.TokenRange.newBuilder().setFirstToken(0).setPartition(1))
          .addNodes(AmuletOuterClass.NodeAddress.newBuilder().setNode(1).setAddress(address))
          .build();
    }

    @Override
    public void changeMembership(
        ChangeMembershipRequest request, StreamObserver<ChangeMembershipResponse> out) {
      changes.add(request);
      Status f = failure.get();
      if (f != null) {
        out.onError(f.asRuntimeException());
        return;
      }
      int id = request.getChangeCase() == ChangeMembershipRequest.ChangeCase.JOIN ? node : 0;
      out.onNext(ChangeMembershipResponse.newBuilder().setNode(id).build());
      out.onCompleted();
    }
  }

  private FakeNode fake;
  private AmuletClient client;

  @Before
  public void start() throws IOException {
    fake = new FakeNode();
    fake.start();
    client =
        AmuletClient.connect(
            List.of(fake.address),
            ClientConfig.defaults()
                .withPlaintext()
                .withAttemptTimeout(Duration.ofSeconds(2))
                .withOperationTimeout(Duration.ofSeconds(5)));
  }

  @After
  public void stop() throws InterruptedException {
    if (client != null) {
      client.close();
    }
    fake.stop();
  }

  @Test
  public void joinSendsBothAddressesAndAnswersTheNewNodesId() {
    assertEquals(4, client.join("127.0.0.1:7998", "127.0.0.1:7999"));
    assertEquals(1, fake.changes.size());
    ChangeMembershipRequest sent = fake.changes.get(0);
    assertEquals(ChangeMembershipRequest.ChangeCase.JOIN, sent.getChangeCase());
    assertEquals("127.0.0.1:7998", sent.getJoin().getPeerAddress());
    assertEquals("127.0.0.1:7999", sent.getJoin().getClientAddress());
  }

  @Test
  public void joinLeavesTheAddressesToTheNode() {
    // Not ip:port, empty: sent as they are, the node judges them.
    fake.failure.set(Status.INVALID_ARGUMENT.withDescription("not ip:port (test)"));
    assertThrows(IllegalArgumentException.class, () -> client.join("not-an-address", ""));
    assertEquals("refused once, not sent again", 1, fake.changes.size());
    assertEquals("not-an-address", fake.changes.get(0).getJoin().getPeerAddress());
    assertEquals("", fake.changes.get(0).getJoin().getClientAddress());
    assertThrows(NullPointerException.class, () -> client.join(null, "127.0.0.1:7999"));
    assertThrows(NullPointerException.class, () -> client.join("127.0.0.1:7998", null));
    assertEquals("nothing sent for a null", 1, fake.changes.size());
  }

  @Test
  public void aRefusedJoinIsFailedPreconditionAndNotSentAgain() {
    fake.failure.set(Status.FAILED_PRECONDITION.withDescription("a node is at 127.0.0.1:7998 (test)"));
    AmuletException e =
        assertThrows(AmuletException.class, () -> client.join("127.0.0.1:7998", "127.0.0.1:7999"));
    assertEquals(AmuletException.Kind.FAILED_PRECONDITION, e.kind());
    assertEquals(1, fake.changes.size());
  }

  @Test
  public void aJoinWithoutAnAnswerIsNotSentAgain() {
    // The node took the call and broke off: the join may have been ordered.
    fake.failure.set(Status.UNAVAILABLE.withDescription("connection reset (test)"));
    AmuletException e =
        assertThrows(AmuletException.class, () -> client.join("127.0.0.1:7998", "127.0.0.1:7999"));
    assertEquals(AmuletException.Kind.UNAVAILABLE, e.kind());
    assertEquals(1, fake.changes.size());
  }

  @Test
  public void leaveSendsTheNode() {
    client.leave(3);
    assertEquals(1, fake.changes.size());
    assertEquals(ChangeMembershipRequest.ChangeCase.LEAVE, fake.changes.get(0).getChangeCase());
    assertEquals(3, fake.changes.get(0).getLeave());
    assertTrue(fake.changes.get(0).getJoin().getPeerAddress().isEmpty());
  }
}
