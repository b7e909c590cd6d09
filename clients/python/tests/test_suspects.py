"""Suspects (DMap §III-B routing, ``amulet.suspects``), without an amulet
binary: a node that gave no answer to an attempt, or answered ``behind``,
is left out of the client's choices for two attempt timeouts, unless every
candidate is suspected; an attempt it executes clears it. First the module
on a clock the test moves (as the Rust client's
``dmap_iii_b_*suspect*`` tests of ``crates/amulet-client/src/rules/tests.rs``),
then through ``amulet.Client`` against three in-process fake nodes
(tests/fake_nodes.py), whose calls a spy sees and fails
(tests/stub_spy.py)."""

from __future__ import annotations

import random
import sys
from pathlib import Path

import grpc
import pytest

import amulet
from amulet.routing import Placement
from amulet.suspects import Outcome, Suspects, outcome_of
from amulet.v1 import amulet_pb2 as pb

sys.path.insert(0, str(Path(__file__).resolve().parent))

from stub_spy import wrap_stubs  # noqa: E402

UNAVAILABLE = grpc.StatusCode.UNAVAILABLE
DEADLINE_EXCEEDED = grpc.StatusCode.DEADLINE_EXCEEDED
ATTEMPT = 2.0
SPAN = 2 * ATTEMPT
A, B, C = "10.0.0.1:7101", "10.0.0.2:7101", "10.0.0.3:7101"


class Clock:
    """A clock the test moves (seconds)."""

    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


class _FakeFailure(grpc.RpcError):
    """A failed call as grpc raises it: a code, details and trailers (an
    ``amulet-error`` kind, an ``amulet-reason``)."""

    def __init__(self, code, kind=None, reason=None):
        self._code, self._kind, self._reason = code, kind, reason

    def code(self):
        return self._code

    def details(self):
        return "injected by the test"

    def trailing_metadata(self):
        metadata = []
        if self._kind:
            metadata.append(("amulet-error", self._kind))
        if self._reason:
            metadata.append(("amulet-reason", self._reason))
        return tuple(metadata)


# ---- the module, on a clock the test moves --------------------------------


def test_a_node_without_an_answer_or_behind_is_suspected_for_its_span():
    clock = Clock()
    suspects = Suspects(SPAN, clock=clock)
    suspects.judge(B, Outcome.NO_ANSWER)
    clock.now += 1.0
    suspects.judge(C, Outcome.BEHIND)
    suspects.judge(A, Outcome.OTHER)
    assert suspects.at() == [B, C]
    clock.now += SPAN - 1.0 - 1e-6
    assert suspects.at() == [B, C]
    clock.now += 1e-6
    assert suspects.at() == [C], "B's span ended"
    assert not suspects.suspected(B) and suspects.suspected(C)
    clock.now += 1.0
    assert suspects.at() == []


def test_a_new_failure_starts_a_new_span():
    clock = Clock()
    suspects = Suspects(SPAN, clock=clock)
    suspects.judge(A, Outcome.NO_ANSWER)
    clock.now += SPAN / 2
    suspects.judge(A, Outcome.BEHIND)
    clock.now += SPAN / 2
    assert suspects.at() == [A]
    clock.now += SPAN / 2
    assert suspects.at() == []


def test_an_executed_attempt_clears_a_suspect_and_other_answers_change_nothing():
    clock = Clock()
    suspects = Suspects(SPAN, clock=clock)
    suspects.judge(A, Outcome.NO_ANSWER)
    suspects.judge(B, Outcome.BEHIND)
    suspects.judge(A, Outcome.OTHER)
    assert suspects.at() == [A, B]
    suspects.judge(B, Outcome.DONE)
    assert suspects.at() == [A], "B executed"
    suspects.judge(C, Outcome.DONE)
    assert suspects.at() == [A]


def test_a_choice_leaves_suspects_out_unless_every_candidate_is_suspected():
    clock = Clock()
    suspects = Suspects(SPAN, clock=clock, rng=random.Random(7))
    assert {suspects.choose([A, B, C]) for _ in range(200)} == {A, B, C}
    suspects.judge(A, Outcome.NO_ANSWER)
    assert {suspects.choose([A, B, C]) for _ in range(200)} == {B, C}
    assert suspects.unsuspected([C, A, B]) == [C, B]
    suspects.judge(B, Outcome.BEHIND)
    assert {suspects.choose([A, B, C]) for _ in range(200)} == {C}
    # Every candidate suspected (a partition of A and B): all of them, never
    # none.
    assert {suspects.choose([A, B]) for _ in range(200)} == {A, B}
    assert suspects.unsuspected([B, A]) == [B, A]
    # The span ends: A and B are candidates again.
    clock.now += SPAN
    assert {suspects.choose([A, B, C]) for _ in range(200)} == {A, B, C}


def test_a_choice_avoids_the_last_failure_among_what_suspects_leave():
    clock = Clock()
    suspects = Suspects(SPAN, clock=clock, rng=random.Random(7))
    assert {suspects.choose([A, B, C], avoid=A) for _ in range(200)} == {B, C}
    suspects.judge(B, Outcome.NO_ANSWER)
    assert {suspects.choose([A, B, C], avoid=A) for _ in range(200)} == {C}
    # The one candidate left is chosen even if it is the one to avoid.
    assert {suspects.choose([A, B, C], avoid=C) for _ in range(200)} == {A}
    assert {suspects.choose([B, C], avoid=C) for _ in range(200)} == {C}
    assert {suspects.choose([A], avoid=A) for _ in range(20)} == {A}
    with pytest.raises(ValueError):
        suspects.choose([])


@pytest.mark.parametrize(
    "failure, outcome",
    [
        (_FakeFailure(UNAVAILABLE), Outcome.NO_ANSWER),
        (_FakeFailure(DEADLINE_EXCEEDED), Outcome.NO_ANSWER),
        (_FakeFailure(grpc.StatusCode.CANCELLED), Outcome.NO_ANSWER),
        (_FakeFailure(grpc.StatusCode.UNKNOWN), Outcome.NO_ANSWER),
        (_FakeFailure(UNAVAILABLE, "behind"), Outcome.BEHIND),
        (_FakeFailure(UNAVAILABLE, "retryable"), Outcome.OTHER),
        (_FakeFailure(grpc.StatusCode.ABORTED, "retryable"), Outcome.OTHER),
        (_FakeFailure(grpc.StatusCode.FAILED_PRECONDITION, "stale-map"), Outcome.OTHER),
        (_FakeFailure(grpc.StatusCode.FAILED_PRECONDITION, "not-a-replica"), Outcome.OTHER),
        (_FakeFailure(grpc.StatusCode.NOT_FOUND, "session-expired"), Outcome.OTHER),
        (_FakeFailure(UNAVAILABLE, "read-version-elsewhere"), Outcome.OTHER),
        (_FakeFailure(grpc.StatusCode.ABORTED, "conflict"), Outcome.OTHER),
        (_FakeFailure(grpc.StatusCode.NOT_FOUND), Outcome.OTHER),
        (_FakeFailure(grpc.StatusCode.PERMISSION_DENIED), Outcome.OTHER),
        # Only the node sets amulet-error and amulet-reason: it answered
        # (an eventual map's quorum not reached is UNAVAILABLE).
        (_FakeFailure(UNAVAILABLE, "quorum-not-reached"), Outcome.OTHER),
        (_FakeFailure(UNAVAILABLE, reason="quorum-not-reached"), Outcome.OTHER),
        (_FakeFailure(UNAVAILABLE, "some-future-kind"), Outcome.OTHER),
    ],
    ids=lambda v: v.name if isinstance(v, Outcome) else f"{v.code().name}-{v._kind or v._reason or 'bare'}",
)
def test_what_a_failed_call_says_of_its_node(failure, outcome):
    assert outcome_of(failure) is outcome


# ---- through the client, against fake nodes -------------------------------


class _Spy:
    """Sees every call of the spied methods, by node address, and answers
    for the nodes told to fail: ``fail[(method, address)]`` is the number
    of calls still to fail (None: every one) and ``failure`` what they
    raise."""

    def __init__(self, failure: _FakeFailure | None = None):
        self.calls: list[tuple[str, str, bool]] = []
        self.fail: dict[tuple[str, str], int | None] = {}
        self.failure = failure or _FakeFailure(UNAVAILABLE)

    def method(self, name: str, answer=None):
        def call(stub, address, request, **kwargs):
            left = self.fail.get((name, address), 0)
            failing = left is None or left > 0
            self.calls.append((name, address, not failing))
            if failing:
                if left is not None:
                    self.fail[(name, address)] = left - 1
                raise self.failure
            if answer is not None:
                return answer
            return getattr(stub, name)(request, **kwargs)

        return call

    def to(self, name: str, address: str) -> list[bool]:
        """Whether each call of ``name`` at ``address`` succeeded."""
        return [ok for method, a, ok in self.calls if method == name and a == address]

    def addresses(self, name: str) -> list[str]:
        return [a for method, a, _ in self.calls if method == name]


@pytest.fixture
def clock():
    return Clock()


@pytest.fixture
def client(fake, clock):
    """A client of the fake nodes whose suspects go by ``clock``."""
    with amulet.Client(fake.addresses, attempt_timeout=ATTEMPT, operation_timeout=10.0) as c:
        c._suspects = Suspects(2 * c.attempt_timeout, clock=clock)
        yield c


def spy_on(client, monkeypatch, failure=None, **answers) -> _Spy:
    spy = _Spy(failure)
    methods = ["Execute", "OpenSession", "KeepAlive", *answers]
    wrap_stubs(client, monkeypatch, **{name: spy.method(name, answers.get(name)) for name in methods})
    return spy


def until_one_reaches(spy: _Spy, method: str, address: str, operation) -> None:
    """Runs ``operation`` until a call of ``method`` went to ``address``
    (each first attempt draws one of three nodes at random: 200 operations
    that never draw it are one chance in 10^35)."""
    for _ in range(200):
        operation()
        if spy.to(method, address):
            return
    raise AssertionError(f"no {method} reached {address}")


@pytest.mark.parametrize(
    "failure",
    [_FakeFailure(UNAVAILABLE), _FakeFailure(DEADLINE_EXCEEDED), _FakeFailure(UNAVAILABLE, "behind")],
    ids=["unavailable", "deadline-exceeded", "behind"],
)
def test_a_replica_that_failed_an_attempt_gets_no_operation_while_suspected(client, fake, monkeypatch, failure):
    raw = client.bytes_map("m")
    raw.clear()  # the session is open
    spy = spy_on(client, monkeypatch, failure)
    dead = fake.addresses[0]
    spy.fail[("Execute", dead)] = None
    until_one_reaches(spy, "Execute", dead, raw.clear)
    assert client._suspects.at() == [dead]
    before = len(spy.calls)
    for _ in range(30):
        raw.clear()
    after = spy.calls[before:]
    # Every operation went to the others at its first attempt.
    assert len(after) == 30 and all(ok for _, _, ok in after), after
    assert dead not in {a for _, a, _ in after}


def test_a_suspect_is_used_again_after_its_span(client, fake, clock, monkeypatch):
    raw = client.bytes_map("m")
    raw.clear()
    spy = spy_on(client, monkeypatch)
    dead = fake.addresses[0]
    spy.fail[("Execute", dead)] = 1
    until_one_reaches(spy, "Execute", dead, raw.clear)
    assert spy.to("Execute", dead) == [False]
    # It would answer now, but it is suspected until the span ends.
    clock.now += SPAN - 0.001
    for _ in range(30):
        raw.clear()
    assert spy.to("Execute", dead) == [False]
    clock.now += 0.001
    assert client._suspects.at() == []
    until_one_reaches(spy, "Execute", dead, lambda: (spy.calls.clear(), raw.clear()))
    assert spy.to("Execute", dead) == [True]


def test_a_suspect_is_used_again_after_it_executes_an_attempt(client, fake, monkeypatch):
    raw = client.bytes_map("m")
    raw.clear()
    spy = spy_on(client, monkeypatch)
    for address in fake.addresses:
        spy.fail[("Execute", address)] = 1
    # One operation: each replica fails once and is suspected; with every
    # replica suspected the fourth attempt goes to any (but the last one to
    # fail), which executes it and is cleared.
    raw.clear()
    tried = spy.addresses("Execute")
    assert len(tried) == 4 and len(set(tried[:3])) == 3, spy.calls
    assert [ok for _, _, ok in spy.calls] == [False, False, False, True]
    cleared = tried[3]
    assert cleared in tried[:2]
    assert client._suspects.at() == sorted(set(fake.addresses) - {cleared})
    # The others stay suspected: every operation goes to it.
    spy.calls.clear()
    for _ in range(30):
        raw.clear()
    assert set(spy.addresses("Execute")) == {cleared}


def test_a_session_opening_leaves_suspects_out_and_is_judged(client, fake, monkeypatch):
    raw = client.bytes_map("m")
    spy = spy_on(client, monkeypatch)
    dead = fake.addresses[0]
    spy.fail[("OpenSession", dead)] = None

    def in_a_new_session():
        client._sessions.drain()
        raw.clear()

    until_one_reaches(spy, "OpenSession", dead, in_a_new_session)
    assert client._suspects.at() == [dead]
    spy.calls.clear()
    for _ in range(30):
        in_a_new_session()
    assert len(spy.addresses("OpenSession")) == 30
    assert dead not in spy.addresses("OpenSession")
    # Suspected for commands too: it is one node.
    assert dead not in spy.addresses("Execute")


def test_a_transactions_read_leaves_suspects_out_and_is_judged(client, fake, monkeypatch):
    read = pb.ReadAtResponse(response=pb.MapResponse(done=pb.Done()))
    spy = spy_on(client, monkeypatch, ReadAt=read)
    dead = fake.addresses[0]
    spy.fail[("ReadAt", dead)] = None
    placement = Placement("carts", "one", (b"k",))
    get = pb.Get(map="carts", key=b"k")

    def read_once():
        client._read_at(placement, 1, "get", get)

    until_one_reaches(spy, "ReadAt", dead, read_once)
    assert client._suspects.at() == [dead]
    spy.calls.clear()
    for _ in range(30):
        read_once()
    assert len(spy.addresses("ReadAt")) == 30 and dead not in spy.addresses("ReadAt")


def test_every_choice_of_a_node_leaves_suspects_out(client, fake, monkeypatch):
    """Session-less calls are not judged, but go where the suspects let
    them: any node, the global stream's replicas, a log tail, a snapshot,
    access control, an eventual request."""
    spy = spy_on(
        client,
        monkeypatch,
        TailLog=iter(()),
        ReadSnapshot=iter(()),
        WhoAmI=pb.WhoAmIResponse(),
    )
    healthy = fake.addresses[2]
    for address in fake.addresses[:2]:
        client._suspects.judge(address, Outcome.NO_ANSWER)
    carts = client.eventual_map("carts")
    for _ in range(20):
        assert client._any_node()[0] == healthy
        assert client._global_node()[0] == healthy
        assert client._tail_log("carts", 0)[0] == healthy
        client._read_snapshot(1, 1, None)
        client.who_am_i()
        client._eventual_node = None
        carts.get(b"k")
        assert client._eventual_node == healthy
    assert set(spy.addresses("ReadSnapshot")) == {healthy}
    assert set(spy.addresses("WhoAmI")) == {healthy}
    assert {address for address, _, _ in fake.calls} == {healthy}


def test_eventual_requests_and_access_control_calls_are_judged(client, fake, monkeypatch):
    """Calls outside sessions suspect and clear nodes as commands do."""
    spy = spy_on(client, monkeypatch, WhoAmI=pb.WhoAmIResponse())
    first, second, third = fake.addresses
    # An eventual request the node did not take (not ready): suspected.
    fake.node(first).failures.append((UNAVAILABLE, "the node is not ready", ()))
    client._eventual_node = first
    carts = client.eventual_map("carts")
    assert carts.get(b"k").values == []
    assert client._suspects.at() == [first]
    assert client._eventual_node != first
    # An access-control call without an answer: suspected too.
    spy.fail[("WhoAmI", second)] = 1
    client.who_am_i(address=second)  # sent again at the same address
    assert client._suspects.at() == [first]
    assert spy.to("WhoAmI", second) == [False, True], "executed: cleared"
    spy.fail[("WhoAmI", third)] = None
    client.operation_timeout = 0.05
    with pytest.raises(amulet.Unavailable):
        client.who_am_i(address=third)
    assert client._suspects.at() == sorted([first, third])
    # Every node suspected: any may be chosen, and the one that executes
    # is cleared.
    client._suspects.judge(second, Outcome.NO_ANSWER)
    client._eventual_node = None
    carts.get(b"k")
    assert client._suspects.at() == sorted(set(fake.addresses) - {client._eventual_node})


def test_a_tail_stream_without_an_answer_suspects_its_node(client, fake):
    """A tail stream that broke without an answer, or at a replica behind,
    suspects its node; one that ended or was refused does not."""
    from amulet.log import DLog, Tail

    tail = Tail(DLog(client, "events"), 0)
    first, second, third = fake.addresses
    tail._stream_failed(first, _FakeFailure(UNAVAILABLE))
    tail._stream_failed(second, _FakeFailure(UNAVAILABLE, "behind"))
    tail._stream_failed(third, _FakeFailure(grpc.StatusCode.FAILED_PRECONDITION, "not-a-replica"))
    assert client._suspects.at() == sorted([first, second])
    assert tail._avoid == third
