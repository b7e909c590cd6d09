package io.amulet.client;

import io.grpc.CallOptions;
import io.grpc.Channel;
import io.grpc.ClientCall;
import io.grpc.ClientInterceptor;
import io.grpc.ForwardingClientCall;
import io.grpc.Metadata;
import io.grpc.MethodDescriptor;
import java.util.Objects;

/**
 * Adds {@code authorization: Bearer TOKEN} to the metadata of every call
 * (unary and streaming) of the channels it intercepts, as the Rust
 * client's {@code Bearer} interceptor (crates/amulet-client/src/node_channel.rs).
 * The node takes the token's user for a connection without a client
 * certificate. {@link #toString()} never shows the token.
 */
final class BearerToken implements ClientInterceptor {
  static final Metadata.Key<String> AUTHORIZATION =
      Metadata.Key.of("authorization", Metadata.ASCII_STRING_MARSHALLER);

  private final String value;

  /** {@code token}: {@code amt1.ID.SECRET}, already checked by {@link ClientConfig}. */
  BearerToken(String token) {
    this.value = "Bearer " + Objects.requireNonNull(token, "token");
  }

  @Override
  public <Q, R> ClientCall<Q, R> interceptCall(
      MethodDescriptor<Q, R> method, CallOptions options, Channel next) {
    return new ForwardingClientCall.SimpleForwardingClientCall<Q, R>(next.newCall(method, options)) {
      @Override
      public void start(Listener<R> listener, Metadata headers) {
        headers.discardAll(AUTHORIZATION);
        headers.put(AUTHORIZATION, value);
        super.start(listener, headers);
      }
    };
  }

  @Override
  public String toString() {
    return "BearerToken(<secret>)";
  }
}
