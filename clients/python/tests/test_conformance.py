"""The Python runner of the shared client scenarios
(spec/conformance/scenarios.json, then spec/conformance/transactions.json,
then spec/conformance/logs.json, then spec/conformance/eventual.json; the
format is spec/conformance/README.md).

Each scenario is one test, in file order, on the session's cluster. Every
map op is one request of the byte-level API (``amulet.ByteMap``). The
``txn_*`` ops act on ``amulet.Transaction`` objects named by the step's
``txn``, each begun (``client.transaction()``) at its first op and
abandoned at the end of the scenario if still open: ``txn_get`` ->
``get``, ``txn_put`` -> ``put``, ``txn_delete`` -> ``delete``,
``txn_range`` -> ``range`` (the bounds as ``start``/``stop`` with their
inclusiveness), ``txn_commit`` -> ``commit``, ``txn_abandon`` ->
``abandon``; nothing is retried. The log ops are one request each of
``amulet.DLog`` (``client.log(name)``: ``append``, ``read_log`` -> ``read``,
``trim_log`` -> ``trim``, ``log_bounds`` -> ``bounds``) or of the client
(``create_log``, ``drop_log``, ``multi_append``), log names prefixed as map
names are; ``tail_log`` opens ``DLog.tail(from)`` (the ``TailLog``
stream), takes ``count`` entries with ``next(timeout=10)`` each and closes
the tail (a timeout fails the step). The eventual ops are one request each
of ``amulet.EventualMap`` (``client.eventual_map(name)``): ``eventual_get``
-> ``get(key, r)``, ``eventual_put`` -> ``put(key, value, context, w)``,
``eventual_delete`` -> ``delete(key, context, w)`` (``r``/``w`` sent as
given, 0 when absent); the result is the reply's values as hex, sorted
ascending; ``save`` keeps the reply's ``Context`` under a label local to
the scenario, and ``context`` is such a label or ``{"raw": HEX}``
(``Context.from_bytes`` of those bytes, sent as they are). ``create_map``
with ``{"eventual": {"replicas": N, "vnodes": V}}`` calls
``create_map(name, eventual=True, replicas=N, vnodes=V)`` (V 0 when
absent). Error classes map from the client's exceptions: ``amulet.InvalidArgument`` -> ``invalid_argument``,
``NotFound`` -> ``not_found``, ``AlreadyExists`` -> ``already_exists``,
``ResourceExhausted`` -> ``resource_exhausted``, ``FailedPrecondition`` ->
``failed_precondition``, ``OutOfRange`` -> ``out_of_range``,
``ConflictError`` -> ``conflict``,
``ReadVersionTooOldError`` -> ``read_version_too_old``; any other exception
fails the step. ``merge_fields`` sends the step's fields as a list of
pairs, so a name given twice reaches the server as the file has it.
``join`` calls ``client.join(peer_address, client_address)`` and gives
null when the node id it answers is above 0 (the id depends on the view),
as ``leave`` gives null.
"""

from __future__ import annotations

import json
import secrets
from pathlib import Path

import pytest

import amulet

SPEC_DIR = Path(__file__).resolve().parents[3] / "spec" / "conformance"
# The map scenarios, then the transaction scenarios, then the log
# scenarios, then the eventual-map scenarios, on one cluster.
SPECS = [
    SPEC_DIR / "scenarios.json",
    SPEC_DIR / "transactions.json",
    SPEC_DIR / "logs.json",
    SPEC_DIR / "eventual.json",
]
SCENARIOS = [scenario for spec in SPECS for scenario in json.loads(spec.read_text())["scenarios"]]
RUN_ID = secrets.token_hex(4)

ERROR_CLASSES = {
    amulet.InvalidArgument: "invalid_argument",
    amulet.NotFound: "not_found",
    amulet.AlreadyExists: "already_exists",
    amulet.ResourceExhausted: "resource_exhausted",
    amulet.FailedPrecondition: "failed_precondition",
    amulet.OutOfRange: "out_of_range",
    amulet.ConflictError: "conflict",
    amulet.ReadVersionTooOldError: "read_version_too_old",
}

# The arguments each op takes (besides "op" and exactly one of
# "expect"/"error"); a key outside these is an error of the runner.
ARGS = {
    "create_map": ({"map"}, {"layout"}),
    "drop_map": ({"map"}, set()),
    "get": ({"map", "key"}, set()),
    "contains_key": ({"map", "key"}, set()),
    "put": ({"map", "key", "value"}, set()),
    "remove": ({"map", "key"}, set()),
    "put_if_absent": ({"map", "key", "value"}, set()),
    "replace": ({"map", "key", "value"}, set()),
    "replace_if_equals": ({"map", "key", "expected", "value"}, set()),
    "remove_if_equals": ({"map", "key", "expected"}, set()),
    "put_all": ({"map", "entries"}, set()),
    "merge_fields": ({"map", "key", "fields"}, set()),
    "contains_value": ({"map", "value"}, set()),
    "size": ({"map"}, set()),
    "is_empty": ({"map"}, set()),
    "clear": ({"map"}, set()),
    "first_entry": ({"map"}, set()),
    "last_entry": ({"map"}, set()),
    "nearest_entry": ({"map", "key", "nearest"}, set()),
    "range": ({"map", "limit"}, {"from", "to", "reverse"}),
    "snapshot": ({"map"}, set()),
    "snapshot_open": ({"map", "name"}, set()),
    "snapshot_read": ({"name"}, set()),
    "snapshot_release": ({"name"}, set()),
    "txn_get": ({"txn", "map", "key"}, set()),
    "txn_put": ({"txn", "map", "key", "value"}, set()),
    "txn_delete": ({"txn", "map", "key"}, set()),
    "txn_range": ({"txn", "map", "limit"}, {"from", "to", "reverse"}),
    "txn_commit": ({"txn"}, set()),
    "txn_abandon": ({"txn"}, set()),
    "leave": ({"node"}, set()),
    "join": ({"peer_address", "client_address"}, set()),
    "create_log": ({"log"}, set()),
    "drop_log": ({"log"}, set()),
    "append": ({"log", "value"}, set()),
    "multi_append": ({"entries"}, set()),
    "read_log": ({"log", "from", "max_entries"}, set()),
    "trim_log": ({"log", "below"}, set()),
    "log_bounds": ({"log"}, set()),
    "tail_log": ({"log", "from", "count"}, set()),
    "eventual_get": ({"map", "key"}, {"r", "save"}),
    "eventual_put": ({"map", "key", "value"}, {"context", "w", "save"}),
    "eventual_delete": ({"map", "key"}, {"context", "w", "save"}),
}


LOG_OPS = frozenset(
    {"create_log", "drop_log", "append", "multi_append", "read_log", "trim_log", "log_bounds", "tail_log"}
)
EVENTUAL_OPS = frozenset({"eventual_get", "eventual_put", "eventual_delete"})
# How long a tail_log step waits for each entry (spec/conformance/README.md).
TAIL_ENTRY_WAIT = 10.0


class RunnerError(Exception):
    """The file asks for something this runner does not know."""


def data(value) -> bytes:
    """BYTES: lowercase hex, or {"repeat": hex, "times": n}."""
    if isinstance(value, str):
        return bytes.fromhex(value)
    if isinstance(value, dict) and set(value) == {"repeat", "times"}:
        return bytes.fromhex(value["repeat"]) * value["times"]
    raise RunnerError(f"not BYTES: {value!r}")


def bound(value):
    if value is None:
        return None
    if set(value) != {"key", "inclusive"}:
        raise RunnerError(f"not a bound: {value!r}")
    return data(value["key"]), bool(value["inclusive"])


def integer(value, what: str) -> int:
    """An integer argument, sent as it is."""
    if not isinstance(value, int) or isinstance(value, bool):
        raise RunnerError(f"{what} must be an integer, not {value!r}")
    return value


def hexed(entry):
    return None if entry is None else [entry[0].hex(), entry[1].hex()]


def same(got, expected) -> bool:
    """Exact equality of JSON values (so false is not 0)."""
    return json.dumps(got, sort_keys=True) == json.dumps(expected, sort_keys=True)


class Runner:
    def __init__(self, client: amulet.Client, index: int):
        self.client = client
        self.prefix = f"c{RUN_ID}-{index}-"
        self.snapshots: dict[str, amulet.Snapshot] = {}
        # Transactions by name, each begun at its first op.
        self.txns: dict[str, amulet.Transaction] = {}
        # Contexts of eventual replies, by the label of their step's "save".
        self.contexts: dict[str, amulet.Context] = {}

    def close(self) -> None:
        for snapshot in self.snapshots.values():
            try:
                snapshot.close()
            except amulet.AmuletError:
                pass
        for tx in self.txns.values():
            tx.abandon()

    def txn(self, step) -> amulet.Transaction:
        name = step["txn"]
        if name not in self.txns:
            self.txns[name] = self.client.transaction()
        return self.txns[name]

    def map(self, step) -> amulet.ByteMap:
        return self.client.bytes_map(self.prefix + step["map"])

    def run(self, step):
        """The step's result as a JSON value, or raises what the client raised."""
        op = step["op"]
        if op not in ARGS:
            raise RunnerError(f"unknown op {op!r}")
        required, optional = ARGS[op]
        given = set(step) - {"op", "expect", "error"}
        if not required <= given or given - required - optional:
            raise RunnerError(f"{op} takes {sorted(required)} and optionally {sorted(optional)}, got {sorted(given)}")
        if ("expect" in step) == ("error" in step):
            raise RunnerError("a step has exactly one of expect and error")

        if op == "create_map":
            return self.create_map(self.prefix + step["map"], step.get("layout"))
        if op == "drop_map":
            self.client.drop_map(self.prefix + step["map"])
            return None
        if op == "leave":
            self.client.leave(step["node"])
            return None
        if op == "join":
            # The new node's id depends on the view: a join that succeeds
            # is null when its id is above 0, as a leave.
            node = self.client.join(step["peer_address"], step["client_address"])
            if not isinstance(node, int) or node <= 0:
                raise AssertionError(f"join answered node id {node!r}")
            return None
        if op == "snapshot_read":
            snapshot = self.snapshots.get(step["name"])
            if snapshot is None:
                raise RunnerError(f"no snapshot named {step['name']!r}")
            with snapshot.reread() as again:
                return [[k.hex(), v.hex()] for k, v in again]
        if op == "snapshot_release":
            snapshot = self.snapshots.get(step["name"])
            if snapshot is None:
                raise RunnerError(f"no snapshot named {step['name']!r}")
            snapshot.close()
            return None
        if op.startswith("txn_"):
            return self.run_txn(op, step)
        if op in LOG_OPS:
            return self.run_log(op, step)
        if op in EVENTUAL_OPS:
            return self.run_eventual(op, step)

        m = self.map(step)
        if op == "get":
            value = m.get(data(step["key"]))
            return None if value is None else value.hex()
        if op == "contains_key":
            return m.contains_key(data(step["key"]))
        if op in ("put", "put_if_absent", "replace"):
            value = getattr(m, op)(data(step["key"]), data(step["value"]))
            return None if value is None else value.hex()
        if op == "remove":
            value = m.remove(data(step["key"]))
            return None if value is None else value.hex()
        if op == "replace_if_equals":
            return m.replace_if_equals(data(step["key"]), data(step["expected"]), data(step["value"]))
        if op == "remove_if_equals":
            return m.remove_if_equals(data(step["key"]), data(step["expected"]))
        if op == "put_all":
            entries = []
            for entry in step["entries"]:
                if not isinstance(entry, list) or len(entry) != 2:
                    raise RunnerError(f"not an ENTRY: {entry!r}")
                entries.append((data(entry[0]), data(entry[1])))
            m.put_all(entries)
            return None
        if op == "merge_fields":
            fields = []
            for field in step["fields"]:
                if not isinstance(field, list) or len(field) != 2:
                    raise RunnerError(f"not a [NAME, VALUE or null]: {field!r}")
                fields.append((data(field[0]), None if field[1] is None else data(field[1])))
            return m.merge_fields(data(step["key"]), fields)
        if op == "contains_value":
            return m.contains_value(data(step["value"]))
        if op == "size":
            return m.size()
        if op == "is_empty":
            return m.is_empty()
        if op == "clear":
            m.clear()
            return None
        if op == "first_entry":
            return hexed(m.first_entry())
        if op == "last_entry":
            return hexed(m.last_entry())
        if op == "nearest_entry":
            if step["nearest"] not in ("floor", "ceiling", "higher", "lower"):
                raise RunnerError(f"unknown nearest {step['nearest']!r}")
            return hexed(m.nearest_entry(data(step["key"]), step["nearest"]))
        if op == "range":
            limit = step["limit"]
            if not isinstance(limit, int) or isinstance(limit, bool):
                raise RunnerError(f"limit must be an integer, not {limit!r}")
            entries, more = m.range(bound(step.get("from")), bound(step.get("to")), limit, bool(step.get("reverse", False)))
            return {"entries": [hexed(e) for e in entries], "more": more}
        if op == "snapshot":
            with m.snapshot() as snapshot:
                return [[k.hex(), v.hex()] for k, v in snapshot]
        if op == "snapshot_open":
            if step["name"] in self.snapshots:
                raise RunnerError(f"snapshot {step['name']!r} opened twice")
            self.snapshots[step["name"]] = m.snapshot()
            return None
        raise RunnerError(f"unhandled op {op!r}")

    def run_txn(self, op: str, step):
        if op in ("txn_range", "txn_get", "txn_put", "txn_delete"):
            name = self.prefix + step["map"]
        if op == "txn_range":
            limit = step["limit"]
            if not isinstance(limit, int) or isinstance(limit, bool):
                raise RunnerError(f"limit must be an integer, not {limit!r}")
            lower, upper = bound(step.get("from")), bound(step.get("to"))
            entries, more = self.txn(step).range(
                name,
                None if lower is None else lower[0],
                None if upper is None else upper[0],
                start_inclusive=lower is None or lower[1],
                stop_inclusive=upper is None or upper[1],
                limit=limit,
                reverse=bool(step.get("reverse", False)),
            )
            return {"entries": [hexed(e) for e in entries], "more": more}
        if op == "txn_get":
            value = self.txn(step).get(name, data(step["key"]))
            return None if value is None else value.hex()
        if op == "txn_put":
            self.txn(step).put(name, data(step["key"]), data(step["value"]))
            return None
        if op == "txn_delete":
            self.txn(step).delete(name, data(step["key"]))
            return None
        if op == "txn_commit":
            self.txn(step).commit()
            return None
        if op == "txn_abandon":
            self.txn(step).abandon()
            return None
        raise RunnerError(f"unhandled op {op!r}")

    def run_log(self, op: str, step):
        if op == "create_log":
            self.client.create_log(self.prefix + step["log"])
            return None
        if op == "drop_log":
            self.client.drop_log(self.prefix + step["log"])
            return None
        if op == "multi_append":
            entries = []
            for entry in step["entries"]:
                if not isinstance(entry, list) or len(entry) != 2 or not isinstance(entry[0], str):
                    raise RunnerError(f"not a [LOG, BYTES]: {entry!r}")
                entries.append((self.prefix + entry[0], data(entry[1])))
            return self.client.multi_append(entries)
        log = self.client.log(self.prefix + step["log"])
        if op == "append":
            return log.append(data(step["value"]))
        if op == "read_log":
            read = log.read(integer(step["from"], "from"), integer(step["max_entries"], "max_entries"))
            return {"from": read.from_, "entries": [e.hex() for e in read.entries], "first": read.first, "end": read.end}
        if op == "trim_log":
            bounds = log.trim(integer(step["below"], "below"))
            return {"first": bounds.first, "end": bounds.end}
        if op == "log_bounds":
            bounds = log.bounds()
            return {"first": bounds.first, "end": bounds.end}
        if op == "tail_log":
            from_, count = integer(step["from"], "from"), integer(step["count"], "count")
            with log.tail(from_) as tail:
                return [[p, v.hex()] for p, v in (tail.next(timeout=TAIL_ENTRY_WAIT) for _ in range(count))]
        raise RunnerError(f"unhandled op {op!r}")

    def context(self, value) -> amulet.Context:
        """A step's ``context``: the label of a saved context, or
        ``{"raw": HEX}``."""
        if isinstance(value, str):
            if value not in self.contexts:
                raise RunnerError(f"no context saved as {value!r}")
            return self.contexts[value]
        if isinstance(value, dict) and set(value) == {"raw"} and isinstance(value["raw"], str):
            return amulet.Context.from_bytes(data(value["raw"]))
        raise RunnerError(f"not a context (a saved label or {{\"raw\": HEX}}): {value!r}")

    def run_eventual(self, op: str, step):
        # Every argument is read before anything is sent.
        key = data(step["key"])
        quorum = integer(step.get("r" if op == "eventual_get" else "w", 0), "r" if op == "eventual_get" else "w")
        context = self.context(step["context"]) if "context" in step else None
        value = data(step["value"]) if op == "eventual_put" else None
        save = step.get("save")
        if save is not None and not isinstance(save, str):
            raise RunnerError(f"save must be a label, not {save!r}")
        m = self.client.eventual_map(self.prefix + step["map"])
        if op == "eventual_get":
            reply = m.get(key, r=quorum)
        elif op == "eventual_put":
            reply = m.put(key, value, context, w=quorum)
        else:
            reply = m.delete(key, context, w=quorum)
        if save is not None:
            self.contexts[save] = reply.context
        return [v.hex() for v in sorted(reply.values)]

    def create_map(self, name: str, layout):
        if layout is None or layout == {"hash": {}}:
            self.client.create_map(name)
            return None
        if isinstance(layout, dict) and set(layout) == {"eventual"}:
            eventual = layout["eventual"]
            if not isinstance(eventual, dict) or not {"replicas"} <= set(eventual) <= {"replicas", "vnodes"}:
                raise RunnerError(f"not an eventual layout: {layout!r}")
            replicas = integer(eventual["replicas"], "replicas")
            vnodes = integer(eventual.get("vnodes", 0), "vnodes")
            self.client.create_map(name, eventual=True, replicas=replicas, vnodes=vnodes)
            return None
        if set(layout) != {"range"}:
            raise RunnerError(f"unknown layout {layout!r}")
        partitions = sorted(self.client.partition_map().partitions)
        ranges = []
        for split in layout["range"]:
            if set(split) != {"start", "partition"}:
                raise RunnerError(f"not a range split: {split!r}")
            ranges.append((data(split["start"]), partitions[split["partition"]]))
        self.client.create_map(name, ranges=ranges)
        return None


def outcome(runner: Runner, step):
    """("expect", result) or ("error", class) of one step."""
    try:
        return "expect", runner.run(step)
    except RunnerError:
        raise
    except amulet.AmuletError as e:
        for kind, name in ERROR_CLASSES.items():
            if isinstance(e, kind):
                return "error", name
        return "error", f"{type(e).__name__}: {e}"


def short(value, width: int = 300) -> str:
    text = json.dumps(value)
    return text if len(text) <= width else text[:width] + f"... ({len(text)} chars)"


@pytest.mark.parametrize("index", range(len(SCENARIOS)), ids=[s["name"] for s in SCENARIOS])
def test_scenario(client, index):
    scenario = SCENARIOS[index]
    runner = Runner(client, index)
    try:
        for i, step in enumerate(scenario["steps"]):
            wanted = ("expect", step["expect"]) if "expect" in step else ("error", step["error"])
            got = outcome(runner, step)
            if got[0] != wanted[0] or not same(got[1], wanted[1]):
                pytest.fail(
                    f"scenario {scenario['name']!r} step {i} ({step['op']}): "
                    f"wanted {wanted[0]} {short(wanted[1])}, got {got[0]} {short(got[1])}",
                    pytrace=False,
                )
    finally:
        runner.close()


@pytest.mark.parametrize("spec", SPECS, ids=[spec.name for spec in SPECS])
def test_scenario_file_shape(spec):
    """Names are unique (across the files); every step has a known op,
    exactly one of expect and error, and sits on one line of the file."""
    names = [s["name"] for s in SCENARIOS]
    assert len(names) == len(set(names))
    scenarios = json.loads(spec.read_text())["scenarios"]
    assert scenarios
    steps = [step for scenario in scenarios for step in scenario["steps"]]
    for step in steps:
        assert step.get("op") in ARGS, step
        assert ("expect" in step) != ("error" in step), step
    lines = [line.strip().rstrip(",") for line in spec.read_text().splitlines()]
    assert [json.loads(line) for line in lines if line.startswith('{"op"')] == steps


@pytest.mark.parametrize(
    "step",
    [
        {"op": "frobnicate", "map": "m", "expect": None},
        {"op": "get", "map": "m", "key": "00", "colour": "red", "expect": None},
        {"op": "get", "map": "m", "expect": None},
        {"op": "get", "map": "m", "key": "00"},
        {"op": "get", "map": "m", "key": "00", "expect": None, "error": "not_found"},
        {"op": "get", "map": "m", "key": {"repeat": "00"}, "expect": None},
        {"op": "merge_fields", "map": "m", "key": "00", "fields": [["61"]], "expect": True},
        {"op": "merge_fields", "map": "m", "key": "00", "expect": True},
        {"op": "snapshot_read", "name": "never opened", "expect": []},
        {"op": "txn_get", "map": "m", "key": "00", "expect": None},
        {"op": "txn_put", "txn": "t", "map": "m", "key": "00", "expect": None},
        {"op": "txn_range", "txn": "t", "map": "m", "expect": {"entries": [], "more": False}},
        {"op": "txn_commit", "txn": "t", "map": "m", "expect": None},
        {"op": "append", "log": "l", "expect": 0},
        {"op": "append", "map": "l", "value": "00", "expect": 0},
        {"op": "read_log", "log": "l", "from": 0, "expect": {}},
        {"op": "read_log", "log": "l", "from": "0", "max_entries": 1, "expect": {}},
        {"op": "multi_append", "entries": [["l"]], "expect": [0]},
        {"op": "trim_log", "log": "l", "expect": {}},
        {"op": "tail_log", "log": "l", "from": 0, "expect": []},
        {"op": "tail_log", "log": "l", "from": 0, "count": "1", "expect": []},
        {"op": "eventual_get", "map": "c", "expect": []},
        {"op": "eventual_get", "map": "c", "key": "6b", "w": 1, "expect": []},
        {"op": "eventual_get", "map": "c", "key": "6b", "context": "saved", "expect": []},
        {"op": "eventual_get", "map": "c", "key": "6b", "r": "3", "expect": []},
        {"op": "eventual_get", "map": "c", "key": "6b", "r": True, "expect": []},
        {"op": "eventual_get", "map": "c", "key": "6b", "save": 1, "expect": []},
        {"op": "eventual_put", "map": "c", "key": "6b", "expect": []},
        {"op": "eventual_put", "map": "c", "key": "6b", "value": "76", "r": 1, "expect": []},
        {"op": "eventual_put", "map": "c", "key": "6b", "value": "76", "context": "never saved", "expect": []},
        {"op": "eventual_put", "map": "c", "key": "6b", "value": "76", "context": {"hex": "00"}, "expect": []},
        {"op": "eventual_put", "map": "c", "key": "6b", "value": "76", "context": {"raw": 0}, "expect": []},
        {"op": "eventual_delete", "map": "c", "key": "6b", "value": "76", "expect": []},
        {"op": "eventual_delete", "map": "c", "key": "6b", "context": ["00"], "expect": []},
        {"op": "create_map", "map": "c", "layout": {"eventual": {}}, "expect": None},
        {"op": "create_map", "map": "c", "layout": {"eventual": {"replicas": 3, "ring": []}}, "expect": None},
        {"op": "create_map", "map": "c", "layout": {"eventual": {"replicas": "3"}}, "expect": None},
        {"op": "create_map", "map": "c", "layout": {"eventual": {"replicas": 3}, "hash": {}}, "expect": None},
    ],
)
def test_the_runner_refuses_what_it_does_not_know(step):
    """An unknown op or step key, or a malformed step, is an error of the
    runner, not a result (checked before anything is sent)."""

    class NothingSent:
        def bytes_map(self, name):
            return amulet.ByteMap(self, name)

        def execute(self, *args):
            raise AssertionError("the runner sent a request")

        def transaction(self):
            raise AssertionError("the runner began a transaction")

        def log(self, name):
            return amulet.DLog(self, name)

        def multi_append(self, entries):
            raise AssertionError("the runner sent a request")

        def eventual_map(self, name):
            return amulet.EventualMap(self, name)

        def _eventual(self, *args, **kwargs):
            raise AssertionError("the runner sent a request")

        def create_map(self, *args, **kwargs):
            raise AssertionError("the runner sent a request")

    with pytest.raises(RunnerError):
        Runner(NothingSent(), index=0).run(step)
