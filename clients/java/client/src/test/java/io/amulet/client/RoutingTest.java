package io.amulet.client;

import static org.junit.Assert.assertEquals;

import amulet.v1.AmuletOuterClass;
import com.google.protobuf.ByteString;
import java.nio.charset.StandardCharsets;
import java.util.List;
import org.junit.Test;

/** Routing by a partition map, offline (crates/amulet-smr/src/partition_map.rs). */
public class RoutingTest {
  static byte[] b(String s) {
    return s.getBytes(StandardCharsets.UTF_8);
  }

  static Routing routing() {
    AmuletOuterClass.PartitionMap.Builder m = AmuletOuterClass.PartitionMap.newBuilder().setVersion(7);
    for (int p = 1; p <= 3; p++) {
      m.addPartitions(AmuletOuterClass.Partition.newBuilder().setId(p).setStream(p).addReplicas(p));
      m.addNodes(AmuletOuterClass.NodeAddress.newBuilder().setNode(p).setAddress("127.0.0.1:" + (7100 + p)));
    }
    long[] firsts = {0, (1L << 32) / 3, (2L << 32) / 3};
    for (int i = 0; i < 3; i++) {
      m.addTokenRing(
          AmuletOuterClass.TokenRange.newBuilder().setFirstToken((int) firsts[i]).setPartition(i + 1));
    }
    m.addKeyspaces(
        AmuletOuterClass.Keyspace.newBuilder()
            .setName("h")
            .setLayout(AmuletOuterClass.Layout.newBuilder().setHash(AmuletOuterClass.HashLayout.getDefaultInstance())));
    AmuletOuterClass.RangeLayout.Builder ranges = AmuletOuterClass.RangeLayout.newBuilder();
    String[] starts = {"", "g", "p"};
    for (int i = 0; i < 3; i++) {
      ranges.addSplits(
          AmuletOuterClass.RangeSplit.newBuilder()
              .setStartKey(ByteString.copyFromUtf8(starts[i]))
              .setPartition(i + 1));
    }
    m.addKeyspaces(
        AmuletOuterClass.Keyspace.newBuilder()
            .setName("r")
            .setLayout(AmuletOuterClass.Layout.newBuilder().setRange(ranges)));
    return Routing.fromProto(m.build());
  }

  @Test
  public void theTokenIsCrc32c() {
    assertEquals(0xE3069283L, Routing.token(b("123456789")));
  }

  @Test
  public void hashKeysGoToTheOwnerOfTheirToken() {
    Routing r = routing();
    for (String k : new String[] {"", "a", "hello", "123456789", "user42"}) {
      long t = Routing.token(b(k));
      int expected = t < (1L << 32) / 3 ? 1 : t < (2L << 32) / 3 ? 2 : 3;
      assertEquals(k, expected, r.partitionOf("h", b(k)));
    }
    assertEquals(List.of(1, 2, 3), r.partitionsFor(Placement.range("h", b("a"), true, b("b"), true)));
    assertEquals(List.of(1, 2, 3), r.partitionsFor(Placement.all("h")));
  }

  @Test
  public void rangeKeysAndRangesGoToTheirRanges() {
    Routing r = routing();
    assertEquals(1, r.partitionOf("r", b("")));
    assertEquals(1, r.partitionOf("r", b("f\u00ff")));
    assertEquals(2, r.partitionOf("r", b("g")));
    assertEquals(3, r.partitionOf("r", b("zz")));
    assertEquals(List.of(2), r.partitionsFor(Placement.range("r", b("h"), true, b("k"), false)));
    assertEquals(List.of(1, 2), r.partitionsFor(Placement.range("r", b("a"), true, b("g"), true)));
    assertEquals(List.of(1), r.partitionsFor(Placement.range("r", b("a"), true, b("g"), false)));
    assertEquals(List.of(2, 3), r.partitionsFor(Placement.range("r", b("g"), false, null, false)));
    assertEquals(List.of(1, 3), r.partitionsFor(Placement.keys("r", List.of(b("a"), b("q")))));
    // A map the cached map does not know goes to the lowest partition.
    assertEquals(List.of(1), r.partitionsFor(Placement.key("unknown", b("a"))));
    assertEquals(List.of("127.0.0.1:7102"), r.replicaAddresses(2));
  }
}
