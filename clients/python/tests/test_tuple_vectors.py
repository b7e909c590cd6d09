"""The shared tuple vectors (spec/tuple-vectors.json, see spec/README.md):
round trips, canonical forms, ordering and invalid encodings."""

import json
import math
import struct
import uuid
from pathlib import Path

import pytest

from amulet import tuple as tl

VECTORS = json.loads(
    (Path(__file__).resolve().parents[3] / "spec" / "tuple-vectors.json").read_text()
)


def element(spec):
    """A JSON ELEMENT as the Python value the codec uses."""
    kind = spec["type"]
    if kind == "null":
        return None
    if kind == "bytes":
        return bytes.fromhex(spec["hex"])
    if kind == "string":
        return spec["value"]
    if kind == "tuple":
        return tuple(element(e) for e in spec["value"])
    if kind == "int":
        return int(spec["value"])
    if kind == "float":
        return tl.SingleFloat(int(spec["bits"], 16))
    if kind == "double":
        return struct.unpack(">d", bytes.fromhex(spec["bits"]))[0]
    if kind == "bool":
        return spec["value"]
    if kind == "uuid":
        return uuid.UUID(spec["value"])
    if kind == "versionstamp":
        return tl.Versionstamp(bytes.fromhex(spec["hex"]))
    raise AssertionError(f"unknown element type {kind}")


def canonical(value):
    """A comparable form: doubles by their bits (NaN != NaN otherwise, and
    0.0 == -0.0), types kept apart (True == 1 otherwise)."""
    if isinstance(value, float):
        return ("double", struct.pack(">d", value))
    if isinstance(value, tuple):
        return ("tuple", tuple(canonical(v) for v in value))
    return (type(value).__name__, value)


def ids(entries):
    return [e["name"] for e in entries]


@pytest.mark.parametrize("vector", VECTORS["vectors"], ids=ids(VECTORS["vectors"]))
def test_vector_packs_and_unpacks(vector):
    value = tuple(element(e) for e in vector["tuple"])
    assert tl.pack(value).hex() == vector["packed_hex"]
    assert canonical(tl.unpack(bytes.fromhex(vector["packed_hex"]))) == canonical(value)


@pytest.mark.parametrize("vector", VECTORS["decode_only"], ids=ids(VECTORS["decode_only"]))
def test_decode_only_forms_unpack_and_repack_canonically(vector):
    value = tuple(element(e) for e in vector["tuple"])
    decoded = tl.unpack(bytes.fromhex(vector["hex"]))
    assert canonical(decoded) == canonical(value)
    assert tl.pack(decoded).hex() == vector["canonical_hex"]


def test_ordered_tuples_pack_in_strictly_increasing_order():
    packed = [tl.pack(tuple(element(e) for e in t)) for t in VECTORS["ordered"]]
    assert len(packed) == 82
    for i, (a, b) in enumerate(zip(packed, packed[1:])):
        assert a < b, f"ordered[{i}] does not pack below ordered[{i + 1}]"


@pytest.mark.parametrize("vector", VECTORS["invalid"], ids=ids(VECTORS["invalid"]))
def test_invalid_encodings_are_refused(vector):
    with pytest.raises(tl.TupleError) as caught:
        tl.unpack(bytes.fromhex(vector["hex"]))
    assert caught.value.category == vector["error"]


def test_counts_match_the_spec():
    # spec/README.md states these; a shorter file would pass silently.
    assert len(VECTORS["vectors"]) == 118
    assert len(VECTORS["decode_only"]) == 9
    assert len(VECTORS["invalid"]) == 40


def test_depth_limit_is_inclusive():
    deepest = bytes([0x05] * tl.MAX_DEPTH + [0x00] * tl.MAX_DEPTH)
    assert tl.pack(tl.unpack(deepest)) == deepest
    with pytest.raises(tl.TupleError) as caught:
        tl.unpack(bytes([0x05] * (tl.MAX_DEPTH + 1) + [0x00] * (tl.MAX_DEPTH + 1)))
    assert caught.value.category == "too_deep"
    # A long run of 0x05 fails fast instead of exhausting Python's stack.
    with pytest.raises(tl.TupleError):
        tl.unpack(bytes([0x05] * 100_000))


@pytest.mark.parametrize(
    "bad", [object(), 1j, {1: 2}, {1}, "\ud800", 1 << (8 * 256)], ids=repr
)
def test_unencodable_elements_raise_type_error(bad):
    with pytest.raises(TypeError):
        tl.pack((bad,))


def test_single_float_keeps_nan_payloads():
    for bits in (0x7FC00000, 0x7FFFFFFF, 0xFFFFFFFF, 0x7F800001):
        assert tl.unpack(tl.pack((tl.SingleFloat(bits),))) == (tl.SingleFloat(bits),)
    assert math.isclose(tl.SingleFloat.of(3.14).value, 3.14, rel_tol=1e-6)
