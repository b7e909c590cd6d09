package io.amulet.client;

import amulet.v1.AmuletOuterClass.EventualDeleteRequest;
import amulet.v1.AmuletOuterClass.EventualGetRequest;
import amulet.v1.AmuletOuterClass.EventualPutRequest;
import com.google.protobuf.ByteString;
import java.util.List;
import java.util.Objects;
import java.util.function.Function;

/**
 * A handle on one eventual map of the cluster ({@link
 * AmuletClient#eventualMap}, {@link AmuletClient#createEventualMap}):
 * DottedDB's Dynamo-like map (docs/eventual-maps.md), served by the key's
 * replicas without ordering and writable on any side of a partition.
 *
 * <p>A read returns every concurrent value of the key (siblings) and an
 * opaque causal {@link Context} ({@link Versioned}). A write or delete
 * given that context supersedes exactly the values the read returned; a
 * write with {@link Context#EMPTY} supersedes nothing and adds a sibling.
 * Concurrent writes (neither context covering the other) both stay, as
 * siblings, until a write given a context that covers them both replaces
 * them. {@code r} and {@code w} are how many of the key's replicas must
 * answer (0: a majority of the map's replicas, as the cluster counts; at
 * most the map's replica count).
 *
 * <p>Each call is one request (EventualGet, EventualPut, EventualDelete) to
 * the client's current node, which forwards it to the key's replicas; see
 * {@link AmuletClient#eventualMap} for fail-over. Cheap and thread-safe.
 *
 * <p>Errors: {@link AmuletException} of kind {@code NOT_FOUND} (no such
 * map), {@code FAILED_PRECONDITION} (the map is ordered: use {@link
 * ByteMap}; reason {@code not-eventual}), {@code UNAVAILABLE} (fewer than
 * {@code r} or {@code w} replicas answered within the cluster's 2 s: reason
 * {@code quorum-not-reached}; a write may still have taken effect at some
 * replicas, and then shows as a sibling later or is superseded like any
 * other write; or no node answered a read), {@code OUTCOME_UNKNOWN} (a
 * write's node failed before answering: it may have taken effect); {@link
 * IllegalArgumentException} for an invalid request ({@code r} or {@code
 * w} negative or above the replica count, a context that does not decode,
 * a key or value above the cluster's limits, a bad map name); {@link
 * NullPointerException} for a null key, value or context.
 */
public final class EventualMap {
  private final AmuletClient client;
  private final String name;

  EventualMap(AmuletClient client, String name) {
    this.client = client;
    this.name = name;
  }

  /** The map's name. */
  public String name() {
    return name;
  }

  /** The client. */
  public AmuletClient client() {
    return client;
  }

  @Override
  public String toString() {
    return "EventualMap(" + name + ")";
  }

  private static ByteString bs(byte[] b, String what) {
    return ByteString.copyFrom(Objects.requireNonNull(b, what));
  }

  private static int quorum(int n, String what) {
    if (n < 0) {
      throw new IllegalArgumentException(what + " is negative: " + n);
    }
    return n;
  }

  /** The values of {@code key} and their context, from a majority of its replicas. */
  public Versioned get(byte[] key) {
    return get(key, 0);
  }

  /**
   * The values of {@code key} and their context, merged from {@code r}
   * of its replicas (0: a majority). A key never written, or deleted, has
   * no values (its context still counts for a later write).
   */
  public Versioned get(byte[] key, int r) {
    EventualGetRequest request =
        EventualGetRequest.newBuilder()
            .setMap(name)
            .setKey(bs(key, "key"))
            .setR(quorum(r, "r"))
            .build();
    return Versioned.of(
        client.eventualRequests().send(name, false, stub -> stub.eventualGet(request)));
  }

  /** {@link #put(byte[], byte[], Context, int)} acknowledged by a majority. */
  public Versioned put(byte[] key, byte[] value, Context context) {
    return put(key, value, context, 0);
  }

  /**
   * Writes {@code value} to {@code key}, superseding the values {@code
   * context} covers (a read's, or an earlier write's; {@link
   * Context#EMPTY}: none, so it adds a sibling), acknowledged by {@code w}
   * of its replicas (0: a majority).
   *
   * @return the key's values at the replica that took the write, after
   *     it, and their context
   */
  public Versioned put(byte[] key, byte[] value, Context context, int w) {
    EventualPutRequest request =
        EventualPutRequest.newBuilder()
            .setMap(name)
            .setKey(bs(key, "key"))
            .setValue(bs(value, "value"))
            .setContext(Objects.requireNonNull(context, "context").toByteString())
            .setW(quorum(w, "w"))
            .build();
    return Versioned.of(
        client.eventualRequests().send(name, true, stub -> stub.eventualPut(request)));
  }

  /** {@link #delete(byte[], Context, int)} acknowledged by a majority. */
  public Versioned delete(byte[] key, Context context) {
    return delete(key, context, 0);
  }

  /**
   * Deletes the values of {@code key} that {@code context} covers (values
   * written concurrently stay), acknowledged by {@code w} of its replicas
   * (0: a majority). Leaves no tombstone.
   *
   * @return the key's values at the replica that took the delete, after it
   *     (empty if nothing concurrent was written), and their context
   */
  public Versioned delete(byte[] key, Context context, int w) {
    EventualDeleteRequest request =
        EventualDeleteRequest.newBuilder()
            .setMap(name)
            .setKey(bs(key, "key"))
            .setContext(Objects.requireNonNull(context, "context").toByteString())
            .setW(quorum(w, "w"))
            .build();
    return Versioned.of(
        client.eventualRequests().send(name, true, stub -> stub.eventualDelete(request)));
  }

  /** {@link #update(byte[], Function, int, int)} with majorities. */
  public Versioned update(byte[] key, Function<List<byte[]>, byte[]> fn) {
    return update(key, fn, 0, 0);
  }

  /**
   * Reads {@code key} from {@code r} replicas, computes the new value from
   * its values (siblings; empty if absent) with {@code fn}, and writes it
   * with the read's context, acknowledged by {@code w} replicas: the new
   * value supersedes every value {@code fn} saw (a write concurrent with
   * the update stays as a sibling). A null result deletes those values
   * instead. Two requests, not atomic; {@code fn} runs once.
   *
   * @return the write's (or delete's) reply
   */
  public Versioned update(byte[] key, Function<List<byte[]>, byte[]> fn, int r, int w) {
    Objects.requireNonNull(fn, "fn");
    Versioned read = get(key, r);
    byte[] value = fn.apply(read.values());
    return value == null ? delete(key, read.context(), w) : put(key, value, read.context(), w);
  }
}
