package io.amulet.map;

import static org.junit.Assert.assertTrue;

import com.google.common.collect.testing.testers.CollectionIteratorTester;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.lang.reflect.Method;
import java.util.ArrayList;
import java.util.Enumeration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import junit.framework.AssertionFailedError;
import junit.framework.Test;
import junit.framework.TestCase;
import junit.framework.TestListener;
import junit.framework.TestResult;
import junit.framework.TestSuite;

/**
 * Runs a Guava testlib suite on many threads (nearly all of a test's time is
 * waiting for the cluster), collecting failures and reporting them together
 * by name. Shared by {@link AmuletMapGuavaTest} and {@link
 * TransactionMapGuavaTest}.
 */
final class GuavaSuites {
  private GuavaSuites() {}

  /**
   * Nothing is suppressed by default. {@code -Damulet.guava.quick=true}
   * skips Guava's two exhaustive iterator testers (every sequence of five
   * hasNext / next / remove calls, each on a newly created collection),
   * which take most of a suite's time, for quick local runs; what they
   * check is also covered by the testIteratorRemove_* testers.
   */
  static List<Method> suppressed() {
    if (!Boolean.getBoolean("amulet.guava.quick")) {
      return new ArrayList<>();
    }
    return exhaustiveIteratorTesters();
  }

  /** Guava's two exhaustive iterator testers (see {@link #suppressed()}). */
  static List<Method> exhaustiveIteratorTesters() {
    List<Method> out = new ArrayList<>();
    try {
      out.add(CollectionIteratorTester.class.getMethod("testIterator_knownOrderRemoveSupported"));
      out.add(
          CollectionIteratorTester.class.getMethod("testIterator_unknownOrderRemoveSupported"));
    } catch (NoSuchMethodException e) {
      throw new IllegalStateException(e);
    }
    return out;
  }

  static void flatten(Test t, List<TestCase> out) {
    if (t instanceof TestCase) {
      out.add((TestCase) t);
    } else if (t instanceof TestSuite) {
      for (Enumeration<Test> e = ((TestSuite) t).tests(); e.hasMoreElements(); ) {
        flatten(e.nextElement(), out);
      }
    } else {
      throw new IllegalStateException("unexpected test " + t);
    }
  }

  /**
   * Runs every test of {@code suite} on {@code threads} threads, {@code
   * beforeEach} and {@code afterEach} around each on its thread (not every
   * derived suite runs the builder's setUp and tearDown); throws an
   * AssertionError naming the failures. Bounded: 30 minutes in all.
   */
  static void run(
      String label, TestSuite suite, int threads, Runnable beforeEach, Runnable afterEach)
      throws InterruptedException {
    List<TestCase> tests = new ArrayList<>();
    flatten(suite, tests);
    ConcurrentLinkedQueue<String> failures = new ConcurrentLinkedQueue<>();
    AtomicInteger run = new AtomicInteger();
    long start = System.nanoTime();
    ExecutorService pool = Executors.newFixedThreadPool(threads);
    try {
      for (TestCase test : tests) {
        pool.submit(
            () -> {
              TestResult result = new TestResult();
              result.addListener(
                  new TestListener() {
                    @Override
                    public void addError(Test t, Throwable e) {
                      failures.add(describe(t, e));
                    }

                    @Override
                    public void addFailure(Test t, AssertionFailedError e) {
                      failures.add(describe(t, e));
                    }

                    @Override
                    public void endTest(Test t) {}

                    @Override
                    public void startTest(Test t) {}
                  });
              beforeEach.run();
              try {
                test.run(result);
              } finally {
                afterEach.run();
              }
              int n = run.incrementAndGet();
              if (n % 5000 == 0) {
                System.out.printf(
                    "%s: %d of %d tests run, %d failed, %.0f s%n",
                    label, n, tests.size(), failures.size(), (System.nanoTime() - start) / 1e9);
              }
            });
      }
      pool.shutdown();
      assertTrue("the suite did not finish in time", pool.awaitTermination(30, TimeUnit.MINUTES));
    } finally {
      pool.shutdownNow();
    }
    double seconds = (System.nanoTime() - start) / 1e9;
    System.out.printf(
        "%s: %d tests run in %.1f s on %d threads, %d failed%n",
        label, run.get(), seconds, threads, failures.size());
    if (!failures.isEmpty()) {
      Map<String, Integer> byMethod = new java.util.TreeMap<>();
      for (String f : failures) {
        byMethod.merge(f.substring(0, Math.max(0, f.indexOf('['))), 1, Integer::sum);
      }
      StringBuilder s =
          new StringBuilder(
              failures.size() + " of " + tests.size() + " failed, by test: " + byMethod + "\n");
      int shown = 0;
      for (String f : failures) {
        if (shown++ == 60) {
          s.append("...\n");
          break;
        }
        s.append(f).append('\n');
      }
      throw new AssertionError(s.toString());
    }
  }

  static String describe(Test t, Throwable e) {
    StringWriter w = new StringWriter();
    e.printStackTrace(new PrintWriter(w));
    String trace = w.toString();
    String[] lines = trace.split("\n");
    StringBuilder s = new StringBuilder(t.toString()).append(": ");
    for (int i = 0; i < Math.min(lines.length, 6); i++) {
      s.append(lines[i].trim()).append(" | ");
    }
    return s.toString();
  }
}
