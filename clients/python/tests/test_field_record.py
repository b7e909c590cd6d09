"""Field records (docs/field-records.md): ``amulet.field_record`` without a
cluster (the encoding, and decode's totality), then ``ByteMap.merge_fields``
against the live cluster."""

from __future__ import annotations

import random

import pytest

import amulet
from amulet import field_record

# spec/conformance/scenarios.json, merge_fields: {a: 1, b: 2}.
AB = bytes.fromhex("0000000161000000013100000001620000000132")


# ---- encode and decode ------------------------------------------------------


def test_encodes_the_bytes_of_the_shared_scenario():
    assert field_record.encode({b"b": b"2", b"a": b"1"}) == AB
    assert field_record.encode([(b"a", b"1"), (bytearray(b"b"), memoryview(b"2"))]) == AB
    assert field_record.decode(AB) == {b"a": b"1", b"b": b"2"}
    assert field_record.encode({}) == b"" and field_record.decode(b"") == {}
    # An empty name and an empty value are ordinary.
    assert field_record.encode({b"": b""}) == bytes(8)
    assert field_record.decode(bytes(8)) == {b"": b""}


def test_names_sort_as_unsigned_bytes():
    fields = {b"\x80": b"high", b"\x7f": b"low", b"\x7f\x00": b"longer", b"": b"empty"}
    record = field_record.encode(fields)
    decoded = field_record.decode(record)
    assert list(decoded) == [b"", b"\x7f", b"\x7f\x00", b"\x80"]
    assert decoded == fields
    assert record[:8] == bytes.fromhex("0000000000000005")


def test_random_records_round_trip():
    rng = random.Random(42)
    for _ in range(500):
        fields = {rng.randbytes(rng.randrange(4)): rng.randbytes(rng.randrange(6)) for _ in range(rng.randrange(6))}
        decoded = field_record.decode(field_record.encode(fields))
        assert decoded == fields
        assert list(decoded) == sorted(fields)


def test_encode_refuses_what_is_not_a_record():
    with pytest.raises(ValueError):
        field_record.encode([(b"a", b"1"), (b"a", b"2")])
    with pytest.raises(TypeError):
        field_record.encode({b"a": None})
    with pytest.raises(TypeError):
        field_record.encode({"a": b"1"})


ONE = "000000016100000001" + "31"  # {a: 1}


@pytest.mark.parametrize(
    "hexed",
    [
        "00",  # a name length cut short
        "000000",
        "00000001",  # a name of 1 byte, none left
        "0000000161",  # no value length
        "00000001610000",  # value length cut short
        "000000016100000002" + "31",  # a value running past the end
        ONE + ONE,  # a name twice
        "000000016200000001" + "32" + ONE,  # names descending
        ONE + "00",  # trailing bytes
        "ffffffff",  # a length of 2^32 - 1
        "80000000" + "61",  # 2^31: negative as a signed 32-bit length
        "00000001617fffffff" + "31",  # a value length far past the end
        b"not a record".hex(),
    ],
)
def test_what_is_not_a_record_is_a_value_error(hexed):
    with pytest.raises(ValueError, match="^not a field record"):
        field_record.decode(bytes.fromhex(hexed))


def test_decode_is_total():
    """Every truncation and one-byte change of a record, and random bytes:
    a record (which encodes back to the input) or ValueError, nothing else."""
    record = field_record.encode({b"name": b"value", b"n2": b"", b"": b"x"})
    inputs = [record[:n] for n in range(len(record) + 1)]
    for i in range(len(record)):
        for byte in (0x00, 0x01, 0x7F, 0x80, 0xFF):
            inputs.append(record[:i] + bytes([byte]) + record[i + 1 :])
    rng = random.Random(7)
    for _ in range(2000):
        noise = bytearray(rng.randbytes(rng.randrange(24)))
        # Small lengths, so that some of the noise parses.
        for j in range(0, len(noise) - 3, 5):
            noise[j : j + 4] = bytes([0, 0, 0, rng.randrange(4)])
        inputs.append(bytes(noise))
    decoded = 0
    for data in inputs:
        try:
            fields = field_record.decode(data)
        except ValueError:
            continue
        decoded += 1
        assert field_record.encode(fields) == data
    assert decoded > 10


# ---- merge_fields against the cluster ----------------------------------------


@pytest.fixture
def raw(client, fresh_map_name):
    client.create_map(fresh_map_name)
    return client.bytes_map(fresh_map_name)


def test_merge_fields_sets_and_removes_fields_and_keeps_the_others(raw):
    # A missing record stays missing: an update is not an insert.
    assert raw.merge_fields(b"absent", {b"a": b"1"}) is False
    assert raw.get(b"absent") is None

    raw.put(b"r", field_record.encode({b"a": b"1", b"b": b"2", b"keep": b"k"}))
    assert raw.merge_fields(b"r", {b"c": b"3", b"a": None, b"b": b"two", b"gone": None}) is True
    assert field_record.decode(raw.get(b"r")) == {b"b": b"two", b"c": b"3", b"keep": b"k"}
    # Pairs work as a dict does.
    assert raw.merge_fields(b"r", [(b"c", None), (b"d", b"4")]) is True
    assert field_record.decode(raw.get(b"r")) == {b"b": b"two", b"d": b"4", b"keep": b"k"}

    # The empty value is the empty record; removing its last field empties it.
    raw.put(b"e", b"")
    assert raw.merge_fields(b"e", {b"x": b""})
    assert raw.get(b"e") == field_record.encode({b"x": b""})
    assert raw.merge_fields(b"e", {b"x": None})
    assert raw.get(b"e") == b""


def test_merge_fields_refusals_change_nothing(raw, client, fresh_map_name):
    raw.put(b"raw", b"not a record")
    with pytest.raises(amulet.FailedPrecondition) as e:
        raw.merge_fields(b"raw", {b"a": b"1"})
    assert e.value.code is not None  # the cluster's verdict
    assert raw.get(b"raw") == b"not a record"

    raw.put(b"r", AB)
    for fields in ([], [(b"a", b"1"), (b"a", b"2")], {b"big": b"x" * (1024 * 1024 + 1)}):
        with pytest.raises(amulet.InvalidArgument):
            raw.merge_fields(b"r", fields)
    assert raw.get(b"r") == AB

    with pytest.raises(TypeError):
        raw.merge_fields(b"r", {"a": b"1"})
    with pytest.raises(amulet.NotFound):
        client.bytes_map(fresh_map_name + "-none").merge_fields(b"r", {b"a": b"1"})
