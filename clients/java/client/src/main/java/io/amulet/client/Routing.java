package io.amulet.client;

import amulet.v1.AmuletOuterClass;
import com.google.protobuf.ByteString;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collection;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.zip.CRC32C;

/**
 * A cached partition map and where each request goes, following
 * crates/amulet-smr/src/partition_map.rs: a hash map's key lives in the
 * partition owning its token (CRC-32C of the key) on the token ring; a range
 * map's key in the partition of the last range starting at or below it. A
 * request involving several partitions goes to the lowest of them.
 * Immutable.
 */
final class Routing {
  final long version;
  /** Partition id to replica node ids. */
  final TreeMap<Integer, List<Integer>> partitions;
  /** First tokens (ascending, the first 0) and their partitions. */
  final long[] ringTokens;
  final int[] ringPartitions;
  /** Map name to ranges (null: hash layout). */
  final Map<String, Range[]> keyspaces;
  /** Node id to client address. */
  final Map<Integer, String> addresses;
  /** The global stream, and each partition's stream (what a reconfiguration allocates above). */
  final int globalStream;
  final Map<Integer, Integer> streams;

  /** One range of a range layout: keys from start (inclusive) up to the next start. */
  static final class Range {
    final byte[] start;
    final int partition;

    Range(byte[] start, int partition) {
      this.start = start;
      this.partition = partition;
    }
  }

  private Routing(
      long version,
      TreeMap<Integer, List<Integer>> partitions,
      long[] ringTokens,
      int[] ringPartitions,
      Map<String, Range[]> keyspaces,
      Map<Integer, String> addresses,
      int globalStream,
      Map<Integer, Integer> streams) {
    this.version = version;
    this.partitions = partitions;
    this.ringTokens = ringTokens;
    this.ringPartitions = ringPartitions;
    this.keyspaces = keyspaces;
    this.addresses = addresses;
    this.globalStream = globalStream;
    this.streams = streams;
  }

  /** The routing of a GetPartitionMap reply; refuses a map it cannot route by. */
  static Routing fromProto(AmuletOuterClass.PartitionMap m) {
    TreeMap<Integer, List<Integer>> partitions = new TreeMap<>();
    Map<Integer, Integer> streams = new TreeMap<>();
    for (AmuletOuterClass.Partition p : m.getPartitionsList()) {
      partitions.put(p.getId(), List.copyOf(p.getReplicasList()));
      streams.put(p.getId(), p.getStream());
    }
    if (partitions.isEmpty()) {
      throw new AmuletException(AmuletException.Kind.PROTOCOL, "the partition map has no partitions");
    }
    int n = m.getTokenRingCount();
    long[] tokens = new long[n];
    int[] owners = new int[n];
    for (int i = 0; i < n; i++) {
      tokens[i] = Integer.toUnsignedLong(m.getTokenRing(i).getFirstToken());
      owners[i] = m.getTokenRing(i).getPartition();
      if ((i == 0 && tokens[0] != 0) || (i > 0 && tokens[i] <= tokens[i - 1])) {
        throw new AmuletException(
            AmuletException.Kind.PROTOCOL, "the token ring must start at 0 and increase");
      }
    }
    if (n == 0) {
      throw new AmuletException(AmuletException.Kind.PROTOCOL, "the token ring is empty");
    }
    Map<String, Range[]> keyspaces = new java.util.HashMap<>();
    for (AmuletOuterClass.Keyspace ks : m.getKeyspacesList()) {
      if (ks.getLayout().getKindCase() == AmuletOuterClass.Layout.KindCase.RANGE) {
        List<AmuletOuterClass.RangeSplit> splits = ks.getLayout().getRange().getSplitsList();
        Range[] ranges = new Range[splits.size()];
        for (int i = 0; i < ranges.length; i++) {
          ranges[i] = new Range(splits.get(i).getStartKey().toByteArray(), splits.get(i).getPartition());
          if ((i == 0 && ranges[0].start.length != 0)
              || (i > 0 && Arrays.compareUnsigned(ranges[i - 1].start, ranges[i].start) >= 0)) {
            throw new AmuletException(
                AmuletException.Kind.PROTOCOL,
                "the ranges of " + ks.getName() + " must start at the empty key and increase");
          }
        }
        if (ranges.length == 0) {
          throw new AmuletException(AmuletException.Kind.PROTOCOL, "no ranges for " + ks.getName());
        }
        keyspaces.put(ks.getName(), ranges);
      } else {
        keyspaces.put(ks.getName(), null);
      }
    }
    Map<Integer, String> addresses = new TreeMap<>();
    for (AmuletOuterClass.NodeAddress a : m.getNodesList()) {
      addresses.put(a.getNode(), a.getAddress());
    }
    return new Routing(
        m.getVersion(),
        partitions,
        tokens,
        owners,
        Collections.unmodifiableMap(keyspaces),
        Collections.unmodifiableMap(addresses),
        m.getGlobalStream(),
        Collections.unmodifiableMap(streams));
  }

  /** The token of a key: its CRC-32C. */
  static long token(byte[] key) {
    CRC32C crc = new CRC32C();
    crc.update(key, 0, key.length);
    return crc.getValue();
  }

  boolean knows(String map) {
    return keyspaces.containsKey(map);
  }

  int partitionOf(String map, byte[] key) {
    Range[] ranges = keyspaces.get(map);
    if (ranges == null) {
      long t = token(key);
      int at = 0;
      for (int i = 0; i < ringTokens.length && ringTokens[i] <= t; i++) {
        at = i;
      }
      return ringPartitions[at];
    }
    int at = 0;
    for (int i = 0; i < ranges.length && Arrays.compareUnsigned(ranges[i].start, key) <= 0; i++) {
      at = i;
    }
    return ranges[at].partition;
  }

  /** The partitions a request involves, ascending; never empty. */
  List<Integer> partitionsFor(Placement p) {
    if (p.kind == Placement.Kind.ACROSS) {
      // The union of the parts' (each never empty), as partition_map.rs.
      TreeSet<Integer> involved = new TreeSet<>();
      for (Placement part : p.parts) {
        involved.addAll(partitionsFor(part));
      }
      if (involved.isEmpty()) {
        involved.add(partitions.firstKey());
      }
      return new ArrayList<>(involved);
    }
    if (p.map == null) {
      return new ArrayList<>(partitions.keySet());
    }
    if (!keyspaces.containsKey(p.map)) {
      // Unknown to this (maybe stale) map: the lowest partition answers
      // "stale" or "no such map".
      return List.of(partitions.firstKey());
    }
    Range[] ranges = keyspaces.get(p.map);
    TreeSet<Integer> involved = new TreeSet<>();
    switch (p.kind) {
      case KEYS:
        for (byte[] k : p.keys) {
          involved.add(partitionOf(p.map, k));
        }
        break;
      case ALL:
      case RANGE:
        if (ranges == null) {
          for (int owner : ringPartitions) {
            involved.add(owner);
          }
        } else if (p.kind == Placement.Kind.ALL) {
          for (Range r : ranges) {
            involved.add(r.partition);
          }
        } else {
          for (int i = 0; i < ranges.length; i++) {
            byte[] lower = ranges[i].start;
            byte[] upper = i + 1 < ranges.length ? ranges[i + 1].start : null;
            boolean belowTo =
                p.to == null
                    || (p.toInclusive
                        ? Arrays.compareUnsigned(lower, p.to) <= 0
                        : Arrays.compareUnsigned(lower, p.to) < 0);
            boolean aboveFrom =
                upper == null || p.from == null || Arrays.compareUnsigned(p.from, upper) < 0;
            if (belowTo && aboveFrom) {
              involved.add(ranges[i].partition);
            }
          }
        }
        break;
      default:
        throw new AssertionError(p.kind);
    }
    if (involved.isEmpty()) {
      involved.add(partitions.firstKey());
    }
    return new ArrayList<>(involved);
  }

  /**
   * A partition id above every partition of this map (as the Rust {@code
   * PartitionMap::next_partition_id} on a client's map, which knows no
   * partition merged away).
   */
  int nextPartitionId() {
    return partitions.lastKey() + 1;
  }

  /**
   * A stream id above the global stream, every partition's stream and
   * {@code alsoUsed} (the streams nodes run: a node's configuration may
   * name streams the map does not know).
   */
  int nextStreamId(Collection<Integer> alsoUsed) {
    int most = globalStream;
    for (int s : streams.values()) {
      most = Math.max(most, s);
    }
    for (int s : alsoUsed) {
      most = Math.max(most, s);
    }
    return most + 1;
  }

  /** Client addresses of the replicas of a partition. */
  List<String> replicaAddresses(int partition) {
    List<String> out = new ArrayList<>();
    for (int node : partitions.getOrDefault(partition, List.of())) {
      String a = addresses.get(node);
      if (a != null) {
        out.add(a);
      }
    }
    return out;
  }

  /** The replicas of a partition whose client address is known, in the map's order. */
  List<Integer> replicasWithAddress(int partition) {
    List<Integer> out = new ArrayList<>();
    for (int node : partitions.getOrDefault(partition, List.of())) {
      if (addresses.containsKey(node)) {
        out.add(node);
      }
    }
    return out;
  }

  /**
   * The replica a client with {@code seed} sends to among {@code
   * candidates}: the one with the highest {@link #score} (compared
   * unsigned; a tie to the larger node id), as crates/amulet-client's
   * {@code routing::preferred} (rendezvous hashing). Many clients, each with
   * its own seed, spread over the replicas; when the preferred one is left
   * out, each moves to its next-highest, not all to the same. Null for no
   * candidate.
   */
  static Integer preferred(List<Integer> candidates, long seed) {
    Integer best = null;
    long bestScore = 0;
    for (int node : candidates) {
      long score = score(seed, node);
      int c = best == null ? 1 : Long.compareUnsigned(score, bestScore);
      if (c > 0 || (c == 0 && Integer.compareUnsigned(node, best) > 0)) {
        best = node;
        bestScore = score;
      }
    }
    return best;
  }

  /**
   * A well-mixed 64-bit function of (seed, node id): SplitMix64's finalizer
   * of {@code seed ^ (node * 0x9E3779B97F4A7C15)}, bit for bit the Rust
   * client's {@code routing::score} (node ids are unsigned 32-bit).
   */
  static long score(long seed, int node) {
    long z = seed ^ (Integer.toUnsignedLong(node) * 0x9E3779B97F4A7C15L);
    z = (z ^ (z >>> 30)) * 0xBF58476D1CE4E5B9L;
    z = (z ^ (z >>> 27)) * 0x94D049BB133111EBL;
    return z ^ (z >>> 31);
  }

  static ByteString bytes(byte[] b) {
    return ByteString.copyFrom(b);
  }
}
