package io.amulet.client;

import amulet.v1.AmuletGrpc;
import amulet.v1.AmuletOuterClass;
import amulet.v1.AmuletOuterClass.MapRequest;
import amulet.v1.AmuletOuterClass.ReadSnapshotRequest;
import amulet.v1.AmuletOuterClass.SnapshotPage;
import com.google.protobuf.ByteString;
import io.grpc.Context;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import java.lang.ref.Cleaner;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.NoSuchElementException;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;

/**
 * An open snapshot of a map (DMap §III-B), iterated once in ascending key
 * order: opened through the global stream at one point of the order, every
 * partition's part is streamed in pages, each partition from a random
 * replica, and merged here. The iterator holds at most one page per
 * partition whatever the map's size; a broken stream resumes at another
 * replica after the last key taken. A refusal is final, never resumed:
 * {@code PERMISSION_DENIED} when the user may no longer read the map (the
 * nodes judge every page: a grant revoked while iterating ends it, though
 * pages already sent are still delivered), {@code UNAUTHENTICATED} for
 * refused credentials. {@link #close} releases the snapshot (its lease
 * frees it anyway). Not thread-safe.
 */
public final class Snapshot implements Iterator<Map.Entry<byte[], byte[]>>, AutoCloseable {
  private final AmuletClient client;
  private final long id;
  private final List<Source> sources = new ArrayList<>();
  private final List<Integer> partitions;
  private final boolean owned;
  /** Volatile: an abandoned snapshot is closed on the cleaner's thread. */
  private volatile boolean released;

  /** One partition's part of the snapshot. */
  private static final class Source {
    final int partition;
    Context.CancellableContext context;
    Iterator<SnapshotPage> stream;
    ArrayDeque<AmuletOuterClass.Entry> page = new ArrayDeque<>();
    /** Last key taken from this partition: where a broken stream resumes. */
    byte[] resumeAfter;
    boolean finished;

    Source(int partition, byte[] after) {
      this.partition = partition;
      this.resumeAfter = after;
    }

    void cancel() {
      if (context != null) {
        context.cancel(null);
        context = null;
      }
      stream = null;
    }
  }

  Snapshot(AmuletClient client, long id, List<Integer> partitions, byte[] after) {
    this(client, id, partitions, after, true);
  }

  Snapshot(AmuletClient client, long id, List<Integer> partitions, byte[] after, boolean owned) {
    this.client = client;
    this.id = id;
    this.owned = owned;
    this.partitions = List.copyOf(partitions);
    for (int p : partitions) {
      sources.add(new Source(p, after == null ? null : after.clone()));
    }
  }

  /** The snapshot's id (its position in the global order). */
  public long id() {
    return id;
  }

  /**
   * A new iterator over the same snapshot from its first key (the partitions
   * it was opened on, even if the map was dropped since); closing it does
   * not release the snapshot.
   */
  public Snapshot reread() {
    return new Snapshot(client, id, partitions, null, false);
  }

  /** Entries held in this iterator now (at most a page per partition). */
  public int buffered() {
    int n = 0;
    for (Source s : sources) {
      n += s.page.size();
    }
    return n;
  }

  @Override
  public boolean hasNext() {
    for (Source s : sources) {
      if (s.page.isEmpty() && !s.finished) {
        refill(s);
      }
    }
    for (Source s : sources) {
      if (!s.page.isEmpty()) {
        return true;
      }
    }
    return false;
  }

  /** The least key the next call of {@link #next} returns, or null at the end. */
  public byte[] peekKey() {
    Source least = least();
    return least == null ? null : least.page.peekFirst().getKey().toByteArray();
  }

  private Source least() {
    if (!hasNext()) {
      return null;
    }
    Source least = null;
    for (Source s : sources) {
      if (!s.page.isEmpty()
          && (least == null
              || compare(s.page.peekFirst().getKey(), least.page.peekFirst().getKey()) < 0)) {
        least = s;
      }
    }
    return least;
  }

  private static int compare(com.google.protobuf.ByteString a, com.google.protobuf.ByteString b) {
    return com.google.protobuf.ByteString.unsignedLexicographicalComparator().compare(a, b);
  }

  @Override
  public Map.Entry<byte[], byte[]> next() {
    Source least = least();
    if (least == null) {
      throw new NoSuchElementException();
    }
    AmuletOuterClass.Entry e = least.page.pollFirst();
    least.resumeAfter = e.getKey().toByteArray();
    return ByteMap.entry(e);
  }

  /**
   * A stream of one partition's pages of a snapshot, after {@code after},
   * from a random replica; its deadline is the snapshot lease.
   */
  private Iterator<SnapshotPage> openPages(
      io.grpc.Context.CancellableContext context, int partition, long snapshot, byte[] after) {
    List<String> replicas = client.routing().replicaAddresses(partition);
    if (replicas.isEmpty()) {
      throw new AmuletException(
          AmuletException.Kind.PROTOCOL, "no address for a replica of partition " + partition);
    }
    String address = replicas.get(ThreadLocalRandom.current().nextInt(replicas.size()));
    ReadSnapshotRequest.Builder request =
        ReadSnapshotRequest.newBuilder()
            .setPartition(partition)
            .setSnapshot(snapshot)
            .setPageSize(client.config().pageEntries());
    if (after != null) {
      request.setAfter(ByteString.copyFrom(after));
    }
    AmuletGrpc.AmuletBlockingStub stub =
        AmuletGrpc.newBlockingStub(client.channelAt(address))
            .withDeadlineAfter(client.config().snapshotLease().toMillis(), TimeUnit.MILLISECONDS);
    try {
      return context.call(() -> stub.readSnapshot(request.build()));
    } catch (RuntimeException e) {
      throw e;
    } catch (Exception e) {
      throw new IllegalStateException(e);
    }
  }

  /** Reads the source's next page, reopening its stream if it broke. */
  private void refill(Source s) {
    long deadline = System.nanoTime() + client.config().operationTimeout().toNanos();
    long backoff = TimeUnit.MILLISECONDS.toNanos(10);
    while (true) {
      String why;
      try {
        if (s.stream == null) {
          s.context = Context.current().withCancellation();
          s.stream = openPages(s.context, s.partition, id, s.resumeAfter);
        }
        if (s.stream.hasNext()) {
          SnapshotPage page = s.stream.next();
          s.finished = page.getLast();
          s.page = new ArrayDeque<>(page.getEntriesList());
          if (s.finished) {
            s.cancel();
          }
          if (!s.page.isEmpty() || s.finished) {
            return;
          }
          continue;
        }
        why = "the stream ended early";
      } catch (StatusRuntimeException e) {
        Status.Code code = e.getStatus().getCode();
        // Final: the snapshot is gone, the request is bad, or the
        // credentials or permissions were refused (a grant revoked while
        // iterating ends the stream at its next page): no other replica
        // answers otherwise, so nothing is reopened.
        if (code == Status.Code.NOT_FOUND
            || code == Status.Code.INVALID_ARGUMENT
            || code == Status.Code.UNAUTHENTICATED
            || code == Status.Code.PERMISSION_DENIED) {
          s.cancel();
          throw AmuletException.fromStatus(e.getStatus());
        }
        why = e.getStatus().toString();
      }
      s.cancel();
      if (System.nanoTime() + backoff >= deadline) {
        throw new AmuletException(
            AmuletException.Kind.UNAVAILABLE,
            "reading snapshot " + id + " of partition " + s.partition + ": " + why);
      }
      AmuletClient.sleepNanos(backoff);
      backoff = Math.min(backoff * 2, TimeUnit.MILLISECONDS.toNanos(500));
    }
  }

  /** Every partition's last page has been received (the rest is buffered here). */
  public boolean drained() {
    for (Source s : sources) {
      if (!s.finished) {
        return false;
      }
    }
    return true;
  }

  /**
   * Releases the snapshot in the cluster (once) but keeps what is buffered:
   * after {@link #drained()}, iteration goes on without the cluster.
   */
  public void release() {
    if (released || !owned) {
      return;
    }
    released = true;
    release(client, id);
  }

  /** Closes the snapshots of owners dropped before they closed them. */
  private static final Cleaner ABANDONED = Cleaner.create();

  /**
   * Closes this snapshot once {@code owner} is unreachable, for owners a user
   * never closes (a map's iterator: each open snapshot counts against the
   * user's share, {@code snapshots_per_user_max}, until its lease ends).
   * The handle's {@code clean()} closes it at once, and only once.
   */
  public Cleaner.Cleanable closeWhenUnreachable(Object owner) {
    return ABANDONED.register(owner, this::closeQuietly);
  }

  /** {@link #close}, ignoring a failure: the snapshot's lease frees it anyway. */
  private void closeQuietly() {
    try {
      close();
    } catch (RuntimeException e) {
      // The cluster frees it when its lease ends.
    }
  }

  /** Stops reading and, for a snapshot this object opened, releases it (once). */
  @Override
  public void close() {
    for (Source s : sources) {
      s.cancel();
      s.page.clear();
      s.finished = true;
    }
    if (released || !owned) {
      return;
    }
    released = true;
    release(client, id);
  }

  static void release(AmuletClient client, long id) {
    client.execute(
        MapRequest.newBuilder()
            .setReleaseSnapshot(AmuletOuterClass.ReleaseSnapshot.newBuilder().setSnapshot(id))
            .build(),
        Placement.cluster());
  }

  @Override
  public String toString() {
    return "Snapshot(" + id + ")";
  }

}
