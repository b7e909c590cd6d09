package io.amulet.client;

import static org.junit.Assert.assertEquals;

import amulet.v1.AmuletOuterClass;
import amulet.v1.AmuletOuterClass.ReconfigureRequest;
import io.grpc.Metadata;
import io.grpc.Status;
import io.grpc.stub.StreamObserver;
import java.io.IOException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.After;
import org.junit.Test;

/**
 * Where {@link Reconfigure#with} sends a change, as the Rust client's
 * {@code Client::global_node} (crates/amulet-client/src/client.rs): to a
 * replica of the first partition, which executes the global stream, and
 * again after {@code not-a-replica}. A member that replicates nothing (a
 * spare, or one whose partitions moved away; docs/dynatree.md, "Members
 * replicating nothing") answers every reconfiguration {@code not-a-replica}.
 * Two fake nodes: node 1 replicates the only partition, node 2 nothing.
 */
public class ReconfigureRoutingTest {
  /** A fake node that counts reconfigurations and refuses the first {@code refuse}. */
  final class FakeNode extends FakeNodeServer {
    final AtomicInteger reconfigurations = new AtomicInteger();
    final AtomicInteger refuse;

    FakeNode(int refuse) {
      this.refuse = new AtomicInteger(refuse);
    }

    @Override
    AmuletOuterClass.PartitionMap partitionMap() {
      return map();
    }

    @Override
    public void reconfigure(
        ReconfigureRequest request, StreamObserver<AmuletOuterClass.ReconfigureResponse> out) {
      reconfigurations.incrementAndGet();
      if (refuse.getAndDecrement() > 0) {
        Metadata trailers = new Metadata();
        trailers.put(AmuletClient.AMULET_ERROR, "not-a-replica");
        out.onError(
            Status.FAILED_PRECONDITION
                .withDescription("this node does not replicate that partition (test)")
                .asRuntimeException(trailers));
        return;
      }
      out.onNext(AmuletOuterClass.ReconfigureResponse.getDefaultInstance());
      out.onCompleted();
    }
  }

  private final List<FakeNode> nodes = new ArrayList<>();
  private AmuletClient client;

  private AmuletOuterClass.PartitionMap map() {
    AmuletOuterClass.PartitionMap.Builder m =
        AmuletOuterClass.PartitionMap.newBuilder()
            .setVersion(1)
            .addPartitions(
                AmuletOuterClass.Partition.newBuilder().setId(1).setStream(1).addReplicas(1))
            .addTokenRing(
                AmuletOuterClass.TokenRange.newBuilder().setFirstToken(0).setPartition(1));
    for (int i = 0; i < nodes.size(); i++) {
      m.addNodes(
          AmuletOuterClass.NodeAddress.newBuilder().setNode(i + 1).setAddress(nodes.get(i).address));
    }
    return m.build();
  }

  private static ReconfigureRequest aMove(Routing map) {
    return ReconfigureRequest.newBuilder()
        .setMove(AmuletOuterClass.MovePartition.newBuilder().setPartition(1))
        .build();
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

  @Test
  public void aReconfigurationGoesToAReplicaOfTheFirstPartitionAndAgainAfterNotAReplica()
      throws IOException {
    FakeNode replica = new FakeNode(1);
    FakeNode spare = new FakeNode(Integer.MAX_VALUE);
    nodes.add(replica);
    nodes.add(spare);
    replica.start();
    spare.start();
    // Seeded with the spare only: the client learns the map from it.
    client =
        AmuletClient.connect(
            List.of(spare.address),
            ClientConfig.defaults()
                .withAttemptTimeout(Duration.ofSeconds(2))
                .withOperationTimeout(Duration.ofSeconds(10)));
    for (int i = 0; i < 20; i++) {
      Reconfigure.with(client, ReconfigureRoutingTest::aMove);
    }
    assertEquals("the spare is never asked", 0, spare.reconfigurations.get());
    assertEquals("20 changes and one resend after not-a-replica", 21, replica.reconfigurations.get());
  }
}
