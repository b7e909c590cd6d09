package io.amulet.client;

import amulet.v1.AmuletGrpc;
import amulet.v1.AmuletOuterClass;
import io.grpc.Server;
import io.grpc.ServerInterceptor;
import io.grpc.ServerInterceptors;
import io.grpc.netty.shaded.io.grpc.netty.GrpcSslContexts;
import io.grpc.netty.shaded.io.grpc.netty.NettyServerBuilder;
import io.grpc.netty.shaded.io.netty.handler.ssl.ClientAuth;
import io.grpc.netty.shaded.io.netty.handler.ssl.SslContext;
import io.grpc.stub.StreamObserver;
import java.io.File;
import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.util.concurrent.TimeUnit;

/**
 * A node faked in the test's JVM: a gRPC server on 127.0.0.1 that answers
 * the partition map its test gives and opens every session; a test
 * overrides the calls it checks.
 */
abstract class FakeNodeServer extends AmuletGrpc.AmuletImplBase {
  Server server;
  String address;

  /** The partition map this node answers with. */
  abstract AmuletOuterClass.PartitionMap partitionMap();

  /** Starts the server on a free port of 127.0.0.1. */
  void start() throws IOException {
    start((SslContext) null);
  }

  /**
   * Starts the server on a free port of 127.0.0.1 over TLS as a node
   * serves it: presenting {@code cert} (with {@code key}, PKCS#8 PEM) and
   * requiring a client certificate issued by {@code ca}.
   */
  void startTls(File cert, File key, File ca) throws IOException {
    startTls(cert, key, ca, ClientAuth.REQUIRE);
  }

  /**
   * As {@link #startTls(File, File, File)}, asking for a client certificate
   * as {@code auth} says (a node takes a connection without one:
   * OPTIONAL, and then a bearer token), with {@code interceptors} on every
   * call.
   */
  void startTls(File cert, File key, File ca, ClientAuth auth, ServerInterceptor... interceptors)
      throws IOException {
    start(GrpcSslContexts.forServer(cert, key).trustManager(ca).clientAuth(auth).build(), interceptors);
  }

  /** Starts the server in plaintext with {@code interceptors} on every call. */
  void start(ServerInterceptor... interceptors) throws IOException {
    start(null, interceptors);
  }

  private void start(SslContext ssl, ServerInterceptor... interceptors) throws IOException {
    NettyServerBuilder b =
        NettyServerBuilder.forAddress(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0))
            .addService(ServerInterceptors.intercept(this, interceptors));
    if (ssl != null) {
      b.sslContext(ssl);
    }
    server = b.build().start();
    address = "127.0.0.1:" + server.getPort();
  }

  /** Stops the server and waits (5 s at most) for its calls to end. */
  void stop() throws InterruptedException {
    server.shutdownNow();
    server.awaitTermination(5, TimeUnit.SECONDS);
  }

  @Override
  public void getPartitionMap(
      AmuletOuterClass.GetPartitionMapRequest request,
      StreamObserver<AmuletOuterClass.PartitionMap> out) {
    out.onNext(partitionMap());
    out.onCompleted();
  }

  @Override
  public void openSession(
      AmuletOuterClass.OpenSessionRequest request,
      StreamObserver<AmuletOuterClass.SessionResponse> out) {
    out.onNext(AmuletOuterClass.SessionResponse.getDefaultInstance());
    out.onCompleted();
  }
}
