package io.amulet.client;

import static org.junit.Assert.assertTrue;

import amulet.v1.AmuletOuterClass;
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
import java.util.Collections;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.IntFunction;

/**
 * Applies {@link #plan} to every TailLog call of a client, by its number
 * (0, 1, ...); records where each went and the map version it carried,
 * counts the messages the client was handed, and counts the LogBounds
 * requests the client sent (Execute or ExecuteBatch).
 */
final class TailHook implements ClientInterceptor {
  static final Metadata.Key<String> AMULET_ERROR =
      Metadata.Key.of("amulet-error", Metadata.ASCII_STRING_MARSHALLER);
  final AtomicInteger calls = new AtomicInteger();
  final AtomicInteger delivered = new AtomicInteger();
  final AtomicInteger boundsReads = new AtomicInteger();
  final List<Channel> channels = Collections.synchronizedList(new ArrayList<>()); // each call's node
  final List<Long> mapVersions = Collections.synchronizedList(new ArrayList<>());
  volatile IntFunction<TailAction> plan = n -> TailAction.pass();

  @Override
  public <Q, R> ClientCall<Q, R> interceptCall(
      MethodDescriptor<Q, R> method, CallOptions options, Channel next) {
    if (!method.getFullMethodName().endsWith("/TailLog")) {
      return new ForwardingClientCall.SimpleForwardingClientCall<Q, R>(
          next.newCall(method, options)) {
        @Override
        public void sendMessage(Q message) {
          if (message instanceof AmuletOuterClass.MapRequest r && r.hasLogBounds()) {
            boundsReads.incrementAndGet();
          } else if (message instanceof AmuletOuterClass.MapRequestBatch b) {
            for (AmuletOuterClass.MapRequest r : b.getRequestsList()) {
              if (r.hasLogBounds()) {
                boundsReads.incrementAndGet();
              }
            }
          }
          super.sendMessage(message);
        }
      };
    }
    TailAction action = plan.apply(calls.getAndIncrement());
    channels.add(next); // not its authority: amulet-node for every node over TLS
    if (action.held != null) {
      action.held.countDown();
      try {
        assertTrue("released", action.release.await(20, TimeUnit.SECONDS));
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    }
    if (action.refusal != null) {
      return new ClientCall<Q, R>() {
        private Listener<R> listener;

        @Override
        public void start(Listener<R> l, Metadata headers) {
          listener = l;
        }

        @Override
        public void request(int n) {}

        @Override
        public void sendMessage(Q message) {
          mapVersions.add(((AmuletOuterClass.TailLogRequest) message).getMapVersion());
        }

        @Override
        public void halfClose() {
          Metadata trailers = new Metadata();
          if (action.kind != null) {
            trailers.put(AMULET_ERROR, action.kind);
          }
          listener.onClose(action.refusal, trailers);
        }

        @Override
        public void cancel(String message, Throwable cause) {}
      };
    }
    ClientCall<Q, R> call = next.newCall(method, options);
    return new ForwardingClientCall.SimpleForwardingClientCall<Q, R>(call) {
      private volatile boolean broken;
      private int withEntries;

      @Override
      public void sendMessage(Q message) {
        mapVersions.add(((AmuletOuterClass.TailLogRequest) message).getMapVersion());
        super.sendMessage(message);
      }

      @Override
      public void start(Listener<R> listener, Metadata headers) {
        super.start(
            new ForwardingClientCallListener.SimpleForwardingClientCallListener<R>(listener) {
              @Override
              public void onMessage(R message) {
                if (broken || action.swallow) {
                  return;
                }
                delivered.incrementAndGet();
                super.onMessage(message);
                if (((AmuletOuterClass.LogEntries) message).getEntriesCount() > 0
                    && ++withEntries == action.breakAfter) {
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
