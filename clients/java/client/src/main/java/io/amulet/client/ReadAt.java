package io.amulet.client;

import amulet.v1.AmuletGrpc;
import amulet.v1.AmuletOuterClass.Entries;
import amulet.v1.AmuletOuterClass.Entry;
import amulet.v1.AmuletOuterClass.KeyBound;
import amulet.v1.AmuletOuterClass.KeyRange;
import amulet.v1.AmuletOuterClass.MapRequest;
import amulet.v1.AmuletOuterClass.MapResponse;
import amulet.v1.AmuletOuterClass.Range;
import amulet.v1.AmuletOuterClass.ReadAtRequest;
import amulet.v1.AmuletOuterClass.ReadAtResponse;
import amulet.v1.AmuletOuterClass.ReadConflict;
import amulet.v1.AmuletOuterClass.RequestHeader;
import com.google.common.util.concurrent.ListenableFuture;
import com.google.protobuf.ByteString;
import io.grpc.Metadata;
import io.grpc.Status;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;

/**
 * One read of a transaction at its read version (the ReadAt RPC), as
 * {@code Transaction::read} of crates/amulet-client/src/transaction.rs: the
 * read goes to a random replica of every partition it involves (in
 * parallel, not ordered), the partial replies are combined as the cluster
 * combines them ({@code amulet-dmap} combine.rs), and the read's conflict
 * range is computed from the combined reply ({@code conflict_range} of
 * command.rs). A replica that is behind the read version, holds no snapshot
 * of it ({@code read-version-elsewhere}) or does not answer in time is left
 * for another; a stale partition map is fetched again; all within the
 * client's operation timeout. Only gets and range reads are sent here.
 */
final class ReadAt {
  private static final long BACKOFF_MIN_NANOS = TimeUnit.MILLISECONDS.toNanos(10);
  private static final long BACKOFF_MAX_NANOS = TimeUnit.MILLISECONDS.toNanos(500);
  private static final Metadata.Key<String> AMULET_ERROR =
      Metadata.Key.of("amulet-error", Metadata.ASCII_STRING_MARSHALLER);

  /** The combined reply, whether it is sure to conflict, and what it read. */
  static final class Answer {
    final MapResponse response;
    /**
     * A key the read covered was written since the read version: a
     * transaction that writes will conflict. Only a single partition's
     * flag is sure (several partitions' cover more than the combined
     * reply), so reads of several partitions never set it.
     */
    final boolean writtenSince;
    final ReadConflict conflict;

    Answer(MapResponse response, boolean writtenSince, ReadConflict conflict) {
      this.response = response;
      this.writtenSince = writtenSince;
      this.conflict = conflict;
    }
  }

  /** One attempt failed in a way that another may not. */
  private static final class Retry extends Exception {
    private static final long serialVersionUID = 1L;

    Retry(String why) {
      super(why, null, false, false);
    }
  }

  private final AmuletClient client;
  /** Per partition, the replica the last attempt failed at. */
  private final Map<Integer, String> failedAt = new HashMap<>();

  private ReadAt(AmuletClient client) {
    this.client = client;
  }

  /**
   * Reads {@code op} (a Get or a Range of {@code map}, no header) at {@code
   * version} in every partition {@code placement} involves.
   */
  static Answer read(
      AmuletClient client, long version, String map, MapRequest op, Placement placement) {
    return new ReadAt(client).run(version, map, op, placement);
  }

  private Answer run(long version, String map, MapRequest op, Placement placement) {
    long deadline = System.nanoTime() + client.config().operationTimeout().toNanos();
    long backoff = BACKOFF_MIN_NANOS;
    while (true) {
      String last;
      try {
        return attempt(version, map, op, placement);
      } catch (Retry r) {
        last = r.getMessage();
      }
      if (System.nanoTime() + backoff >= deadline) {
        throw new AmuletException(
            AmuletException.Kind.UNAVAILABLE,
            "gave up reading at read version " + version + " after "
                + client.config().operationTimeout() + ": " + last);
      }
      AmuletClient.sleepNanos(backoff);
      backoff = Math.min(backoff * 2, BACKOFF_MAX_NANOS);
    }
  }

  private Answer attempt(long version, String map, MapRequest op, Placement placement)
      throws Retry {
    Routing routing = client.routing();
    if (!routing.knows(map)) {
      // A replica answers a read of a map its partition map does not name
      // with not-a-replica, not NOT_FOUND; decide here, as the Rust client
      // does, from the newest partition map.
      client.refreshMap(null);
      routing = client.routing();
      if (!routing.knows(map)) {
        throw new AmuletException(
            AmuletException.Kind.NOT_FOUND,
            "no map named " + map + " (partition map version " + routing.version + ")");
      }
    }
    List<Integer> partitions = routing.partitionsFor(placement);
    List<String> addresses = new ArrayList<>(partitions.size());
    List<ListenableFuture<ReadAtResponse>> calls = new ArrayList<>(partitions.size());
    try {
      for (int partition : partitions) {
        String address = replica(routing, partition);
        addresses.add(address);
        ReadAtRequest request =
            ReadAtRequest.newBuilder()
                .setReadVersion(version)
                .setRequest(
                    op.toBuilder()
                        .setHeader(
                            RequestHeader.newBuilder()
                                .setMapVersion(routing.version)
                                .setPartition(partition)))
                .build();
        calls.add(
            AmuletGrpc.newFutureStub(client.channelAt(address))
                .withDeadlineAfter(client.config().attemptTimeout().toMillis(), TimeUnit.MILLISECONDS)
                .readAt(request));
      }
      List<MapResponse> partials = new ArrayList<>(calls.size());
      boolean writtenSince = false;
      for (int i = 0; i < calls.size(); i++) {
        ReadAtResponse r = await(calls.get(i), partitions.get(i), addresses.get(i));
        partials.add(r.getResponse());
        writtenSince |= r.getWrittenSince();
      }
      MapResponse combined = combine(op, partials);
      return new Answer(combined, partials.size() == 1 && writtenSince, conflict(map, op, combined));
    } finally {
      for (ListenableFuture<ReadAtResponse> c : calls) {
        c.cancel(true);
      }
    }
  }

  /** A random replica of {@code partition}, not the one that failed last if there is another. */
  private String replica(Routing routing, int partition) {
    List<String> replicas = new ArrayList<>(routing.replicaAddresses(partition));
    if (replicas.isEmpty()) {
      throw new AmuletException(
          AmuletException.Kind.PROTOCOL, "no address for a replica of partition " + partition);
    }
    if (replicas.size() > 1) {
      replicas.remove(failedAt.get(partition));
    }
    return replicas.get(ThreadLocalRandom.current().nextInt(replicas.size()));
  }

  private ReadAtResponse await(ListenableFuture<ReadAtResponse> call, int partition, String address)
      throws Retry {
    try {
      ReadAtResponse r = call.get();
      failedAt.remove(partition);
      return r;
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new AmuletException(AmuletException.Kind.UNAVAILABLE, "interrupted");
    } catch (ExecutionException e) {
      Status status = Status.fromThrowable(e.getCause());
      Metadata trailers = Status.trailersFromThrowable(e.getCause());
      failedAt.put(partition, address);
      throw onError(status, trailers, address);
    }
  }

  /** The Retry for what another attempt may get past; throws the final error. */
  private Retry onError(Status status, Metadata trailers, String address) {
    String kind = trailers == null ? null : trailers.get(AMULET_ERROR);
    String message = address + ": " + status.getCode() + ": " + status.getDescription();
    if (kind != null) {
      switch (kind) {
        case "stale-map":
        case "not-a-replica":
          client.refreshMap(null);
          return new Retry(message);
        case "behind":
        case "retryable":
        case "read-version-elsewhere":
          // Not there yet, or restored without the version's snapshot:
          // another replica (or this one, later).
          return new Retry(message);
        case "conflict":
        case "read-version-too-old":
          throw AmuletException.fromStatus(status, kind, trailers);
        default:
          break;
      }
    }
    switch (status.getCode()) {
      case DEADLINE_EXCEEDED:
      case UNAVAILABLE:
      case CANCELLED:
      case UNKNOWN:
        return new Retry(message);
      default:
        throw AmuletException.fromStatus(status);
    }
  }

  /** The reply of several partitions' partial replies (combine.rs). */
  static MapResponse combine(MapRequest op, List<MapResponse> partials) {
    if (partials.size() == 1) {
      return partials.get(0);
    }
    if (op.getOpCase() != MapRequest.OpCase.RANGE) {
      throw new AmuletException(
          AmuletException.Kind.PROTOCOL,
          "a " + op.getOpCase() + " read answered by " + partials.size() + " partitions");
    }
    Range range = op.getRange();
    List<Entry> all = new ArrayList<>();
    boolean more = false;
    for (MapResponse p : partials) {
      if (p.getResultCase() != MapResponse.ResultCase.ENTRIES) {
        throw new AmuletException(
            AmuletException.Kind.PROTOCOL, "a range read answered " + p.getResultCase());
      }
      all.addAll(p.getEntries().getEntriesList());
      more |= p.getEntries().getMore();
    }
    // Partitions hold disjoint keys: sorting by key alone is total.
    all.sort(
        (a, b) -> {
          int c = ByteString.unsignedLexicographicalComparator().compare(a.getKey(), b.getKey());
          return range.getReverse() ? -c : c;
        });
    if (all.size() > range.getLimit()) {
      all = all.subList(0, range.getLimit());
      more = true;
    }
    return MapResponse.newBuilder()
        .setEntries(Entries.newBuilder().addAllEntries(all).setMore(more))
        .build();
  }

  /**
   * The keys {@code op} looked at to give {@code response} (conflict_range
   * of command.rs): a get its key; a range read its range, or, when the
   * limit cut it short, the part up to the last entry returned.
   */
  static ReadConflict conflict(String map, MapRequest op, MapResponse response) {
    KeyRange.Builder keys = KeyRange.newBuilder();
    switch (op.getOpCase()) {
      case GET:
        {
          KeyBound key = KeyBound.newBuilder().setKey(op.getGet().getKey()).setInclusive(true).build();
          keys.setFrom(key).setTo(key);
          break;
        }
      case RANGE:
        {
          Range range = op.getRange();
          if (range.hasFrom()) {
            keys.setFrom(range.getFrom());
          }
          if (range.hasTo()) {
            keys.setTo(range.getTo());
          }
          Entries entries = response.getEntries();
          if (entries.getMore() && entries.getEntriesCount() > 0) {
            KeyBound last =
                KeyBound.newBuilder()
                    .setKey(entries.getEntries(entries.getEntriesCount() - 1).getKey())
                    .setInclusive(true)
                    .build();
            if (range.getReverse()) {
              keys.setFrom(last);
            } else {
              keys.setTo(last);
            }
          }
          break;
        }
      default:
        throw new IllegalStateException("not a transaction read: " + op.getOpCase());
    }
    return ReadConflict.newBuilder().setMap(map).setRange(keys).build();
  }

  /** Whether no key lies in {@code r} (command.rs KeyRange::is_empty). */
  static boolean isEmpty(KeyRange r) {
    if (!r.hasFrom() || !r.hasTo()) {
      return false;
    }
    int c =
        ByteString.unsignedLexicographicalComparator()
            .compare(r.getFrom().getKey(), r.getTo().getKey());
    return c > 0 || (c == 0 && !(r.getFrom().getInclusive() && r.getTo().getInclusive()));
  }
}
