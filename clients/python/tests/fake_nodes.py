"""Test helper: a few in-process gRPC servers on 127.0.0.1 that answer the
Amulet RPCs an eventual map uses (and what a client needs to start and to
create a map), so the client's routing, resends and error mapping are
tested without an amulet binary.

The nodes share one toy eventual store: per key, a list of (dot, value);
a context is the dots it covers, as comma-separated decimal numbers. A
write supersedes the dots its context names and adds a new dot; a read
returns every value and the context of all their dots. That is enough to
see contexts flow between reads and writes (it is not DottedDB).

A node can be told to fail its next eventual requests (``node.failures``,
a list of ``(code, details, metadata)`` or a float: sleep that long, then
answer) and records every eventual request it got (``node.calls``), and
whether it applied it (``FakeCluster.calls``: all nodes' calls in the
order they came). ``FakeCluster.dead`` is an address nothing listens
on (connection refused).
"""

from __future__ import annotations

import socket
import threading
import time
from concurrent import futures

import grpc

from amulet.v1 import amulet_pb2 as pb

SERVICE = "amulet.v1.Amulet"


def _unused_address() -> str:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return f"127.0.0.1:{s.getsockname()[1]}"


class Store:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.keys: dict[tuple[str, bytes], list[tuple[int, bytes]]] = {}
        self.next_dot = 1

    @staticmethod
    def decode(context: bytes) -> set[int]:
        if not context:
            return set()
        try:
            return {int(d) for d in context.decode().split(",")}
        except ValueError:
            raise ValueError("bad context") from None

    def versioned(self, key) -> pb.Versioned:
        versions = self.keys.get(key, [])
        return pb.Versioned(
            values=[v for _, v in versions],
            context=",".join(str(d) for d, _ in versions).encode(),
        )

    def read(self, name: str, key: bytes) -> pb.Versioned:
        with self.lock:
            return self.versioned((name, key))

    def write(self, name: str, key: bytes, value: bytes | None, context: bytes) -> pb.Versioned:
        covered = self.decode(context)
        with self.lock:
            versions = [(d, v) for d, v in self.keys.get((name, key), []) if d not in covered]
            if value is not None:
                versions.append((self.next_dot, value))
                self.next_dot += 1
            self.keys[(name, key)] = versions
            return self.versioned((name, key))


class FakeNode:
    def __init__(self, cluster: "FakeCluster", node_id: int):
        self.cluster = cluster
        self.id = node_id
        self.failures: list = []
        # (method, request, applied)
        self.calls: list[tuple[str, object, bool]] = []
        self.executed: list[pb.MapRequest] = []
        self.server = grpc.server(futures.ThreadPoolExecutor(max_workers=8))
        port = self.server.add_insecure_port("127.0.0.1:0")
        self.address = f"127.0.0.1:{port}"

        def unary(fn, request, reply):
            return grpc.unary_unary_rpc_method_handler(
                fn, request_deserializer=request.FromString, response_serializer=reply.SerializeToString
            )

        handlers = {
            "GetPartitionMap": unary(lambda r, c: cluster.partition_map(), pb.GetPartitionMapRequest, pb.PartitionMap),
            "OpenSession": unary(lambda r, c: pb.SessionResponse(), pb.OpenSessionRequest, pb.SessionResponse),
            "KeepAlive": unary(lambda r, c: pb.SessionResponse(), pb.OpenSessionRequest, pb.SessionResponse),
            "CloseSession": unary(lambda r, c: pb.SessionResponse(), pb.CloseSessionRequest, pb.SessionResponse),
            "Execute": unary(self.execute, pb.MapRequest, pb.MapResponse),
            "EventualGet": unary(self.eventual("EventualGet"), pb.EventualGetRequest, pb.Versioned),
            "EventualPut": unary(self.eventual("EventualPut"), pb.EventualPutRequest, pb.Versioned),
            "EventualDelete": unary(self.eventual("EventualDelete"), pb.EventualDeleteRequest, pb.Versioned),
        }
        self.server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler(SERVICE, handlers),))

    def methods(self) -> list[str]:
        return [method for method, _, _ in self.calls]

    def execute(self, request: pb.MapRequest, context):
        self.executed.append(request)
        self.cluster.executed.append(request)
        op = request.WhichOneof("op")
        if op == "create_map":
            self.cluster.create(request.create_map.map, request.create_map.layout)
        return pb.MapResponse(done=pb.Done())

    def eventual(self, method: str):
        def handle(request, context):
            failure = self.failures.pop(0) if self.failures else None
            applied = failure is None or isinstance(failure, (int, float))
            self.calls.append((method, request, applied))
            self.cluster.calls.append((self.address, method, applied))
            if isinstance(failure, (int, float)):
                time.sleep(failure)
            elif failure is not None:
                code, details, metadata = failure
                if metadata:
                    context.set_trailing_metadata(tuple(metadata))
                context.abort(code, details)
            if request.map not in self.cluster.eventual_maps:
                context.abort(grpc.StatusCode.NOT_FOUND, f"no map named {request.map!r}")
            store = self.cluster.store
            try:
                if method == "EventualGet":
                    return store.read(request.map, request.key)
                value = request.value if method == "EventualPut" else None
                return store.write(request.map, request.key, value, request.context)
            except ValueError:
                context.set_trailing_metadata((("amulet-reason", "bad-context"),))
                context.abort(grpc.StatusCode.INVALID_ARGUMENT, "the context does not decode")

        return handle


class FakeCluster:
    def __init__(self, nodes: int = 3, dead: bool = False, maps=("carts",)):
        self.store = Store()
        # (address, method, applied) of every eventual request, in order.
        self.calls: list[tuple[str, str, bool]] = []
        # Every Execute request, in order.
        self.executed: list[pb.MapRequest] = []
        self.version = 1
        self.eventual_maps: dict[str, pb.EventualLayout] = {
            name: pb.EventualLayout(replicas=3) for name in maps
        }
        self.nodes = [FakeNode(self, i + 1) for i in range(nodes)]
        self.dead = _unused_address() if dead else None

    @property
    def addresses(self) -> list[str]:
        return [n.address for n in self.nodes]

    def node(self, address: str) -> FakeNode:
        return next(n for n in self.nodes if n.address == address)

    def create(self, name: str, layout: pb.Layout) -> None:
        if layout.WhichOneof("kind") == "eventual":
            self.eventual_maps[name] = layout.eventual
        self.version += 1

    def partition_map(self) -> pb.PartitionMap:
        nodes = [pb.NodeAddress(node=n.id, address=n.address) for n in self.nodes]
        if self.dead is not None:
            nodes.append(pb.NodeAddress(node=len(self.nodes) + 1, address=self.dead))
        return pb.PartitionMap(
            version=self.version,
            global_stream=0,
            partitions=[pb.Partition(id=1, stream=1, replicas=[n.id for n in self.nodes])],
            token_ring=[pb.TokenRange(first_token=0, partition=1)],
            keyspaces=[
                pb.Keyspace(name=name, layout=pb.Layout(eventual=layout)) for name, layout in self.eventual_maps.items()
            ],
            nodes=nodes,
        )

    def start(self) -> "FakeCluster":
        for node in self.nodes:
            node.server.start()
        return self

    def stop(self) -> None:
        for node in self.nodes:
            node.server.stop(grace=None).wait(5)
