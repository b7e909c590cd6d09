package io.amulet.testing;

import io.amulet.client.AmuletClient;
import io.amulet.client.ClientConfig;
import io.amulet.client.TlsFiles;
import java.io.IOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

/**
 * One `amulet dev` cluster (3 partitions x 3 replicas, memory storage, a
 * fresh temp dir, base ports drawn from 21000-21990) shared by every test of
 * this JVM. Started on first use; stopped by a shutdown hook (SIGTERM, then
 * SIGKILL of the process and its descendants), and `--seconds` stops it
 * anyway if this JVM dies without running the hook. Every wait is bounded.
 *
 * <p>The cluster has TLS, as `amulet dev` makes it by default: its nodes
 * require a client certificate of its CA, and every test connects with
 * {@link #config()} (the user {@code admin} of {@link #tlsDir()}). A
 * binary without TLS is refused: the live tests are the client's tests
 * over TLS.
 */
public final class DevCluster {
  private static final int PORT_LOW = 21000;
  private static final int PORT_HIGH = 21990;
  private static final Duration START_TIMEOUT = Duration.ofSeconds(60);
  private static final long LIFETIME_SECONDS = 1800;

  private static DevCluster shared;
  private static Boolean binaryHasTls;

  private final Process process;
  private final Path dir;
  private final List<String> addresses;

  private DevCluster(Process process, Path dir, List<String> addresses) {
    this.process = process;
    this.dir = dir;
    this.addresses = addresses;
  }

  /**
   * The shared cluster, with TLS, started on first use.
   *
   * @throws IllegalStateException if the binary has no TLS ({@link #binaryHasTls()})
   */
  public static synchronized DevCluster get() {
    if (shared == null) {
      if (!binaryHasTls()) {
        throw new IllegalStateException(
            binary() + " has no TLS (its `amulet dev` has no --insecure): rebuild it"
                + " (cargo build --release -p amulet) or set AMULET_BIN to one with TLS");
      }
      shared = start();
      DevCluster c = shared;
      Runtime.getRuntime().addShutdownHook(new Thread(c::stop, "amulet-dev-stop"));
    }
    return shared;
  }

  /** Whether the binary's `amulet dev` has TLS (and so requires it unless `--insecure`). */
  public static synchronized boolean binaryHasTls() {
    if (binaryHasTls == null) {
      Path binary = binary();
      try {
        Process p =
            new ProcessBuilder(binary.toString(), "dev", "--help")
                .redirectErrorStream(true)
                .redirectInput(ProcessBuilder.Redirect.from(new java.io.File("/dev/null")))
                .start();
        String help = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        if (!p.waitFor(30, TimeUnit.SECONDS)) {
          p.destroyForcibly();
          throw new IllegalStateException(binary + " dev --help did not end");
        }
        binaryHasTls = help.contains("--insecure");
      } catch (IOException e) {
        throw new IllegalStateException("cannot run " + binary, e);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new IllegalStateException("interrupted");
      }
    }
    return binaryHasTls;
  }

  /** The cluster's TLS directory, made by `amulet dev`: ca.pem, admin.pem, admin.key, node-N.pem/.key. */
  public Path tlsDir() {
    return dir.resolve("cluster").resolve("tls");
  }

  /**
   * The configuration every client of this cluster starts from: the
   * defaults with the user {@code admin}'s TLS files ({@link #tlsDir()}),
   * whatever {@code AMULET_TLS_DIR} says.
   */
  public ClientConfig config() {
    return ClientConfig.defaults().withTlsDir(tlsDir(), TlsFiles.DEFAULT_USER);
  }

  /**
   * The configuration of the user {@code user} of {@link #tlsDir()}, its
   * certificate made by {@code amulet cert create-client} from the
   * cluster's CA on first use. The user has no role until the admin gives
   * it one ({@link AmuletClient#assignRole}).
   */
  public synchronized ClientConfig userConfig(String user) {
    Path dir = tlsDir();
    if (!Files.exists(dir.resolve(user + ".pem"))) {
      runAmulet("cert", "create-client", "--dir", dir.toString(), "--user", user);
    }
    return ClientConfig.defaults().withTlsDir(dir, user);
  }

  /** Runs the amulet binary with {@code args}; throws if it fails. */
  private static void runAmulet(String... args) {
    List<String> command = new ArrayList<>(List.of(binary().toString()));
    command.addAll(List.of(args));
    try {
      Process p =
          new ProcessBuilder(command)
              .redirectErrorStream(true)
              .redirectInput(ProcessBuilder.Redirect.from(new java.io.File("/dev/null")))
              .start();
      String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
      if (!p.waitFor(30, TimeUnit.SECONDS)) {
        p.destroyForcibly();
        throw new IllegalStateException(String.join(" ", command) + " did not end");
      }
      if (p.exitValue() != 0) {
        throw new IllegalStateException(
            String.join(" ", command) + " exited with " + p.exitValue() + ": " + out);
      }
    } catch (IOException e) {
      throw new IllegalStateException("cannot run " + String.join(" ", command), e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException("interrupted");
    }
  }

  /** Client API addresses of the three nodes. */
  public List<String> addresses() {
    return addresses;
  }

  /** A client with short timeouts, for tests. */
  public AmuletClient client() {
    return AmuletClient.connect(
        addresses,
        config()
            .withOperationTimeout(Duration.ofSeconds(20))
            .withSnapshotLease(Duration.ofSeconds(60)));
  }

  /** The amulet binary: $AMULET_BIN, else target/release/amulet of the repository. */
  public static Path binary() {
    String env = System.getenv("AMULET_BIN");
    Path p = env != null && !env.isEmpty() ? Paths.get(env) : repo().resolve("target/release/amulet");
    if (!Files.isExecutable(p)) {
      throw new IllegalStateException(
          "no amulet binary at " + p + ": build it (cargo build --release -p amulet) or set AMULET_BIN");
    }
    return p;
  }

  /** The repository root. */
  public static Path repo() {
    String repo = System.getProperty("amulet.repo");
    if (repo != null) {
      return Paths.get(repo).toAbsolutePath().normalize();
    }
    Path p = Paths.get("").toAbsolutePath();
    while (p != null && !Files.exists(p.resolve("spec/tuple-vectors.json"))) {
      p = p.getParent();
    }
    if (p == null) {
      throw new IllegalStateException("cannot find the repository");
    }
    return p;
  }

  private static boolean free(int port) {
    try (ServerSocket s = new ServerSocket(port, 1, InetAddress.getByName("127.0.0.1"))) {
      return true;
    } catch (IOException e) {
      return false;
    }
  }

  private static DevCluster start() {
    Path binary = binary();
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
        dir = Files.createTempDirectory("amulet-java-");
      } catch (IOException e) {
        throw new IllegalStateException(e);
      }
      // No --insecure: TLS, its files in <dir>/cluster/tls.
      ProcessBuilder pb =
          new ProcessBuilder(
                  binary.toString(), "dev", "--dir", dir.resolve("cluster").toString(),
                  "--base-port", Integer.toString(base), "--storage", "memory",
                  "--seconds", Long.toString(LIFETIME_SECONDS))
              .redirectErrorStream(true)
              .redirectOutput(dir.resolve("dev.log").toFile())
              .redirectInput(ProcessBuilder.Redirect.from(new java.io.File("/dev/null")));
      Process process;
      try {
        process = pb.start();
      } catch (IOException e) {
        throw new IllegalStateException("cannot start " + binary, e);
      }
      List<String> addresses = new ArrayList<>();
      for (int i = 1; i <= 3; i++) {
        addresses.add("127.0.0.1:" + (base + i));
      }
      DevCluster cluster = new DevCluster(process, dir, addresses);
      try {
        cluster.waitReady();
        return cluster;
      } catch (RuntimeException e) {
        last = e.getMessage();
        cluster.stop();
      }
    }
    throw new IllegalStateException("could not start an amulet dev cluster: " + last);
  }

  private void waitReady() {
    long deadline = System.nanoTime() + START_TIMEOUT.toNanos();
    String error = "";
    while (System.nanoTime() < deadline) {
      if (!process.isAlive()) {
        throw new IllegalStateException(
            "amulet dev exited with " + process.exitValue() + ": " + tail(log()));
      }
      if (log().contains("serving clients")) {
        try (AmuletClient c =
            AmuletClient.connect(
                addresses, config().withOperationTimeout(Duration.ofSeconds(5)))) {
          c.byteMap("default").size();
          return;
        } catch (RuntimeException e) {
          error = e.toString();
        }
      }
      try {
        Thread.sleep(200);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new IllegalStateException("interrupted");
      }
    }
    throw new IllegalStateException(
        "amulet dev not ready in " + START_TIMEOUT + " (" + error + "): " + tail(log()));
  }

  private static String tail(String s) {
    return s.length() > 2000 ? s.substring(s.length() - 2000) : s;
  }

  /** The cluster's log so far. */
  public String log() {
    try {
      return new String(Files.readAllBytes(dir.resolve("dev.log")), StandardCharsets.UTF_8);
    } catch (IOException e) {
      return "";
    }
  }

  /** Stops the cluster (SIGTERM, then SIGKILL of everything left) and removes its directory. */
  public void stop() {
    List<ProcessHandle> children = new ArrayList<>();
    process.descendants().forEach(children::add);
    process.destroy();
    try {
      process.waitFor(15, TimeUnit.SECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
    process.descendants().forEach(children::add);
    for (ProcessHandle h : children) {
      h.destroyForcibly();
    }
    process.destroyForcibly();
    try {
      process.waitFor(15, TimeUnit.SECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
    try (Stream<Path> walk = Files.walk(dir)) {
      walk.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
    } catch (IOException e) {
      // Best effort.
    }
  }
}
