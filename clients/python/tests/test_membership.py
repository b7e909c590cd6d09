"""No cluster: ``Client.join`` and ``Client.leave`` (docs/membership.md,
``ChangeMembership``) against in-process fake nodes (tests/fake_nodes.py)
whose ``ChangeMembership`` a spy answers: the request sent, the id
answered, argument types refused before sending, the node's refusals
final, and a join never answered ``OutcomeUnknown`` (it may have been
ordered), not ``Unavailable``."""

from __future__ import annotations

import grpc
import pytest
from stub_spy import wrap_stubs

import amulet
from amulet.v1 import amulet_pb2 as pb


class Abort(grpc.RpcError):
    """What a stub raises for a status the node answered."""

    def __init__(self, code: grpc.StatusCode, details: str):
        self._code, self._details = code, details

    def code(self):
        return self._code

    def details(self):
        return self._details

    def trailing_metadata(self):
        return ()


@pytest.fixture
def client(fake):
    with amulet.Client(fake.addresses, attempt_timeout=1.0, operation_timeout=2.0) as c:
        yield c


def spy(client, monkeypatch, answer):
    """Every ``ChangeMembership`` goes to ``answer(request)`` (a reply, or an
    exception to raise); returns the list of the requests sent."""
    sent: list[pb.ChangeMembershipRequest] = []

    def change(stub, address, request, **kwargs):
        sent.append(request)
        reply = answer(request)
        if isinstance(reply, Exception):
            raise reply
        return reply

    wrap_stubs(client, monkeypatch, ChangeMembership=change)
    return sent


def test_join_sends_both_addresses_and_answers_the_new_nodes_id(client, monkeypatch):
    sent = spy(client, monkeypatch, lambda r: pb.ChangeMembershipResponse(node=4))
    assert client.join("127.0.0.1:7998", "127.0.0.1:7999") == 4
    assert len(sent) == 1
    assert sent[0].WhichOneof("change") == "join"
    assert sent[0].join.peer_address == "127.0.0.1:7998"
    assert sent[0].join.client_address == "127.0.0.1:7999"


def test_join_leaves_the_addresses_to_the_node(client, monkeypatch):
    # Not ip:port, empty: sent as they are; the node's refusal is final.
    sent = spy(
        client,
        monkeypatch,
        lambda r: Abort(grpc.StatusCode.INVALID_ARGUMENT, "not ip:port (test)"),
    )
    with pytest.raises(amulet.InvalidArgument):
        client.join("not-an-address", "")
    assert [(r.join.peer_address, r.join.client_address) for r in sent] == [("not-an-address", "")]


@pytest.mark.parametrize("args", [(None, "127.0.0.1:7999"), ("127.0.0.1:7998", 7999), (b"127.0.0.1:7998", "x")])
def test_join_takes_str_addresses_only(client, monkeypatch, args):
    sent = spy(client, monkeypatch, lambda r: pb.ChangeMembershipResponse(node=4))
    with pytest.raises(amulet.InvalidArgument):
        client.join(*args)
    assert sent == []


def test_a_refused_join_is_failed_precondition_and_not_sent_again(client, monkeypatch):
    sent = spy(
        client,
        monkeypatch,
        lambda r: Abort(grpc.StatusCode.FAILED_PRECONDITION, "a node is at 127.0.0.1:7998 (test)"),
    )
    with pytest.raises(amulet.FailedPrecondition):
        client.join("127.0.0.1:7998", "127.0.0.1:7999")
    assert len(sent) == 1


def test_a_join_without_an_answer_is_outcome_unknown(client, monkeypatch):
    # No node answered: each attempt may have been ordered, so giving up
    # (at operation_timeout) says so rather than Unavailable.
    sent = spy(client, monkeypatch, lambda r: Abort(grpc.StatusCode.DEADLINE_EXCEEDED, "no answer (test)"))
    with pytest.raises(amulet.OutcomeUnknown):
        client.join("127.0.0.1:7998", "127.0.0.1:7999")
    assert sent and all(r.join.peer_address == "127.0.0.1:7998" for r in sent)


def test_leave_sends_the_node(client, monkeypatch):
    sent = spy(client, monkeypatch, lambda r: pb.ChangeMembershipResponse())
    assert client.leave(3) is None
    assert [(r.WhichOneof("change"), r.leave) for r in sent] == [("leave", 3)]
