package io.amulet.testing;

import io.amulet.client.AmuletClient;
import org.junit.AfterClass;
import org.junit.BeforeClass;

/**
 * The base of a test class whose tests share one client of the shared
 * {@link DevCluster} (started on first use, stopped when this JVM ends):
 * {@link #client} is connected before the class's first test ({@link
 * DevCluster#client()}: its short timeouts) and closed after its last, also
 * when a test or the connection failed.
 *
 * <p>A class that needs other client settings declares its own {@code
 * @BeforeClass public static void connect()} that sets {@link #client}:
 * it shadows this one (JUnit 4 then runs only the subclass's), and {@link
 * #close} still closes what it set. Clusters of a test's own ({@link
 * NodeCluster}) are the test's to close, in try-with-resources.
 *
 * <p>The field is static, for the class's tests and its static helpers:
 * the classes that extend this one share it, one class at a time (the
 * Surefire default; running test classes in parallel would need a client
 * of each class's own).
 */
public abstract class SharedClusterTest {
  /** The client of this class's tests; null outside them. */
  protected static AmuletClient client;

  /** Connects {@link #client} to the shared cluster, starting the cluster on first use. */
  @BeforeClass
  public static void connect() {
    client = DevCluster.get().client();
  }

  /** Closes {@link #client}, if it was connected. */
  @AfterClass
  public static void close() {
    if (client != null) {
      client.close();
      client = null;
    }
  }
}
