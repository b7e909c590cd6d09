"""The cluster administration calls of :class:`amulet.Client`: access
control (docs/security.md, :mod:`amulet.access`), membership
(docs/membership.md), repartitioning (``Reconfigure``: a split, merge,
stream replacement or move, as ``crates/amulet-client/src/reconfigure.rs``)
and each node's balancer switch (``SetBalancer``, docs/dynatree.md).
Each is one call outside sessions; access and membership calls are sent
again at another node after a failure (``_unordered``), a balancer switch
again at the same node, a reconfiguration as ``reconfigure_with`` says."""

from __future__ import annotations

import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

import grpc

from amulet import access as _access
from amulet import errors
from amulet._rpc import _RETRY_CODES, BACKOFF_MAX, BACKOFF_MIN, error_kind
from amulet.routing import Routing
from amulet.suspects import Outcome, outcome_of
from amulet.v1 import amulet_pb2 as pb


class Admin:
    """Mixed into :class:`amulet.Client`, whose channels, routing and
    timeouts it uses (``_stub``, ``_peer``, ``_routing``, ``seeds``,
    ``_suspects``, ``_closed``, ``operation_timeout``,
    ``attempt_timeout``; and ``_global_node``, ``refresh_map``,
    ``status`` for reconfigurations)."""

    # ---- access control (docs/security.md, amulet.access) ----------------

    def change_access(self, change: pb.ChangeAccessRequest) -> None:
        """Orders one access change (a ``ChangeAccessRequest``: assign or
        unassign a role, grant or revoke a permission, revoke a token); it
        holds at every replica from its point of the order on. Needs the
        cluster admin role (else ``PermissionDenied``, nothing changed); a
        bad change is ``InvalidArgument``. ``grant``, ``revoke``,
        ``assign_role``, ``unassign_role`` and ``revoke_token`` make one."""
        if not isinstance(change, pb.ChangeAccessRequest) or change.WhichOneof("change") is None:
            raise errors.InvalidArgument("change_access takes a ChangeAccessRequest with one change set")
        self._unordered("change access", "ChangeAccess", change, may_apply=True)

    # ---- membership (docs/membership.md) --------------------------------

    def leave(self, node: int) -> None:
        """Member ``node`` leaves the cluster gracefully: ordered on the
        global stream, the next view removes it, self-healing moves its
        partitions onto the other live nodes, and the node stops by itself
        once it holds none (watch ``amulet status``). Needs the cluster
        admin role. ``FailedPrecondition`` (nothing changed): not an
        active member, the last member, an acceptor of the global stream
        no other live member could replace, or a partition with no other
        live node to move to;
        ``InvalidArgument``: node 0."""
        if not isinstance(node, int) or isinstance(node, bool) or not 0 <= node <= 0xFFFF_FFFF:
            raise errors.InvalidArgument(f"leave takes a node id (1 to 2**32-1), not {node!r}")
        request = pb.ChangeMembershipRequest(leave=node)
        self._unordered("leave", "ChangeMembership", request, may_apply=True)

    def join(self, peer_address: str, client_address: str) -> int:
        """A new node joins the cluster: ordered on the global stream, the
        view gets a member Joining at ``peer_address`` (where the members
        reach its peer port, ``ip:port``) that serves clients at
        ``client_address`` (``ip:port``); its observers admit it at the
        next view change once they reach it, and the balancer then moves
        partitions onto it. Returns the id the new node got (``amulet
        join`` starts the node with it). Needs the cluster admin role.
        The addresses are checked by the node: ``InvalidArgument``
        (nothing ordered) for one that is not ``ip:port``, or is
        unspecified (``0.0.0.0`` or port 0); ``FailedPrecondition``
        (nothing changed): a node of the view is already at
        ``peer_address``, or membership is not configured. As ``leave``,
        sent again at another node when one did not answer, until
        ``operation_timeout``; then ``OutcomeUnknown``, since it may have
        been ordered. A resend finding an earlier attempt ordered is
        refused ``FailedPrecondition`` (a node is at that peer address):
        after either, look at the view before asking again."""
        for name, value in (("peer_address", peer_address), ("client_address", client_address)):
            if not isinstance(value, str):
                raise errors.InvalidArgument(f"join takes {name} as a str (ip:port), not {value!r}")
        request = pb.ChangeMembershipRequest(
            join=pb.JoinRequest(peer_address=peer_address, client_address=client_address)
        )
        reply = self._unordered("join", "ChangeMembership", request, may_apply=True)
        return reply.node

    # ---- the balancer (docs/dynatree.md, "Pause and decisions") ------------

    def set_balancer(self, node: str | int, enabled: bool) -> pb.BalancerStatus:
        """Pauses (``enabled=False``) or resumes (``True``) the balancer of
        one node: ``node`` is its client address (``host:port``) or its id
        in the partition map. A paused node proposes no split, merge or
        move (one already proposed still takes effect); the node keeps the
        switch in its data directory across restarts, over its
        configuration's ``[balancer] enabled``. Each node proposes for the
        partitions it leads: ``set_balancer_everywhere`` switches them all.
        Returns the node's ``BalancerStatus`` after the change (``enabled``,
        the ``*_proposed`` counters, the ``recent`` decisions). Needs the
        cluster admin role (else ``PermissionDenied``, at once). Setting
        the switch twice is harmless, so a node that does not answer is
        asked again until ``operation_timeout`` (then ``Unavailable``: it
        may or may not have taken the switch)."""
        if not isinstance(enabled, bool):
            raise TypeError(f"enabled must be a bool, not {type(enabled).__name__}")
        request = pb.SetBalancerRequest(enabled=enabled)
        return self._unordered(
            "set balancer", "SetBalancer", request, may_apply=False, address=self._node_address(node)
        )

    def set_balancer_everywhere(self, enabled: bool) -> dict[int, pb.BalancerStatus | errors.AmuletError]:
        """``set_balancer`` at every node of the cached partition map, all at
        once: by node id, its ``BalancerStatus`` after the change, or the
        ``AmuletError`` it failed with. A node that failed (a node down, say)
        keeps its switch: set it again once it is back; the others keep the
        new one."""
        if not isinstance(enabled, bool):
            raise TypeError(f"enabled must be a bool, not {type(enabled).__name__}")
        nodes = sorted(self._routing.addresses.items())
        if not nodes:
            return {}

        def one(address: str):
            try:
                return self.set_balancer(address, enabled)
            except errors.AmuletError as e:
                return e

        with ThreadPoolExecutor(max_workers=min(len(nodes), 16), thread_name_prefix="amulet-balancer") as pool:
            answers = list(pool.map(one, [address for _, address in nodes]))
        return {node: answer for (node, _), answer in zip(nodes, answers)}

    def balancer_status(self, node: str | int) -> pb.BalancerStatus:
        """The balancer of one node (its address or id, as ``set_balancer``),
        from its ``Status``: whether it runs (``enabled``), what it proposed
        since it started (``splits_proposed``, ``load_splits_proposed``,
        ``tail_splits_proposed``, ``merges_proposed``, ``moves_proposed``)
        and its last decisions (``recent``, oldest first: ``age_ms``,
        ``map_version``, ``kind``, ``partition``, ``change``). Needs no
        role. ``ProtocolError`` from a node too old to report it."""
        status = self.status(self._node_address(node))
        if not status.HasField("balancer"):
            raise errors.ProtocolError(f"node {status.node} does not report its balancer (it predates SetBalancer)")
        return status.balancer

    def _node_address(self, node: str | int) -> str:
        """``node``'s client address: an address as is, a node id looked up
        in the partition map (fetched again once if the id is not in it)."""
        if isinstance(node, str):
            return node
        if isinstance(node, bool) or not isinstance(node, int):
            raise TypeError(f"a node is its address (str) or its id (int), not {type(node).__name__}")
        address = self._routing.addresses.get(node)
        if address is None:
            self.refresh_map()
            address = self._routing.addresses.get(node)
        if address is None:
            raise errors.InvalidArgument(f"node {node} is not in the partition map")
        return address

    # ---- repartitioning (Reconfigure) -------------------------------------

    def reconfigure(self, change: pb.ReconfigureRequest) -> int:
        """Asks the cluster to change its partitioning: ``change`` is a
        ``ReconfigureRequest`` with its change (``split``, ``merge``,
        ``replace_stream``, ``replace_global_stream`` or ``move``) set; its ``map_version`` is set
        here, to the freshest map this client can get. Returns the map
        version the change was made from once the cluster ordered and
        accepted it; every replica applies it at a fence soon after (the
        partition map's version then passes the one returned). As
        ``reconfigure_with`` with the same change at every attempt."""
        if not isinstance(change, pb.ReconfigureRequest) or change.WhichOneof("change") is None:
            raise errors.InvalidArgument("reconfigure takes a ReconfigureRequest with one change set")
        version, _ = self.reconfigure_with(lambda routing: change)
        return version

    def reconfigure_with(
        self, build: Callable[[Routing], pb.ReconfigureRequest]
    ) -> tuple[int, pb.ReconfigureRequest]:
        """Like ``reconfigure``, with the change built by ``build`` from the
        freshest map (an ``amulet.routing.Routing``) at every attempt: ids it
        allocates (``Routing.next_partition_id``, ``next_stream_id`` above
        ``running_streams()``) are fresh at the version the change is
        checked against, and a change that raced another one (``stale-map``)
        is built again on the map after it, three times at most (then
        ``Unavailable``). A node behind the map version (``behind``), or one
        whose earlier change still waits for its fence (``retryable``,
        reason ``reconfiguration-pending``), is asked again until
        ``operation_timeout``; the change goes to a replica of the first
        partition (one that executes the global stream), and to another
        after ``not-a-replica``. Not resent on an unknown outcome (a resend
        would be refused as stale or as overlapping): no answer in time is
        ``OutcomeUnknown``. A change that cannot apply is
        ``InvalidArgument`` (unknown partition, stream id in use, a cut
        outside the source's range); ``FailedPrecondition`` if the cluster
        cannot make it as configured. Returns the version and the request
        accepted."""
        if self._closed:
            raise errors.AmuletError("the client is closed")
        deadline = time.monotonic() + self.operation_timeout
        backoff = BACKOFF_MIN
        raced = 0
        while raced < 3:
            self.refresh_map()
            routing = self._routing
            request = pb.ReconfigureRequest()
            request.CopyFrom(build(routing))
            if request.WhichOneof("change") is None:
                raise errors.InvalidArgument("reconfigure: the change built has no change set")
            request.map_version = routing.version
            address, stub = self._global_node()
            try:
                stub.Reconfigure(request, timeout=max(deadline - time.monotonic(), self.attempt_timeout))
                return routing.version, request
            except grpc.RpcError as e:
                code, message, kind = e.code(), e.details() or "", error_kind(e)
                if kind == "stale-map":
                    raced += 1
                    continue
                # A node that replicates nothing (any more) executes no
                # reconfiguration: another node, by the newer map.
                if kind not in ("behind", "retryable", "not-a-replica"):
                    if code == grpc.StatusCode.DEADLINE_EXCEEDED:
                        raise errors.OutcomeUnknown(f"reconfigure: no answer in time from {address}", code) from None
                    raise errors.from_status(code, f"reconfigure at {self._peer(address)}: {message}") from None
                if time.monotonic() + backoff >= deadline:
                    raise errors.Unavailable(
                        f"reconfigure: gave up after {self.operation_timeout}s: {self._peer(address)}: {message}"
                    ) from None
            time.sleep(backoff)
            backoff = min(backoff * 2, BACKOFF_MAX)
        raise errors.Unavailable("reconfigure: the map kept changing")

    def running_streams(self) -> list[int]:
        """Every stream some node runs (from ``Status``), for stream ids to
        allocate above (``Routing.next_stream_id``): a node's configuration
        may name streams the map does not know. Nodes that do not answer
        are skipped."""
        streams: list[int] = []
        for address in self._routing.addresses.values():
            try:
                streams.extend(s.stream for s in self.status(address).streams)
            except errors.AmuletError:
                pass
        return streams

    def grant(self, role: str, map: str, permission: str) -> None:
        """``role`` gets ``permission`` (``"read"``, ``"write"`` or
        ``"admin"``) on the map or log ``map`` (``"*"``: every one),
        replacing what it had there."""
        self.change_access(_access.grant_change(role, map, permission))

    def revoke(self, role: str, map: str) -> None:
        """``role`` loses its grant on ``map``."""
        self.change_access(_access.revoke_change(role, map))

    def assign_role(self, user: str, role: str) -> None:
        """``user`` gets ``role`` (``"cluster-admin"``: everything)."""
        self.change_access(_access.assign_change(user, role))

    def unassign_role(self, user: str, role: str) -> None:
        """``user`` loses ``role`` (the last cluster admin cannot:
        ``InvalidArgument``)."""
        self.change_access(_access.unassign_change(user, role))

    def revoke_token(self, token_id) -> None:
        """The token with id ``token_id`` (``CreatedToken.id``; a
        ``CreatedToken`` itself will do, and of a whole token only its id
        is sent) stops being valid at once, everywhere: requests made with
        it are ``Unauthenticated``, those already ordered after the
        revocation too."""
        self.change_access(_access.revoke_token_change(token_id))

    def create_token(self, user: str, ttl_seconds: int = 0) -> "_access.CreatedToken":
        """A new bearer token for ``user``, valid ``ttl_seconds`` (1 to
        31,536,000; 0: a day). The secret is in the returned
        ``CreatedToken.token`` only (its repr hides it): the cluster keeps
        its digest. Needs the cluster admin role. Resent only when no node
        answered: a token made by an attempt whose answer was lost is
        never known to anyone and expires (``access().tokens`` lists it)."""
        if not isinstance(user, str):
            raise TypeError(f"the user must be a str, not {type(user).__name__}")
        if isinstance(ttl_seconds, bool) or not isinstance(ttl_seconds, int) or ttl_seconds < 0:
            raise errors.InvalidArgument(f"bad token lifetime {ttl_seconds!r}: seconds, 1 to 31,536,000 (0: a day)")
        reply = self._unordered(
            "create token", "CreateToken", pb.CreateTokenRequest(user=user, ttl_seconds=ttl_seconds), may_apply=True
        )
        return _access.CreatedToken(token=reply.token, id=reply.id, expires_unix_micros=reply.expires_unix_micros)

    def access(self, address: str | None = None) -> "_access.AccessConfiguration":
        """The access configuration (users' roles, roles' grants, tokens'
        ids, users and expiries, never their secrets) as a node last
        executed it: the node at ``address``, or any. Needs the cluster
        admin role."""
        reply = self._unordered("get access", "GetAccess", pb.GetAccessRequest(), may_apply=False, address=address)
        return _access.AccessConfiguration.from_pb(reply)

    def who_am_i(self, address: str | None = None) -> "_access.WhoAmI":
        """Who a node (the one at ``address``, or any) takes this client
        for: its user, the id of its token, its roles."""
        reply = self._unordered("who am I", "WhoAmI", pb.WhoAmIRequest(), may_apply=False, address=address)
        return _access.WhoAmI.from_pb(reply)

    def _unordered(self, what: str, method: str, request, *, may_apply: bool, address: str | None = None):
        """One call of ``method`` outside sessions (access control), at
        ``address`` or at a random node (not suspected unless every one
        is: ``amulet.suspects``; each attempt judged as a command's),
        another one after a failure. Sent again, under
        ``operation_timeout``, when the node did not take it
        (``behind``, ``retryable``, UNAVAILABLE) or did not answer in time
        (DEADLINE_EXCEEDED, CANCELLED, UNKNOWN); refused credentials and
        everything else are final. Gives up with ``Unavailable``, or
        ``OutcomeUnknown`` if ``may_apply`` and an attempt may have taken
        effect."""
        if self._closed:
            raise errors.AmuletError("the client is closed")
        deadline = time.monotonic() + self.operation_timeout
        backoff = BACKOFF_MIN
        maybe_applied = False
        failed_at = None
        while True:
            target = address
            if target is None:
                addresses = list(self._routing.addresses.values()) or list(self.seeds)
                target = self._suspects.choose(addresses, avoid=failed_at)
            try:
                reply = getattr(self._stub(target), method)(request, timeout=self.attempt_timeout)
            except grpc.RpcError as e:
                # As a command's attempt (``amulet.suspects``).
                self._suspects.judge(target, outcome_of(e))
                code, message, kind = e.code(), e.details() or "", error_kind(e)
                if kind == "reply-lost":
                    raise errors.OutcomeUnknown(f"{what}: {message}", code) from None
                if kind in ("behind", "retryable", "stale-map", "not-a-replica"):
                    pass
                elif code in _RETRY_CODES:
                    # No answer, or a broken connection: it may have been taken.
                    maybe_applied |= may_apply
                else:
                    raise errors.from_status(code, message) from None
                last = f"{self._peer(target)}: {code.name}: {message}"
                failed_at = target
            else:
                self._suspects.judge(target, Outcome.DONE)
                return reply
            if time.monotonic() + backoff >= deadline:
                why = f"{what}: gave up after {self.operation_timeout}s: {last}"
                if maybe_applied:
                    raise errors.OutcomeUnknown(why)
                raise errors.Unavailable(why)
            time.sleep(backoff)
            backoff = min(backoff * 2, BACKOFF_MAX)
