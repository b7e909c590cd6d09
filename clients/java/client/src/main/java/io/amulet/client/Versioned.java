package io.amulet.client;

import amulet.v1.AmuletOuterClass;
import com.google.protobuf.ByteString;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Objects;

/**
 * A key of an eventual map ({@link EventualMap}) as one reply saw it: its
 * concurrent values (siblings; none when the key is absent or deleted),
 * in the order the cluster gave them, and the causal {@link Context} that
 * covers them. A write or delete given that context supersedes exactly
 * these values. Immutable.
 */
public final class Versioned {
  private final List<ByteString> values;
  private final Context context;

  /** Values (copied) and their context. */
  public Versioned(List<byte[]> values, Context context) {
    List<ByteString> copy = new ArrayList<>(values.size());
    for (byte[] v : values) {
      copy.add(ByteString.copyFrom(Objects.requireNonNull(v, "value")));
    }
    this.values = List.copyOf(copy);
    this.context = Objects.requireNonNull(context, "context");
  }

  private Versioned(Context context, List<ByteString> values) {
    this.values = values;
    this.context = context;
  }

  /** From a reply. */
  static Versioned of(AmuletOuterClass.Versioned reply) {
    return new Versioned(Context.of(reply.getContext()), List.copyOf(reply.getValuesList()));
  }

  /** The values (siblings), in the cluster's order; copies, in a new list each call. */
  public List<byte[]> values() {
    List<byte[]> out = new ArrayList<>(values.size());
    for (ByteString v : values) {
      out.add(v.toByteArray());
    }
    return out;
  }

  /** How many values (siblings) there are. */
  public int size() {
    return values.size();
  }

  /** Whether there is no value (the key is absent or deleted). */
  public boolean isEmpty() {
    return values.isEmpty();
  }

  /** The causal context covering {@link #values()}: give it to the next write or delete. */
  public Context context() {
    return context;
  }

  /** The same values in the same order, and the same context. */
  @Override
  public boolean equals(Object o) {
    if (!(o instanceof Versioned)) {
      return false;
    }
    Versioned v = (Versioned) o;
    return values.equals(v.values) && context.equals(v.context);
  }

  @Override
  public int hashCode() {
    return 31 * values.hashCode() + context.hashCode();
  }

  /** {@code Versioned[values=[hex, ...], context=hex]}. */
  @Override
  public String toString() {
    StringBuilder b = new StringBuilder("Versioned[values=[");
    for (int i = 0; i < values.size(); i++) {
      if (i > 0) {
        b.append(", ");
      }
      b.append(HexFormat.of().formatHex(values.get(i).toByteArray()));
    }
    return b.append("], context=").append(context).append(']').toString();
  }
}
