package io.amulet.client;

import java.io.File;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;

/**
 * Test certificates made with the {@code openssl} command, in the layout
 * of {@code amulet dev}: ECDSA P-256 keys as PKCS#8 PEM, {@code <name>.pem}
 * and {@code <name>.key} in a directory, CAs with basic constraints and
 * node and user certificates with the names and key usages the Rust node
 * gives them.
 */
final class TestCerts {
  private TestCerts() {}

  /** Whether the {@code openssl} command runs. */
  static boolean opensslAvailable() {
    try {
      Process p = new ProcessBuilder("openssl", "version").redirectErrorStream(true).start();
      p.getInputStream().readAllBytes();
      return p.waitFor(30, TimeUnit.SECONDS) && p.exitValue() == 0;
    } catch (IOException e) {
      return false;
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return false;
    }
  }

  /** A self-signed CA: {@code dir/<name>.pem} and {@code dir/<name>.key}. */
  static void ca(Path dir, String name) throws IOException {
    Files.createDirectories(dir);
    key(dir, name);
    Path config = dir.resolve(name + ".cnf");
    Files.write(
        config,
        List.of(
            "[req]",
            "distinguished_name = dn",
            "prompt = no",
            "[dn]",
            "CN = " + name,
            "[v3_ca]",
            "basicConstraints = critical,CA:TRUE",
            "keyUsage = critical,keyCertSign,cRLSign,digitalSignature",
            "subjectKeyIdentifier = hash"));
    run(dir, "openssl", "req", "-x509", "-new", "-config", config.toString(), "-extensions", "v3_ca",
        "-key", name + ".key", "-sha256", "-days", "2", "-out", name + ".pem");
  }

  /**
   * A node certificate signed by the CA {@code caDir/<caName>}: {@code
   * dir/<name>.pem} and {@code .key}, with the subject alternative names
   * {@code san} (openssl syntax, e.g. {@code DNS:amulet-node,IP:127.0.0.1}).
   */
  static void node(Path caDir, String caName, Path dir, String name, String san) throws IOException {
    leaf(caDir, caName, dir, name, name, san, "serverAuth,clientAuth");
  }

  /** A user certificate (CN and URI {@code urn:amulet:user:<user>}): {@code dir/<user>.pem}, {@code .key}. */
  static void user(Path caDir, String caName, Path dir, String user) throws IOException {
    leaf(caDir, caName, dir, user, user, "URI:urn:amulet:user:" + user, "clientAuth");
  }

  private static void leaf(
      Path caDir, String caName, Path dir, String name, String cn, String san, String usages)
      throws IOException {
    Files.createDirectories(dir);
    key(dir, name);
    Path config = dir.resolve(name + ".cnf");
    Files.write(
        config, List.of("[req]", "distinguished_name = dn", "prompt = no", "[dn]", "CN = " + cn));
    Path extensions = dir.resolve(name + ".ext");
    Files.write(
        extensions,
        List.of(
            "basicConstraints = CA:FALSE",
            "keyUsage = critical,digitalSignature",
            "extendedKeyUsage = " + usages,
            "subjectAltName = " + san));
    run(dir, "openssl", "req", "-new", "-config", config.toString(), "-key", name + ".key",
        "-out", name + ".csr");
    long serial = ThreadLocalRandom.current().nextLong(1, Long.MAX_VALUE);
    run(dir, "openssl", "x509", "-req", "-in", name + ".csr",
        "-CA", caDir.resolve(caName + ".pem").toString(),
        "-CAkey", caDir.resolve(caName + ".key").toString(),
        "-set_serial", Long.toString(serial), "-days", "2", "-sha256",
        "-extfile", extensions.toString(), "-out", name + ".pem");
  }

  /**
   * An EC P-256 key: SEC1 first ({@code <name>.sec1.key}, kept for tests of
   * keys that are not PKCS#8), converted to PKCS#8 ({@code <name>.key}).
   */
  private static void key(Path dir, String name) throws IOException {
    run(dir, "openssl", "ecparam", "-name", "prime256v1", "-genkey", "-noout",
        "-out", name + ".sec1.key");
    run(dir, "openssl", "pkcs8", "-topk8", "-nocrypt", "-in", name + ".sec1.key",
        "-out", name + ".key");
    String pem = Files.readString(dir.resolve(name + ".key"), StandardCharsets.US_ASCII);
    if (!pem.startsWith("-----BEGIN PRIVATE KEY-----")) {
      throw new IOException("openssl wrote no PKCS#8 key: " + pem);
    }
  }

  private static void run(Path dir, String... command) throws IOException {
    List<String> args = new ArrayList<>(List.of(command));
    Process p =
        new ProcessBuilder(args)
            .directory(dir.toFile())
            .redirectErrorStream(true)
            .redirectInput(ProcessBuilder.Redirect.from(new File("/dev/null")))
            .start();
    String output = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    try {
      if (!p.waitFor(60, TimeUnit.SECONDS)) {
        p.destroyForcibly();
        throw new IOException("timed out: " + args);
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      p.destroyForcibly();
      throw new IOException("interrupted: " + args);
    }
    if (p.exitValue() != 0) {
      throw new IOException(args + " exited with " + p.exitValue() + ": " + output);
    }
  }
}
