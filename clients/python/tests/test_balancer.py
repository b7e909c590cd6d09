"""The balancer switch (``SetBalancer``, docs/dynatree.md "Pause and
decisions") against the session's real `amulet dev` cluster, as the admin
(TLS on): every node paused answers ``enabled=False`` and its ``Status``
says so, then resumed answers ``True``. Each node's switch is put back as
it was at the end, whatever happens (it is kept across restarts, and the
other tests share the cluster). A non-admin's refusal is in
test_access.py (``test_a_reader_cannot_change_access_or_make_tokens``)."""

from __future__ import annotations

import pytest

import amulet
from amulet.v1 import amulet_pb2 as pb


@pytest.fixture
def nodes(client):
    """The cluster's nodes (id -> address); their switches restored after."""
    addresses = dict(client.partition_map().addresses)
    assert len(addresses) == 3, addresses
    before = {node: client.balancer_status(node).enabled for node in addresses}
    yield addresses
    for node, enabled in before.items():
        client.set_balancer(addresses[node], enabled)


def test_pause_and_resume_every_node(client, nodes):
    paused = client.set_balancer_everywhere(False)
    assert sorted(paused) == sorted(nodes)
    for node, answer in paused.items():
        assert isinstance(answer, pb.BalancerStatus), f"node {node}: {answer!r}"
        assert not answer.enabled, node
        assert len(answer.recent) <= 16
    for node, address in nodes.items():
        status = client.status(address)
        assert status.node == node
        assert status.HasField("balancer") and not status.balancer.enabled, node
        # By address or by id: the same node.
        assert not client.balancer_status(node).enabled
        assert not client.balancer_status(address).enabled

    # Pausing again changes nothing; one node resumed alone.
    first = min(nodes)
    assert not client.set_balancer(nodes[first], False).enabled
    assert client.set_balancer(first, True).enabled
    assert [client.balancer_status(n).enabled for n in sorted(nodes)] == [n == first for n in sorted(nodes)]

    resumed = client.set_balancer_everywhere(True)
    assert sorted(resumed) == sorted(nodes)
    for node, answer in resumed.items():
        assert isinstance(answer, pb.BalancerStatus) and answer.enabled, f"node {node}: {answer!r}"
        assert client.status(nodes[node]).balancer.enabled, node


def test_bad_arguments_are_refused_by_the_client(client):
    with pytest.raises(TypeError):
        client.set_balancer(min(client.partition_map().addresses), "no")
    with pytest.raises(TypeError):
        client.set_balancer_everywhere(None)
    with pytest.raises(amulet.InvalidArgument, match="not in the partition map"):
        client.set_balancer(99_999, False)
    with pytest.raises(TypeError):
        client.balancer_status(1.5)
