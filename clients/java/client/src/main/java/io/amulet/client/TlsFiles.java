package io.amulet.client;

import io.grpc.netty.shaded.io.grpc.netty.GrpcSslContexts;
import io.grpc.netty.shaded.io.netty.handler.ssl.SslContext;
import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.AccessDeniedException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.security.GeneralSecurityException;
import java.security.KeyFactory;
import java.security.PrivateKey;
import java.security.Signature;
import java.security.cert.CertificateException;
import java.security.cert.CertificateFactory;
import java.security.cert.X509Certificate;
import java.security.spec.PKCS8EncodedKeySpec;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import java.util.Objects;
import java.util.function.Function;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import javax.net.ssl.SSLException;

/**
 * The PEM files a client connects over TLS with (mutual authentication, as
 * the Rust node and clients do): the cluster CA's certificate, the only
 * one trusted (not the JDK's trust store); the user's certificate chain
 * (leaf first), presented to the node; and its private key (PKCS#8, {@code
 * -----BEGIN PRIVATE KEY-----}; {@code amulet dev} and {@code amulet cert}
 * write ECDSA P-256 keys). The node's certificate must name the DNS name
 * {@value #NODE_SERVER_NAME}, whatever address it is reached at.
 *
 * <p>A client authenticated by a bearer token ({@link
 * ClientConfig#withToken}) presents no certificate: its files are the CA's
 * only ({@link #caOnly}, {@link #hasCertificate()} false).
 *
 * <p>A TLS directory holds {@code ca.pem} and, for each user, {@code
 * <user>.pem} and {@code <user>.key} ({@link #inDir}). Immutable.
 */
public final class TlsFiles {
  /** Environment variable naming the TLS directory of a client given no TLS configuration. */
  public static final String TLS_DIR_ENV = "AMULET_TLS_DIR";
  /** Environment variable naming the user of {@link #TLS_DIR_ENV} (default {@value #DEFAULT_USER}). */
  public static final String USER_ENV = "AMULET_USER";
  /** The user {@code amulet dev} creates. */
  public static final String DEFAULT_USER = "admin";
  /** The DNS name every node certificate carries; the client verifies it. */
  public static final String NODE_SERVER_NAME = "amulet-node";

  private static final Pattern USER = Pattern.compile("[A-Za-z0-9_.-]{1,64}");
  private static final Pattern PEM =
      Pattern.compile("-----BEGIN ([A-Z0-9 ]+)-----([A-Za-z0-9+/=\\s]*)-----END \\1-----");

  private final Path ca;
  /** Null for {@link #caOnly} (as {@link #key}). */
  private final Path cert;
  private final Path key;

  private TlsFiles(Path ca, Path cert, Path key) {
    this.ca = Objects.requireNonNull(ca, "ca");
    this.cert = Objects.requireNonNull(cert, "cert");
    this.key = Objects.requireNonNull(key, "key");
  }

  /** The CA alone: no certificate of the client's own. */
  private TlsFiles(Path ca) {
    this.ca = Objects.requireNonNull(ca, "ca");
    this.cert = null;
    this.key = null;
  }

  /**
   * Only the CA certificate(s) of {@code ca}, trusted as by {@link #of}; no
   * certificate is presented (a client with a bearer token, {@link
   * ClientConfig#withToken}).
   *
   * @throws IllegalArgumentException if the file is missing or unreadable
   */
  public static TlsFiles caOnly(Path ca) {
    TlsFiles files = new TlsFiles(ca);
    files.checkReadable();
    return files;
  }

  /** {@link #caOnly} unchecked ({@link #sslContext} names a missing file). */
  static TlsFiles caOnlyUnchecked(Path ca) {
    return new TlsFiles(ca);
  }

  /**
   * The files given.
   *
   * @throws IllegalArgumentException naming the first file that is missing or unreadable
   */
  public static TlsFiles of(Path ca, Path cert, Path key) {
    TlsFiles files = new TlsFiles(ca, cert, key);
    files.checkReadable();
    return files;
  }

  /**
   * {@code dir/ca.pem}, {@code dir/<user>.pem} and {@code dir/<user>.key}.
   *
   * @throws IllegalArgumentException for a bad user name (1 to 64 ASCII letters,
   *     digits, '_', '-' or '.'), or naming the first file that is missing or unreadable
   */
  public static TlsFiles inDir(Path dir, String user) {
    TlsFiles files = unchecked(dir, user);
    files.checkReadable();
    return files;
  }

  private static TlsFiles unchecked(Path dir, String user) {
    Objects.requireNonNull(dir, "dir");
    if (!Files.isDirectory(dir)) {
      throw new IllegalArgumentException(
          "TLS directory " + dir + " does not exist or is not a directory");
    }
    if (user == null || !USER.matcher(user).matches()) {
      throw new IllegalArgumentException(
          "bad TLS user name " + user + ": use 1 to 64 ASCII letters, digits, '_', '-' or '.'");
    }
    return new TlsFiles(dir.resolve("ca.pem"), dir.resolve(user + ".pem"), dir.resolve(user + ".key"));
  }

  /**
   * The files {@code AMULET_TLS_DIR} and {@code AMULET_USER} of {@code env}
   * name (unchecked: {@link #sslContext} names a missing one), or null when
   * {@code AMULET_TLS_DIR} is unset or empty.
   */
  static TlsFiles fromEnv(Function<String, String> env) {
    String dir = env.apply(TLS_DIR_ENV);
    if (dir == null || dir.isEmpty()) {
      return null;
    }
    String user = env.apply(USER_ENV);
    return unchecked(Paths.get(dir), user == null || user.isEmpty() ? DEFAULT_USER : user);
  }

  /**
   * The CA alone of the TLS directory {@code AMULET_TLS_DIR} of {@code env}
   * ({@code ca.pem}, unchecked), for a client with a bearer token; null when
   * that variable is unset or empty.
   */
  static TlsFiles caFromEnv(Function<String, String> env) {
    String dir = env.apply(TLS_DIR_ENV);
    if (dir == null || dir.isEmpty()) {
      return null;
    }
    Path d = Paths.get(dir);
    if (!Files.isDirectory(d)) {
      throw new IllegalArgumentException(
          "TLS directory " + d + " does not exist or is not a directory");
    }
    return caOnlyUnchecked(d.resolve("ca.pem"));
  }

  /** The CA certificate(s), the only roots trusted. */
  public Path ca() {
    return ca;
  }

  /** The certificate chain presented, leaf first; null for {@link #caOnly}. */
  public Path cert() {
    return cert;
  }

  /** The private key of the leaf (PKCS#8 PEM); null for {@link #caOnly}. */
  public Path key() {
    return key;
  }

  /** Whether a certificate of the client's own is presented (false for {@link #caOnly}). */
  public boolean hasCertificate() {
    return cert != null;
  }

  /** Throws an {@link IllegalArgumentException} naming the first file missing or unreadable. */
  void checkReadable() {
    check(ca, "CA certificate");
    if (cert != null) {
      check(cert, "certificate");
      check(key, "private key");
    }
  }

  private static void check(Path p, String what) {
    if (!Files.exists(p)) {
      throw new IllegalArgumentException("TLS " + what + " " + p + ": no such file");
    }
    if (!Files.isRegularFile(p)) {
      throw new IllegalArgumentException("TLS " + what + " " + p + ": not a file");
    }
    if (!Files.isReadable(p)) {
      throw new IllegalArgumentException("TLS " + what + " " + p + ": not readable");
    }
  }

  /**
   * The client's TLS context: trusts only the CA certificate(s), presents
   * the certificate chain with its key (none for {@link #caOnly}), speaks
   * HTTP/2 (ALPN h2).
   *
   * @throws IllegalArgumentException naming the file that is missing,
   *     unreadable or unusable (no PEM certificate, a key that is not
   *     PKCS#8 or does not match the certificate)
   */
  SslContext sslContext() {
    checkReadable();
    List<X509Certificate> roots = certificates(ca, "CA certificate");
    if (cert == null) {
      try {
        return GrpcSslContexts.forClient().trustManager(roots.toArray(new X509Certificate[0])).build();
      } catch (SSLException | RuntimeException e) {
        throw new IllegalArgumentException(
            "TLS CA certificate " + ca + ": unusable: " + e.getMessage(), e);
      }
    }
    List<X509Certificate> chain = certificates(cert, "certificate");
    PrivateKey privateKey = privateKey(chain.get(0));
    try {
      return GrpcSslContexts.forClient()
          .trustManager(roots.toArray(new X509Certificate[0]))
          .keyManager(privateKey, chain.toArray(new X509Certificate[0]))
          .build();
    } catch (SSLException | RuntimeException e) {
      throw new IllegalArgumentException(
          "TLS files " + ca + ", " + cert + ", " + key + ": unusable: " + e.getMessage(), e);
    }
  }

  private static byte[] read(Path p, String what) {
    try {
      return Files.readAllBytes(p);
    } catch (NoSuchFileException e) {
      throw new IllegalArgumentException("TLS " + what + " " + p + ": no such file", e);
    } catch (AccessDeniedException e) {
      throw new IllegalArgumentException("TLS " + what + " " + p + ": not readable", e);
    } catch (IOException e) {
      throw new IllegalArgumentException("TLS " + what + " " + p + ": " + e, e);
    }
  }

  /** The PEM blocks of a file: label, DER. */
  private static List<Object[]> pemBlocks(Path p, String what) {
    String text = new String(read(p, what), StandardCharsets.US_ASCII);
    List<Object[]> out = new ArrayList<>();
    Matcher m = PEM.matcher(text);
    while (m.find()) {
      byte[] der;
      try {
        der = Base64.getMimeDecoder().decode(m.group(2));
      } catch (IllegalArgumentException e) {
        throw new IllegalArgumentException(
            "TLS " + what + " " + p + ": bad base64 in its " + m.group(1) + ": " + e.getMessage(), e);
      }
      out.add(new Object[] {m.group(1), der});
    }
    return out;
  }

  private static List<X509Certificate> certificates(Path p, String what) {
    List<X509Certificate> out = new ArrayList<>();
    try {
      CertificateFactory factory = CertificateFactory.getInstance("X.509");
      for (Object[] block : pemBlocks(p, what)) {
        if ("CERTIFICATE".equals(block[0])) {
          out.add(
              (X509Certificate) factory.generateCertificate(new ByteArrayInputStream((byte[]) block[1])));
        }
      }
    } catch (CertificateException e) {
      throw new IllegalArgumentException(
          "TLS " + what + " " + p + ": not a valid X.509 certificate: " + e.getMessage(), e);
    }
    if (out.isEmpty()) {
      throw new IllegalArgumentException(
          "TLS " + what + " " + p + ": holds no PEM certificate (-----BEGIN CERTIFICATE-----)");
    }
    return out;
  }

  /** The PKCS#8 key of {@link #key}, checked against the leaf's public key. */
  private PrivateKey privateKey(X509Certificate leaf) {
    String what = "private key";
    byte[] der = null;
    for (Object[] block : pemBlocks(key, what)) {
      String label = (String) block[0];
      if (label.equals("PRIVATE KEY")) {
        der = (byte[]) block[1];
        break;
      }
      if (label.endsWith("PRIVATE KEY")) {
        throw new IllegalArgumentException(
            "TLS " + what + " " + key + ": a " + label + ", not an unencrypted PKCS#8 PRIVATE KEY;"
                + " convert it with: openssl pkcs8 -topk8 -nocrypt -in " + key);
      }
    }
    if (der == null) {
      throw new IllegalArgumentException(
          "TLS " + what + " " + key + ": holds no PEM PKCS#8 key (-----BEGIN PRIVATE KEY-----)");
    }
    String algorithm = leaf.getPublicKey().getAlgorithm();
    PrivateKey k;
    try {
      k = KeyFactory.getInstance(algorithm).generatePrivate(new PKCS8EncodedKeySpec(der));
    } catch (GeneralSecurityException e) {
      throw new IllegalArgumentException(
          "TLS " + what + " " + key + ": not a PKCS#8 " + algorithm + " key (the algorithm of "
              + cert + "): " + e.getMessage(), e);
    }
    String signature = signatureAlgorithm(algorithm);
    if (signature != null && !matches(k, leaf, signature)) {
      throw new IllegalArgumentException(
          "TLS " + what + " " + key + " is not the key of the certificate " + cert);
    }
    return k;
  }

  private static String signatureAlgorithm(String keyAlgorithm) {
    switch (keyAlgorithm) {
      case "EC":
        return "SHA256withECDSA";
      case "RSA":
        return "SHA256withRSA";
      case "Ed25519":
      case "EdDSA":
        return "Ed25519";
      default:
        return null;
    }
  }

  /** Whether {@code k} signs what the leaf's public key verifies. */
  private static boolean matches(PrivateKey k, X509Certificate leaf, String algorithm) {
    byte[] probe = "amulet tls key check".getBytes(StandardCharsets.US_ASCII);
    try {
      Signature s = Signature.getInstance(algorithm);
      s.initSign(k);
      s.update(probe);
      byte[] signed = s.sign();
      Signature v = Signature.getInstance(algorithm);
      v.initVerify(leaf.getPublicKey());
      v.update(probe);
      return v.verify(signed);
    } catch (GeneralSecurityException e) {
      return false;
    }
  }

  /**
   * What went wrong with TLS when a call failed with {@code error} (its
   * causes searched), or null when nothing says TLS.
   */
  static String failure(Throwable error) {
    Throwable t = error;
    while (t != null && !(t instanceof SSLException || t instanceof CertificateException)) {
      t = t.getCause() == t ? null : t.getCause();
    }
    if (t == null) {
      return null;
    }
    // The first TLS exception and its causes: the deepest usually says why
    // ("No subject alternative DNS name matching amulet-node found").
    StringBuilder out = new StringBuilder("TLS handshake failed: ");
    List<String> seen = new ArrayList<>();
    for (int depth = 0; t != null && depth < 8; depth++) {
      String message = t.getMessage();
      String m = t.getClass().getSimpleName() + ": " + message;
      if (message != null && seen.stream().noneMatch(x -> x.contains(message))) {
        if (!seen.isEmpty()) {
          out.append(", caused by ");
        }
        out.append(m);
        seen.add(m);
      }
      t = t.getCause() == t ? null : t.getCause();
    }
    return out.toString();
  }

  /**
   * Whether a plaintext call that failed with {@code error} met a node
   * answering in TLS: gRPC saw, instead of HTTP/2 SETTINGS, a TLS record
   * (an alert, 0x15 0x03, or a handshake, 0x16 0x03: a rustls node alerts
   * a plaintext client).
   */
  static boolean answeredInTls(Throwable error) {
    for (Throwable t = error; t != null; t = t.getCause() == t ? null : t.getCause()) {
      String m = t.getMessage();
      if (m != null) {
        String lower = m.toLowerCase(java.util.Locale.ROOT);
        int dump = lower.indexOf("hex dump for first 5 bytes: ");
        if (dump >= 0) {
          String bytes = lower.substring(dump + "hex dump for first 5 bytes: ".length());
          return bytes.startsWith("1503") || bytes.startsWith("1603");
        }
      }
    }
    return false;
  }

  @Override
  public boolean equals(Object o) {
    if (!(o instanceof TlsFiles)) {
      return false;
    }
    TlsFiles f = (TlsFiles) o;
    return ca.equals(f.ca) && Objects.equals(cert, f.cert) && Objects.equals(key, f.key);
  }

  @Override
  public int hashCode() {
    return Objects.hash(ca, cert, key);
  }

  @Override
  public String toString() {
    if (cert == null) {
      return "TlsFiles{ca=" + ca + ", no certificate}";
    }
    return "TlsFiles{ca=" + ca + ", cert=" + cert + ", key=" + key + "}";
  }

  /**
   * What a connect that found no seed adds to its message, {@code last}
   * its last failure, {@code tls} the files it connects with (null:
   * plaintext): with TLS, what the client trusts and presents; in
   * plaintext, unless the connection was refused (a node serving TLS
   * closes a plaintext connection), that the nodes may want TLS.
   */
  static String connectHint(TlsFiles tls, String last) {
    if (tls == null) {
      if (last.toLowerCase(java.util.Locale.ROOT).contains("connection refused")) {
        return "";
      }
      return "; the client connects in plaintext: if the nodes serve TLS, use ClientConfig.withTls,"
          + " withTlsDir or set " + TLS_DIR_ENV;
    }
    String presents =
        tls.hasCertificate() ? "presents " + tls.cert() : "presents no certificate (a bearer token)";
    return "; over TLS: the client trusts only the CA of " + tls.ca() + ", " + presents
        + ", and needs node certificates naming " + NODE_SERVER_NAME
        + ": check that the nodes serve TLS with certificates of that CA and trust the CA of the"
        + " client's certificate";
  }
}
