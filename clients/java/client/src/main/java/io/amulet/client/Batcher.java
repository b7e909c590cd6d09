package io.amulet.client;

import amulet.v1.AmuletGrpc;
import amulet.v1.AmuletOuterClass.Failure;
import amulet.v1.AmuletOuterClass.MapOutcome;
import amulet.v1.AmuletOuterClass.MapRequest;
import amulet.v1.AmuletOuterClass.MapRequestBatch;
import amulet.v1.AmuletOuterClass.MapResponse;
import amulet.v1.AmuletOuterClass.MapResponseBatch;
import io.grpc.ManagedChannel;
import io.grpc.Metadata;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.grpc.stub.StreamObserver;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

/**
 * Batching, as crates/amulet-client/src/batcher.rs: the operations that
 * threads sharing one client send to the same node at the same time go out
 * as one ExecuteBatch call. A batch leaves as soon as one of the node's
 * {@code inFlight} call slots is free, and whatever queued meanwhile rides
 * the next one, so a lone operation waits for nothing and a busy client
 * fills its batches by itself. Each request keeps its own session, sequence
 * and outcome, exactly as with Execute. A node without ExecuteBatch
 * (UNIMPLEMENTED) gets one Execute call per request from then on.
 */
final class Batcher {
  /** The node's limit on requests per batch. */
  static final int BATCH_REQUESTS_MAX = 1024;
  /** Bytes of requests per call, well under the node's request limit (16 MiB). */
  static final int BATCH_BYTES_MAX = 4 * 1024 * 1024;

  static final Metadata.Key<String> AMULET_ERROR =
      Metadata.Key.of("amulet-error", Metadata.ASCII_STRING_MARSHALLER);

  private static final class Pending {
    final MapRequest request;
    final CompletableFuture<MapResponse> outcome = new CompletableFuture<>();

    Pending(MapRequest request) {
      this.request = request;
    }
  }

  private final ManagedChannel channel;
  private final int inFlightMax;
  private final long callTimeoutMillis;
  private final ArrayDeque<Pending> queue = new ArrayDeque<>();
  private int inFlight;
  private volatile boolean unbatched;

  Batcher(ManagedChannel channel, int inFlightMax, long callTimeoutMillis) {
    this.channel = channel;
    this.inFlightMax = Math.max(1, inFlightMax);
    this.callTimeoutMillis = callTimeoutMillis;
  }

  /**
   * Sends {@code request} in the next batch to this node and waits at most
   * {@code timeoutMillis} for its outcome; failures are thrown as the
   * StatusRuntimeException Execute would have thrown.
   */
  MapResponse execute(MapRequest request, long timeoutMillis) {
    if (unbatched) {
      return AmuletGrpc.newBlockingStub(channel)
          .withDeadlineAfter(timeoutMillis, TimeUnit.MILLISECONDS)
          .execute(request);
    }
    Pending p = new Pending(request);
    List<Pending> batch;
    synchronized (this) {
      queue.add(p);
      batch = takeBatch();
    }
    if (batch != null) {
      send(batch);
    }
    try {
      return p.outcome.get(timeoutMillis, TimeUnit.MILLISECONDS);
    } catch (java.util.concurrent.TimeoutException e) {
      p.outcome.cancel(false);
      throw Status.DEADLINE_EXCEEDED
          .withDescription("no answer within the attempt timeout")
          .asRuntimeException();
    } catch (java.util.concurrent.ExecutionException e) {
      if (e.getCause() instanceof StatusRuntimeException) {
        StatusRuntimeException s = (StatusRuntimeException) e.getCause();
        // A fresh exception, so that the caller's stack shows here.
        throw new StatusRuntimeException(s.getStatus(), s.getTrailers());
      }
      throw Status.UNKNOWN.withCause(e.getCause()).asRuntimeException();
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw Status.CANCELLED.withDescription("interrupted").asRuntimeException();
    }
  }

  /** The next batch if a slot is free (under the lock), taking the slot. */
  private List<Pending> takeBatch() {
    if (inFlight >= inFlightMax || queue.isEmpty()) {
      return null;
    }
    List<Pending> batch = new ArrayList<>();
    int bytes = 0;
    while (!queue.isEmpty() && batch.size() < BATCH_REQUESTS_MAX && bytes < BATCH_BYTES_MAX) {
      Pending p = queue.poll();
      // A caller that gave up resends under the same sequence.
      if (p.outcome.isDone()) {
        continue;
      }
      bytes += p.request.getSerializedSize();
      batch.add(p);
    }
    if (batch.isEmpty()) {
      return null;
    }
    inFlight++;
    return batch;
  }

  private void send(List<Pending> batch) {
    MapRequestBatch.Builder b = MapRequestBatch.newBuilder();
    for (Pending p : batch) {
      b.addRequests(p.request);
    }
    AmuletGrpc.newStub(channel)
        .withDeadlineAfter(callTimeoutMillis, TimeUnit.MILLISECONDS)
        .executeBatch(
            b.build(),
            new StreamObserver<MapResponseBatch>() {
              private MapResponseBatch reply;

              @Override
              public void onNext(MapResponseBatch value) {
                reply = value;
              }

              @Override
              public void onError(Throwable t) {
                Status status = Status.fromThrowable(t);
                if (status.getCode() == Status.Code.UNIMPLEMENTED) {
                  // Nothing was executed; the callers resend one by one.
                  unbatched = true;
                  status = Status.UNAVAILABLE.withDescription("the node does not batch; resend");
                }
                failAll(batch, status.asRuntimeException());
                done();
              }

              @Override
              public void onCompleted() {
                if (reply == null || reply.getOutcomesCount() != batch.size()) {
                  failAll(
                      batch,
                      Status.UNKNOWN
                          .withDescription("a batch reply with the wrong number of outcomes")
                          .asRuntimeException());
                } else {
                  for (int i = 0; i < batch.size(); i++) {
                    complete(batch.get(i), reply.getOutcomes(i));
                  }
                }
                done();
              }
            });
  }

  private static void complete(Pending p, MapOutcome o) {
    if (o.getOutcomeCase() == MapOutcome.OutcomeCase.RESPONSE) {
      p.outcome.complete(o.getResponse());
      return;
    }
    Failure f = o.getFailure();
    Metadata trailers = new Metadata();
    if (!f.getError().isEmpty()) {
      trailers.put(AMULET_ERROR, f.getError());
    }
    p.outcome.completeExceptionally(
        new StatusRuntimeException(
            Status.fromCodeValue(f.getCode()).withDescription(f.getMessage()), trailers));
  }

  private static void failAll(List<Pending> batch, StatusRuntimeException e) {
    for (Pending p : batch) {
      p.outcome.completeExceptionally(e);
    }
  }

  /** Frees the slot and sends what queued meanwhile. */
  private void done() {
    List<Pending> next;
    synchronized (this) {
      inFlight--;
      next = takeBatch();
    }
    if (next != null) {
      send(next);
    }
  }
}
