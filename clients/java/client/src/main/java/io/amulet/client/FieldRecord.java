package io.amulet.client;

import java.io.ByteArrayOutputStream;
import java.nio.ByteBuffer;
import java.util.Arrays;
import java.util.HexFormat;
import java.util.Map;
import java.util.NavigableMap;
import java.util.TreeMap;

/**
 * Field records (docs/field-records.md): a value made of named fields, which
 * {@link ByteMap#mergeFields} changes in place in one ordered command. The
 * fields are in ascending unsigned-byte order of their names, each name once,
 * each field as {@code [name length: u32 big-endian][name][value length: u32
 * big-endian][value]}; the empty value is the record with no fields. Byte for
 * byte the encoding of the Rust ({@code amulet_client::field_record}) and
 * Python ({@code amulet.field_record}) clients.
 */
public final class FieldRecord {
  /** Bytes of each length prefix. */
  private static final int LENGTH_BYTES = 4;

  private FieldRecord() {}

  /**
   * The record of {@code fields}, sorted by unsigned bytes whatever order
   * the map iterates in.
   *
   * @throws NullPointerException for a null name or value (a record has no
   *     absent fields; {@link ByteMap#mergeFields} is where null removes)
   * @throws IllegalArgumentException for two names of equal bytes (possible
   *     in a map that compares arrays by identity, such as a HashMap)
   */
  public static byte[] encode(Map<byte[], byte[]> fields) {
    TreeMap<byte[], byte[]> sorted = new TreeMap<>(Arrays::compareUnsigned);
    long size = 0;
    for (Map.Entry<byte[], byte[]> f : fields.entrySet()) {
      byte[] name = f.getKey();
      byte[] value = f.getValue();
      if (name == null || value == null) {
        throw new NullPointerException("a field record has no null names or values");
      }
      if (sorted.put(name, value) != null) {
        throw new IllegalArgumentException(
            "the field name " + HexFormat.of().formatHex(name) + " is given twice");
      }
      size += 2 * LENGTH_BYTES + name.length + value.length;
    }
    if (size > Integer.MAX_VALUE - 8) {
      throw new IllegalArgumentException("a record of " + size + " bytes does not fit an array");
    }
    ByteArrayOutputStream out = new ByteArrayOutputStream((int) size);
    for (Map.Entry<byte[], byte[]> f : sorted.entrySet()) {
      writeLength(out, f.getKey().length);
      out.writeBytes(f.getKey());
      writeLength(out, f.getValue().length);
      out.writeBytes(f.getValue());
    }
    return out.toByteArray();
  }

  /**
   * The fields of {@code record} by name (unsigned-byte order; the arrays are
   * fresh copies). Total: anything that is not a record (a length that runs
   * past the end, names out of order or repeated) is an {@link
   * IllegalArgumentException}, never an index or buffer exception, so a
   * caller reading values it did not write can tell the two apart.
   */
  public static NavigableMap<byte[], byte[]> decode(byte[] record) {
    TreeMap<byte[], byte[]> fields = new TreeMap<>(Arrays::compareUnsigned);
    int at = 0;
    byte[] last = null;
    while (at < record.length) {
      byte[] name = take(record, at, "a field name");
      at += LENGTH_BYTES + name.length;
      byte[] value = take(record, at, "a field value");
      at += LENGTH_BYTES + value.length;
      if (last != null && Arrays.compareUnsigned(last, name) >= 0) {
        throw new IllegalArgumentException(
            "not a field record: field names are not unique and in ascending order");
      }
      last = name;
      fields.put(name, value);
    }
    return fields;
  }

  /** The length-prefixed part of {@code record} at {@code at}. */
  private static byte[] take(byte[] record, int at, String what) {
    int left = record.length - at;
    if (left < LENGTH_BYTES) {
      throw new IllegalArgumentException("not a field record: " + what + "'s length is cut short");
    }
    // Unsigned: a length of 2^31 or more is as cut short as any other too long.
    long length = Integer.toUnsignedLong(ByteBuffer.wrap(record, at, LENGTH_BYTES).getInt());
    if (length > left - LENGTH_BYTES) {
      throw new IllegalArgumentException(
          "not a field record: "
              + what
              + " of "
              + length
              + " bytes with "
              + (left - LENGTH_BYTES)
              + " left");
    }
    int from = at + LENGTH_BYTES;
    return Arrays.copyOfRange(record, from, from + (int) length);
  }

  private static void writeLength(ByteArrayOutputStream out, int length) {
    out.write(length >>> 24);
    out.write(length >>> 16);
    out.write(length >>> 8);
    out.write(length);
  }
}
