package io.amulet.testing;

import amulet.v1.AmuletOuterClass.StatusResponse;
import amulet.v1.AmuletOuterClass.StreamStatus;
import io.amulet.client.AmuletClient;
import io.amulet.client.ClientConfig;
import io.amulet.client.TlsFiles;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

/**
 * Three `amulet node` processes of a cluster of its own (3 partitions x 3
 * replicas, every node an acceptor of every stream, sync storage, a fresh
 * temp dir, base ports drawn from 24000-24990, apart from the shared
 * cluster's 21000-21990 and the Python tests' 22000-22990), started and stopped node by
 * node, for tests that stop and restart nodes (the shared {@link
 * DevCluster} stops as a whole when one of its nodes exits). The
 * configuration is `amulet dev`'s (local_dmap_cluster_toml in
 * crates/amulet-node/src/config.rs), with TLS as `amulet dev` has it: a
 * CA, node and {@code admin} certificates made by `amulet cert` in {@link
 * #tlsDir()}, the nodes requiring them of each other and of clients
 * ({@link #config()}). Each node stops when this JVM's end closes its
 * standard input (--stop-on-stdin-eof); {@link #close} stops them all.
 * Every wait is bounded.
 */
public final class NodeCluster implements AutoCloseable {
  private static final int PORT_LOW = 24000;
  private static final int PORT_HIGH = 24990;
  private static final int NODES = 3;
  private static final int PARTITIONS = 3;
  private static final Duration START_TIMEOUT = Duration.ofSeconds(60);

  private final Path binary;
  private final Path dir;
  private final List<String> addresses;
  private final Process[] processes = new Process[NODES];
  private final OutputStream[] stdins = new OutputStream[NODES];

  private NodeCluster(Path binary, Path dir, List<String> addresses) {
    this.binary = binary;
    this.dir = dir;
    this.addresses = addresses;
  }

  /** Writes the configurations and starts the three nodes; returns once they serve clients. */
  public static NodeCluster start() {
    Path binary = DevCluster.binary();
    String last = "";
    for (int tries = 0; tries < 8; tries++) {
      int base = PORT_LOW + 20 * ThreadLocalRandom.current().nextInt((PORT_HIGH - PORT_LOW - 20) / 20);
      boolean free = true;
      for (int i : new int[] {1, 2, 3, 11, 12, 13}) {
        free &= free(base + i);
      }
      if (!free) {
        continue;
      }
      Path dir;
      try {
        dir = Files.createTempDirectory("amulet-java-nodes-");
      } catch (IOException e) {
        throw new IllegalStateException(e);
      }
      List<String> addresses = new ArrayList<>();
      for (int i = 1; i <= NODES; i++) {
        addresses.add("127.0.0.1:" + (base + i));
      }
      NodeCluster cluster = new NodeCluster(binary, dir, addresses);
      try {
        cluster.makeCertificates();
        long id = 1 + ThreadLocalRandom.current().nextLong(1L << 40);
        for (int node = 1; node <= NODES; node++) {
          Files.write(
              cluster.config(node), cluster.configText(id, base, node).getBytes(StandardCharsets.UTF_8));
        }
        for (int node = 1; node <= NODES; node++) {
          cluster.startNode(node);
        }
        cluster.waitServing();
        return cluster;
      } catch (IOException | RuntimeException e) {
        last = e.toString();
        cluster.close();
      }
    }
    throw new IllegalStateException("could not start three amulet nodes: " + last);
  }

  /** Client API addresses of the three nodes (node 1 first). */
  public List<String> addresses() {
    return addresses;
  }

  /** The TLS directory: ca.pem, node-N.pem/.key, admin.pem/.key. */
  public Path tlsDir() {
    return dir.resolve("tls");
  }

  /** The configuration clients of this cluster start from: the user {@code admin}'s TLS files. */
  public ClientConfig config() {
    return ClientConfig.defaults().withTlsDir(tlsDir(), TlsFiles.DEFAULT_USER);
  }

  /** A client of this cluster with short timeouts. */
  public AmuletClient client(Duration operationTimeout) {
    return AmuletClient.connect(addresses, config().withOperationTimeout(operationTimeout));
  }

  /** The CA, the three nodes' certificates and admin's, by `amulet cert`. */
  private void makeCertificates() throws IOException {
    String tls = tlsDir().toString();
    cert("create-ca", "--dir", tls);
    for (int node = 1; node <= NODES; node++) {
      cert("create-node", "--dir", tls, "--node", Integer.toString(node));
    }
    cert("create-client", "--dir", tls, "--user", TlsFiles.DEFAULT_USER);
  }

  private void cert(String... args) throws IOException {
    List<String> command = new ArrayList<>(List.of(binary.toString(), "cert"));
    command.addAll(List.of(args));
    Process p =
        new ProcessBuilder(command)
            .redirectErrorStream(true)
            .redirectInput(ProcessBuilder.Redirect.from(new java.io.File("/dev/null")))
            .start();
    String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    try {
      if (!p.waitFor(30, TimeUnit.SECONDS)) {
        p.destroyForcibly();
        throw new IllegalStateException("amulet cert " + args[0] + " did not end");
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException("interrupted");
    }
    if (p.exitValue() != 0) {
      throw new IllegalStateException(
          String.join(" ", command) + " exited with " + p.exitValue() + ": " + out);
    }
  }

  private Path config(int node) {
    return dir.resolve("node-" + node + ".toml");
  }

  private String configText(long id, int base, int node) {
    StringBuilder b = new StringBuilder();
    b.append("cluster = ").append(id).append('\n');
    b.append("node = ").append(node).append('\n');
    b.append("listen = \"127.0.0.1:").append(base + 10 + node).append("\"\n");
    b.append("data_dir = \"").append(dir.resolve("node-" + node)).append("\"\n\n[peers]\n");
    for (int n = 1; n <= NODES; n++) {
      b.append(n).append(" = \"127.0.0.1:").append(base + 10 + n).append("\"\n");
    }
    for (int s = 1; s <= PARTITIONS + 1; s++) {
      b.append("\n[[streams]]\nid = ").append(s).append("\nacceptors = [1, 2, 3]\nstorage = \"sync\"\n");
    }
    b.append("\n[smr]\nglobal_stream = 1\n");
    for (int p = 1; p <= PARTITIONS; p++) {
      b.append("\n[[smr.partitions]]\nid = ")
          .append(p)
          .append("\nstream = ")
          .append(p + 1)
          .append("\nreplicas = [1, 2, 3]\n");
    }
    b.append("\n[smr.clients]\n");
    for (int n = 1; n <= NODES; n++) {
      b.append(n).append(" = \"127.0.0.1:").append(base + n).append("\"\n");
    }
    b.append("\n[tls]\ndir = \"").append(tlsDir()).append("\"\n");
    return b.toString();
  }

  /** Starts node {@code node} (1..3), again after a stop: same configuration and data. */
  public synchronized void startNode(int node) {
    if (processes[node - 1] != null && processes[node - 1].isAlive()) {
      throw new IllegalStateException("node " + node + " runs");
    }
    Path log = dir.resolve("node-" + node + ".log");
    ProcessBuilder pb =
        new ProcessBuilder(
                binary.toString(), "node", "--config", config(node).toString(),
                "--stop-on-stdin-eof", "--status-interval-ms", "60000")
            .redirectErrorStream(true)
            .redirectOutput(ProcessBuilder.Redirect.appendTo(log.toFile()));
    try {
      processes[node - 1] = pb.start();
    } catch (IOException e) {
      throw new IllegalStateException("cannot start " + binary, e);
    }
    stdins[node - 1] = processes[node - 1].getOutputStream();
  }

  /** Kills node {@code node} (SIGKILL: no goodbye to its clients) and waits for it to exit. */
  public synchronized void killNode(int node) {
    Process p = processes[node - 1];
    if (p == null) {
      return;
    }
    p.destroyForcibly();
    try {
      if (!p.waitFor(15, TimeUnit.SECONDS)) {
        throw new IllegalStateException("node " + node + " did not exit");
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException("interrupted");
    }
    closeQuietly(stdins[node - 1]);
    processes[node - 1] = null;
  }

  /**
   * Waits (bounded) until node {@code node} answers Status with every
   * acceptor voting and every stream decided as far as at another node
   * that runs was when the wait started.
   */
  public void waitCaughtUp(int node, Duration timeout) {
    long deadline = System.nanoTime() + timeout.toNanos();
    String last = "";
    try (AmuletClient c = client(Duration.ofSeconds(5))) {
      StatusResponse reference = null;
      for (int other = 1; other <= NODES && reference == null; other++) {
        if (other != node && processes[other - 1] != null) {
          reference = c.status(addresses.get(other - 1));
        }
      }
      while (System.nanoTime() < deadline) {
        checkAlive();
        try {
          StatusResponse s = c.status(addresses.get(node - 1));
          boolean ready = s.getStreamsCount() > 0;
          for (StreamStatus st : s.getStreamsList()) {
            ready &= st.getVoting();
            if (reference != null) {
              for (StreamStatus r : reference.getStreamsList()) {
                if (r.getStream() == st.getStream()) {
                  ready &= st.getDecidedBelow() >= r.getDecidedBelow();
                }
              }
            }
          }
          if (ready) {
            return;
          }
          last = s.toString().replace('\n', ' ');
        } catch (RuntimeException e) {
          last = e.toString();
        }
        sleep(100);
      }
    }
    throw new IllegalStateException(
        "node " + node + " not caught up in " + timeout + " (" + last + "): " + logTail(node));
  }

  private void waitServing() {
    long deadline = System.nanoTime() + START_TIMEOUT.toNanos();
    String error = "";
    while (System.nanoTime() < deadline) {
      checkAlive();
      try (AmuletClient c = client(Duration.ofSeconds(5))) {
        String probe = "probe-" + Long.toHexString(ThreadLocalRandom.current().nextLong());
        c.createLog(probe);
        c.dropLog(probe);
        for (int node = 1; node <= NODES; node++) {
          waitCaughtUp(node, Duration.ofSeconds(Math.max(1, (deadline - System.nanoTime()) / 1_000_000_000L)));
        }
        return;
      } catch (RuntimeException e) {
        error = e.toString();
      }
      sleep(200);
    }
    throw new IllegalStateException(
        "three amulet nodes not serving in " + START_TIMEOUT + " (" + error + "): " + logTail(1));
  }

  private void checkAlive() {
    for (int node = 1; node <= NODES; node++) {
      Process p = processes[node - 1];
      if (p != null && !p.isAlive()) {
        throw new IllegalStateException(
            "node " + node + " exited with " + p.exitValue() + ": " + logTail(node));
      }
    }
  }

  /** The end of node {@code node}'s log. */
  public String logTail(int node) {
    try {
      String s =
          new String(Files.readAllBytes(dir.resolve("node-" + node + ".log")), StandardCharsets.UTF_8);
      return s.length() > 2000 ? s.substring(s.length() - 2000) : s;
    } catch (IOException e) {
      return "";
    }
  }

  /** Stops every node (standard input closed, then SIGKILL of what is left) and removes the dir. */
  @Override
  public synchronized void close() {
    for (int node = 1; node <= NODES; node++) {
      closeQuietly(stdins[node - 1]);
    }
    for (int node = 1; node <= NODES; node++) {
      Process p = processes[node - 1];
      if (p == null) {
        continue;
      }
      try {
        if (!p.waitFor(10, TimeUnit.SECONDS)) {
          p.destroyForcibly();
          p.waitFor(10, TimeUnit.SECONDS);
        }
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        p.destroyForcibly();
      }
      processes[node - 1] = null;
    }
    try (Stream<Path> walk = Files.walk(dir)) {
      walk.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
    } catch (IOException e) {
      // Best effort.
    }
  }

  private static void closeQuietly(OutputStream s) {
    if (s != null) {
      try {
        s.close();
      } catch (IOException e) {
        // Gone already.
      }
    }
  }

  private static boolean free(int port) {
    try (ServerSocket s = new ServerSocket(port, 1, InetAddress.getByName("127.0.0.1"))) {
      return true;
    } catch (IOException e) {
      return false;
    }
  }

  private static void sleep(long millis) {
    try {
      Thread.sleep(millis);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException("interrupted");
    }
  }
}
