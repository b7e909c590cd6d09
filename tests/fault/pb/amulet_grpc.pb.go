// The Amulet client API, version 1.
//
// A client keeps a cached partition map (GetPartitionMap), opens a session
// (OpenSession, with a session id it draws at random), and sends every map
// operation to one replica of the partition that holds its key (Execute),
// stamped with its map version and the session's next sequence number.
// Operations that span partitions (size, clear, putAll over several
// partitions, range reads of hash maps, snapshots) go to a replica of the
// first partition involved; the cluster orders them on the global stream.
//
// Errors are gRPC statuses; the ones a client library handles by itself
// also carry the metadata key `amulet-error`:
//
// | status              | amulet-error     | meaning / what to do                                   |
// |---------------------|------------------|--------------------------------------------------------|
// | INVALID_ARGUMENT    |                  | key or value too large, bad range, bad map name, bad   |
// |                     |                  | lease, putAll too large, missing field, a map layout   |
// |                     |                  | or partition change breaking a rule, a commit too      |
// |                     |                  | large or of a bad shape, a read version the cluster    |
// |                     |                  | never gave: fix the request                            |
// | NOT_FOUND           |                  | unknown map, unknown snapshot, unknown log             |
// | ALREADY_EXISTS      |                  | CreateMap or CreateLog of a name a map or log has      |
// | OUT_OF_RANGE        |                  | a log read below the log's first position (trimmed),   |
// |                     |                  | or a read or trim past its end                         |
// | FAILED_PRECONDITION | stale-map        | the client's map is old: GetPartitionMap, resend       |
// | FAILED_PRECONDITION | not-a-replica    | this node does not replicate the partition: same       |
// | FAILED_PRECONDITION | session-expired  | open a new session, resend                             |
// | FAILED_PRECONDITION | stale-sequence   | the session already ran a later sequence               |
// | FAILED_PRECONDITION |                  | the cluster is not configured for the request (no      |
// |                     |                  | DMap; a move without checkpoints): change the cluster  |
// | ABORTED             | retryable        | refused for a passing state of the cluster (another    |
// |                     |                  | reconfiguration is taking effect): resend after a      |
// |                     |                  | pause (a reconfiguration: from the new map); not       |
// |                     |                  | ordered or not applied                                 |
// | ABORTED             | conflict         | a transaction's commit: a key it read (metadata        |
// |                     |                  | amulet-conflict-map, amulet-conflict-key-bin) was      |
// |                     |                  | written after its read version; nothing applied: run   |
// |                     |                  | the transaction again from a new read version          |
// | ABORTED             | read-version-too-old | the read version's lease ended or it was ended:    |
// |                     |                  | nothing applied; run the transaction again             |
// | UNAVAILABLE         | read-version-elsewhere | this replica was restored since the read version |
// |                     |                  | was taken and holds no snapshot of it: read from       |
// |                     |                  | another replica                                        |
// | RESOURCE_EXHAUSTED  |                  | too many open snapshots or read versions: end some     |
// | DEADLINE_EXCEEDED   |                  | not ordered in time: resend with the same sequence     |
// | UNKNOWN             | reply-lost       | it took effect; part of its reply is no longer held    |
// | UNAVAILABLE         | behind           | the replica has not reached the client's map version,  |
// |                     |                  | or is catching up with its streams (restarted): resend |
// |                     |                  | (later, or to another replica); not ordered            |
// | UNAVAILABLE         |                  | the node is stopping or not ready: try another replica |
//
// A request the cluster refused (INVALID_ARGUMENT, FAILED_PRECONDITION or
// ABORTED from a replica's or a node's verdict, not from decoding) also
// carries the metadata key `amulet-reason`, a stable kebab-case name of
// the reason, so programs tell reasons apart without parsing messages:
//
// | amulet-reason               | status              | the request                              |
// |-----------------------------|---------------------|------------------------------------------|
// | reconfiguration-pending     | ABORTED (retryable) | came before an earlier change's fence    |
// | session-id-missing          | INVALID_ARGUMENT    | opens or renews a session without id     |
// | session-lease-out-of-bounds | INVALID_ARGUMENT    | asks for a lease of 0 or above the limit |
// | close-without-session       | INVALID_ARGUMENT    | closes a session without id              |
// | needs-global-stream         | INVALID_ARGUMENT    | spans partitions on a partition's stream |
// |                             |                     | (only a faulty node proposes one)        |
// | move-needs-checkpoints      | FAILED_PRECONDITION | moves a partition; checkpoints are off   |
// | no-dmap                     | FAILED_PRECONDITION | reached a node that serves no DMap       |
// | no-partitions               | INVALID_ARGUMENT    | would make a partition map that breaks   |
// | partition-without-replicas  |                     | the rule named (the message says which   |
// | shared-stream               |                     | partition, stream, node or key)          |
// | bad-token-ring              |                     |                                          |
// | bad-ranges                  |                     |                                          |
// | stream-in-use               |                     |                                          |
// | even-acceptors              |                     |                                          |
// | no-partition-to-split       |                     |                                          |
// | partition-exists            |                     |                                          |
// | split-stream-members        |                     |                                          |
// | split-moves-nothing         |                     |                                          |
// | token-outside-segment       |                     |                                          |
// | not-a-range-keyspace        |                     |                                          |
// | key-outside-range           |                     |                                          |
// | merge-unknown-partition     |                     |                                          |
// | merge-into-itself           |                     |                                          |
// | merge-replicas-differ       |                     |                                          |
// | no-partition                |                     |                                          |
// | replicas-must-learn         |                     |                                          |
// | move-replicas-not-distinct  |                     |                                          |
// | move-members-must-learn     |                     |                                          |
// | move-to-idle-node           |                     |                                          |
// | eventual-replicas           | INVALID_ARGUMENT    | creates an eventual map with 0 replicas, |
// |                             |                     | more than the nodes, or vnodes out of    |
// |                             |                     | 1..=1024                                 |
// | bad-context                 | INVALID_ARGUMENT    | gives a context that does not decode     |
// | quorum-out-of-bounds        | INVALID_ARGUMENT    | asks for r or w above the replica count  |
// | not-eventual                | FAILED_PRECONDITION | an eventual op on an ordered map         |
// | eventual-map                | FAILED_PRECONDITION | an ordered op (Execute) on an eventual   |
// |                             |                     | map                                      |
// | quorum-not-reached          | UNAVAILABLE         | eventual op: too few replicas answered   |
//
// A request that fails with any of these changed nothing, except
// DEADLINE_EXCEEDED and UNAVAILABLE (it may have taken effect; resending
// with the same session and sequence applies it at most once) and
// reply-lost.

// Code generated by protoc-gen-go-grpc. DO NOT EDIT.
// versions:
// - protoc-gen-go-grpc v1.6.0
// - protoc             v3.21.12
// source: amulet/v1/amulet.proto

package pb

import (
	context "context"
	grpc "google.golang.org/grpc"
	codes "google.golang.org/grpc/codes"
	status "google.golang.org/grpc/status"
)

// This is a compile-time assertion to ensure that this generated file
// is compatible with the grpc package it is being compiled against.
// Requires gRPC-Go v1.64.0 or later.
const _ = grpc.SupportPackageIsVersion9

const (
	Amulet_GetPartitionMap_FullMethodName = "/amulet.v1.Amulet/GetPartitionMap"
	Amulet_OpenSession_FullMethodName     = "/amulet.v1.Amulet/OpenSession"
	Amulet_KeepAlive_FullMethodName       = "/amulet.v1.Amulet/KeepAlive"
	Amulet_CloseSession_FullMethodName    = "/amulet.v1.Amulet/CloseSession"
	Amulet_Execute_FullMethodName         = "/amulet.v1.Amulet/Execute"
	Amulet_ExecuteBatch_FullMethodName    = "/amulet.v1.Amulet/ExecuteBatch"
	Amulet_ReadSnapshot_FullMethodName    = "/amulet.v1.Amulet/ReadSnapshot"
	Amulet_TailLog_FullMethodName         = "/amulet.v1.Amulet/TailLog"
	Amulet_ReadAt_FullMethodName          = "/amulet.v1.Amulet/ReadAt"
	Amulet_Status_FullMethodName          = "/amulet.v1.Amulet/Status"
	Amulet_Reconfigure_FullMethodName     = "/amulet.v1.Amulet/Reconfigure"
	Amulet_EventualGet_FullMethodName     = "/amulet.v1.Amulet/EventualGet"
	Amulet_EventualPut_FullMethodName     = "/amulet.v1.Amulet/EventualPut"
	Amulet_EventualDelete_FullMethodName  = "/amulet.v1.Amulet/EventualDelete"
)

// AmuletClient is the client API for Amulet service.
//
// For semantics around ctx use and closing/ending streaming RPCs, please refer to https://pkg.go.dev/google.golang.org/grpc/?tab=doc#ClientConn.NewStream.
type AmuletClient interface {
	// The partition map and where to reach every node.
	GetPartitionMap(ctx context.Context, in *GetPartitionMapRequest, opts ...grpc.CallOption) (*PartitionMap, error)
	// Opens (or renews) a session; ordered on the global stream.
	OpenSession(ctx context.Context, in *OpenSessionRequest, opts ...grpc.CallOption) (*SessionResponse, error)
	// Extends a session's lease.
	KeepAlive(ctx context.Context, in *OpenSessionRequest, opts ...grpc.CallOption) (*SessionResponse, error)
	// Ends a session and forgets its replies.
	CloseSession(ctx context.Context, in *CloseSessionRequest, opts ...grpc.CallOption) (*SessionResponse, error)
	// One map operation.
	Execute(ctx context.Context, in *MapRequest, opts ...grpc.CallOption) (*MapResponse, error)
	// Several map operations in one call (at most 1,024): each is a request
	// of its own (own header, session and sequence) with an outcome of its
	// own, in the same order, exactly as if sent by Execute. A client library
	// batches the operations its tasks issue concurrently to one node, so
	// many operations share one round trip and one proposal batch.
	ExecuteBatch(ctx context.Context, in *MapRequestBatch, opts ...grpc.CallOption) (*MapResponseBatch, error)
	// Streams the pages of one partition's part of an open snapshot, in key
	// order, served by this replica without ordering.
	ReadSnapshot(ctx context.Context, in *ReadSnapshotRequest, opts ...grpc.CallOption) (grpc.ServerStreamingClient[SnapshotPage], error)
	// Follows a log (docs/logs.md): streams its entries from position
	// `from`, in order, as this node's replica of the log's partition
	// executes them, and never ends by itself. Served without ordering: a
	// replica executes a prefix of the agreed order, so every entry is
	// decided and at its position everywhere; a replica behind its peers
	// only serves later. Each message is a LogEntries at the position after
	// the previous one's entries (at most max_bytes, at least one entry);
	// a message without entries is a heartbeat (about every second while
	// nothing is appended) with the log's bounds here. After a disconnect,
	// call again from the position after the last entry received. A replica
	// behind its peers may still serve entries a trim acknowledged elsewhere
	// has dropped: a client that must not see them checks the bounds with
	// LogBounds (ordered) before it opens the stream.
	// The stream ends with: NOT_FOUND (unknown or dropped log),
	// OUT_OF_RANGE (`from`, or the tail's position later, below the first
	// position: trimmed; or past the log's end for 10 s),
	// FAILED_PRECONDITION not-a-replica (no replica here holds the log:
	// it lives elsewhere or moved; the newest map rides along), UNAVAILABLE
	// behind (this replica is catching up, or its map is older than
	// map_version for 10 s: call another replica),
	// INVALID_ARGUMENT (a bad log name).
	TailLog(ctx context.Context, in *TailLogRequest, opts ...grpc.CallOption) (grpc.ServerStreamingClient[LogEntries], error)
	// One read of a transaction at its read version, served by this node's
	// replica of the header's partition without ordering.
	ReadAt(ctx context.Context, in *ReadAtRequest, opts ...grpc.CallOption) (*ReadAtResponse, error)
	// This node's view of the cluster.
	Status(ctx context.Context, in *StatusRequest, opts ...grpc.CallOption) (*StatusResponse, error)
	// Changes the partitioning online (an operator's request, ordered on the
	// global stream): split a partition, merge two, or move a partition to a
	// new stream (other acceptors). Answered once ordered and accepted; every
	// replica applies it at the fence of a barrier that follows, at the same
	// point of the order; watch GetPartitionMap/Status for the new version.
	// INVALID_ARGUMENT explains a change that cannot apply (unknown
	// partition, stream id in use, even acceptor count, a cut outside the
	// source's range); ABORTED `retryable` (reason reconfiguration-pending)
	// says another change is still taking effect: compute the change again
	// from the new map and resend; FAILED_PRECONDITION (reason
	// move-needs-checkpoints) that the cluster cannot move partitions as
	// configured.
	Reconfigure(ctx context.Context, in *ReconfigureRequest, opts ...grpc.CallOption) (*ReconfigureResponse, error)
	// Eventual maps (maps created with an EventualLayout; DottedDB,
	// docs/eventual-maps.md): served by the key's replicas without
	// ordering, writable on any side of a partition. Any node takes the
	// request and forwards it to the key's replicas. A read returns every
	// concurrent value (siblings) and an opaque causal context; a write or
	// delete given that context supersedes exactly the values the read
	// returned (a write with an empty context supersedes nothing: it adds a
	// sibling). `r` and `w` count the replicas that must answer (0: a
	// majority of the map's replicas; at most the replica count).
	// Statuses: NOT_FOUND (unknown map), FAILED_PRECONDITION reason
	// not-eventual (the map is ordered: use Execute), INVALID_ARGUMENT
	// (reasons bad-context, quorum-out-of-bounds; a key or value too
	// large), UNAVAILABLE reason quorum-not-reached (fewer than r or w
	// replicas answered within 2 s: a write may still have taken effect at
	// some replicas, and then shows as a sibling or is superseded as any
	// other write).
	EventualGet(ctx context.Context, in *EventualGetRequest, opts ...grpc.CallOption) (*Versioned, error)
	EventualPut(ctx context.Context, in *EventualPutRequest, opts ...grpc.CallOption) (*Versioned, error)
	EventualDelete(ctx context.Context, in *EventualDeleteRequest, opts ...grpc.CallOption) (*Versioned, error)
}

type amuletClient struct {
	cc grpc.ClientConnInterface
}

func NewAmuletClient(cc grpc.ClientConnInterface) AmuletClient {
	return &amuletClient{cc}
}

func (c *amuletClient) GetPartitionMap(ctx context.Context, in *GetPartitionMapRequest, opts ...grpc.CallOption) (*PartitionMap, error) {
	cOpts := append([]grpc.CallOption{grpc.StaticMethod()}, opts...)
	out := new(PartitionMap)
	err := c.cc.Invoke(ctx, Amulet_GetPartitionMap_FullMethodName, in, out, cOpts...)
	if err != nil {
		return nil, err
	}
	return out, nil
}

func (c *amuletClient) OpenSession(ctx context.Context, in *OpenSessionRequest, opts ...grpc.CallOption) (*SessionResponse, error) {
	cOpts := append([]grpc.CallOption{grpc.StaticMethod()}, opts...)
	out := new(SessionResponse)
	err := c.cc.Invoke(ctx, Amulet_OpenSession_FullMethodName, in, out, cOpts...)
	if err != nil {
		return nil, err
	}
	return out, nil
}

func (c *amuletClient) KeepAlive(ctx context.Context, in *OpenSessionRequest, opts ...grpc.CallOption) (*SessionResponse, error) {
	cOpts := append([]grpc.CallOption{grpc.StaticMethod()}, opts...)
	out := new(SessionResponse)
	err := c.cc.Invoke(ctx, Amulet_KeepAlive_FullMethodName, in, out, cOpts...)
	if err != nil {
		return nil, err
	}
	return out, nil
}

func (c *amuletClient) CloseSession(ctx context.Context, in *CloseSessionRequest, opts ...grpc.CallOption) (*SessionResponse, error) {
	cOpts := append([]grpc.CallOption{grpc.StaticMethod()}, opts...)
	out := new(SessionResponse)
	err := c.cc.Invoke(ctx, Amulet_CloseSession_FullMethodName, in, out, cOpts...)
	if err != nil {
		return nil, err
	}
	return out, nil
}

func (c *amuletClient) Execute(ctx context.Context, in *MapRequest, opts ...grpc.CallOption) (*MapResponse, error) {
	cOpts := append([]grpc.CallOption{grpc.StaticMethod()}, opts...)
	out := new(MapResponse)
	err := c.cc.Invoke(ctx, Amulet_Execute_FullMethodName, in, out, cOpts...)
	if err != nil {
		return nil, err
	}
	return out, nil
}

func (c *amuletClient) ExecuteBatch(ctx context.Context, in *MapRequestBatch, opts ...grpc.CallOption) (*MapResponseBatch, error) {
	cOpts := append([]grpc.CallOption{grpc.StaticMethod()}, opts...)
	out := new(MapResponseBatch)
	err := c.cc.Invoke(ctx, Amulet_ExecuteBatch_FullMethodName, in, out, cOpts...)
	if err != nil {
		return nil, err
	}
	return out, nil
}

func (c *amuletClient) ReadSnapshot(ctx context.Context, in *ReadSnapshotRequest, opts ...grpc.CallOption) (grpc.ServerStreamingClient[SnapshotPage], error) {
	cOpts := append([]grpc.CallOption{grpc.StaticMethod()}, opts...)
	stream, err := c.cc.NewStream(ctx, &Amulet_ServiceDesc.Streams[0], Amulet_ReadSnapshot_FullMethodName, cOpts...)
	if err != nil {
		return nil, err
	}
	x := &grpc.GenericClientStream[ReadSnapshotRequest, SnapshotPage]{ClientStream: stream}
	if err := x.ClientStream.SendMsg(in); err != nil {
		return nil, err
	}
	if err := x.ClientStream.CloseSend(); err != nil {
		return nil, err
	}
	return x, nil
}

// This type alias is provided for backwards compatibility with existing code that references the prior non-generic stream type by name.
type Amulet_ReadSnapshotClient = grpc.ServerStreamingClient[SnapshotPage]

func (c *amuletClient) TailLog(ctx context.Context, in *TailLogRequest, opts ...grpc.CallOption) (grpc.ServerStreamingClient[LogEntries], error) {
	cOpts := append([]grpc.CallOption{grpc.StaticMethod()}, opts...)
	stream, err := c.cc.NewStream(ctx, &Amulet_ServiceDesc.Streams[1], Amulet_TailLog_FullMethodName, cOpts...)
	if err != nil {
		return nil, err
	}
	x := &grpc.GenericClientStream[TailLogRequest, LogEntries]{ClientStream: stream}
	if err := x.ClientStream.SendMsg(in); err != nil {
		return nil, err
	}
	if err := x.ClientStream.CloseSend(); err != nil {
		return nil, err
	}
	return x, nil
}

// This type alias is provided for backwards compatibility with existing code that references the prior non-generic stream type by name.
type Amulet_TailLogClient = grpc.ServerStreamingClient[LogEntries]

func (c *amuletClient) ReadAt(ctx context.Context, in *ReadAtRequest, opts ...grpc.CallOption) (*ReadAtResponse, error) {
	cOpts := append([]grpc.CallOption{grpc.StaticMethod()}, opts...)
	out := new(ReadAtResponse)
	err := c.cc.Invoke(ctx, Amulet_ReadAt_FullMethodName, in, out, cOpts...)
	if err != nil {
		return nil, err
	}
	return out, nil
}

func (c *amuletClient) Status(ctx context.Context, in *StatusRequest, opts ...grpc.CallOption) (*StatusResponse, error) {
	cOpts := append([]grpc.CallOption{grpc.StaticMethod()}, opts...)
	out := new(StatusResponse)
	err := c.cc.Invoke(ctx, Amulet_Status_FullMethodName, in, out, cOpts...)
	if err != nil {
		return nil, err
	}
	return out, nil
}

func (c *amuletClient) Reconfigure(ctx context.Context, in *ReconfigureRequest, opts ...grpc.CallOption) (*ReconfigureResponse, error) {
	cOpts := append([]grpc.CallOption{grpc.StaticMethod()}, opts...)
	out := new(ReconfigureResponse)
	err := c.cc.Invoke(ctx, Amulet_Reconfigure_FullMethodName, in, out, cOpts...)
	if err != nil {
		return nil, err
	}
	return out, nil
}

func (c *amuletClient) EventualGet(ctx context.Context, in *EventualGetRequest, opts ...grpc.CallOption) (*Versioned, error) {
	cOpts := append([]grpc.CallOption{grpc.StaticMethod()}, opts...)
	out := new(Versioned)
	err := c.cc.Invoke(ctx, Amulet_EventualGet_FullMethodName, in, out, cOpts...)
	if err != nil {
		return nil, err
	}
	return out, nil
}

func (c *amuletClient) EventualPut(ctx context.Context, in *EventualPutRequest, opts ...grpc.CallOption) (*Versioned, error) {
	cOpts := append([]grpc.CallOption{grpc.StaticMethod()}, opts...)
	out := new(Versioned)
	err := c.cc.Invoke(ctx, Amulet_EventualPut_FullMethodName, in, out, cOpts...)
	if err != nil {
		return nil, err
	}
	return out, nil
}

func (c *amuletClient) EventualDelete(ctx context.Context, in *EventualDeleteRequest, opts ...grpc.CallOption) (*Versioned, error) {
	cOpts := append([]grpc.CallOption{grpc.StaticMethod()}, opts...)
	out := new(Versioned)
	err := c.cc.Invoke(ctx, Amulet_EventualDelete_FullMethodName, in, out, cOpts...)
	if err != nil {
		return nil, err
	}
	return out, nil
}

// AmuletServer is the server API for Amulet service.
// All implementations must embed UnimplementedAmuletServer
// for forward compatibility.
type AmuletServer interface {
	// The partition map and where to reach every node.
	GetPartitionMap(context.Context, *GetPartitionMapRequest) (*PartitionMap, error)
	// Opens (or renews) a session; ordered on the global stream.
	OpenSession(context.Context, *OpenSessionRequest) (*SessionResponse, error)
	// Extends a session's lease.
	KeepAlive(context.Context, *OpenSessionRequest) (*SessionResponse, error)
	// Ends a session and forgets its replies.
	CloseSession(context.Context, *CloseSessionRequest) (*SessionResponse, error)
	// One map operation.
	Execute(context.Context, *MapRequest) (*MapResponse, error)
	// Several map operations in one call (at most 1,024): each is a request
	// of its own (own header, session and sequence) with an outcome of its
	// own, in the same order, exactly as if sent by Execute. A client library
	// batches the operations its tasks issue concurrently to one node, so
	// many operations share one round trip and one proposal batch.
	ExecuteBatch(context.Context, *MapRequestBatch) (*MapResponseBatch, error)
	// Streams the pages of one partition's part of an open snapshot, in key
	// order, served by this replica without ordering.
	ReadSnapshot(*ReadSnapshotRequest, grpc.ServerStreamingServer[SnapshotPage]) error
	// Follows a log (docs/logs.md): streams its entries from position
	// `from`, in order, as this node's replica of the log's partition
	// executes them, and never ends by itself. Served without ordering: a
	// replica executes a prefix of the agreed order, so every entry is
	// decided and at its position everywhere; a replica behind its peers
	// only serves later. Each message is a LogEntries at the position after
	// the previous one's entries (at most max_bytes, at least one entry);
	// a message without entries is a heartbeat (about every second while
	// nothing is appended) with the log's bounds here. After a disconnect,
	// call again from the position after the last entry received. A replica
	// behind its peers may still serve entries a trim acknowledged elsewhere
	// has dropped: a client that must not see them checks the bounds with
	// LogBounds (ordered) before it opens the stream.
	// The stream ends with: NOT_FOUND (unknown or dropped log),
	// OUT_OF_RANGE (`from`, or the tail's position later, below the first
	// position: trimmed; or past the log's end for 10 s),
	// FAILED_PRECONDITION not-a-replica (no replica here holds the log:
	// it lives elsewhere or moved; the newest map rides along), UNAVAILABLE
	// behind (this replica is catching up, or its map is older than
	// map_version for 10 s: call another replica),
	// INVALID_ARGUMENT (a bad log name).
	TailLog(*TailLogRequest, grpc.ServerStreamingServer[LogEntries]) error
	// One read of a transaction at its read version, served by this node's
	// replica of the header's partition without ordering.
	ReadAt(context.Context, *ReadAtRequest) (*ReadAtResponse, error)
	// This node's view of the cluster.
	Status(context.Context, *StatusRequest) (*StatusResponse, error)
	// Changes the partitioning online (an operator's request, ordered on the
	// global stream): split a partition, merge two, or move a partition to a
	// new stream (other acceptors). Answered once ordered and accepted; every
	// replica applies it at the fence of a barrier that follows, at the same
	// point of the order; watch GetPartitionMap/Status for the new version.
	// INVALID_ARGUMENT explains a change that cannot apply (unknown
	// partition, stream id in use, even acceptor count, a cut outside the
	// source's range); ABORTED `retryable` (reason reconfiguration-pending)
	// says another change is still taking effect: compute the change again
	// from the new map and resend; FAILED_PRECONDITION (reason
	// move-needs-checkpoints) that the cluster cannot move partitions as
	// configured.
	Reconfigure(context.Context, *ReconfigureRequest) (*ReconfigureResponse, error)
	// Eventual maps (maps created with an EventualLayout; DottedDB,
	// docs/eventual-maps.md): served by the key's replicas without
	// ordering, writable on any side of a partition. Any node takes the
	// request and forwards it to the key's replicas. A read returns every
	// concurrent value (siblings) and an opaque causal context; a write or
	// delete given that context supersedes exactly the values the read
	// returned (a write with an empty context supersedes nothing: it adds a
	// sibling). `r` and `w` count the replicas that must answer (0: a
	// majority of the map's replicas; at most the replica count).
	// Statuses: NOT_FOUND (unknown map), FAILED_PRECONDITION reason
	// not-eventual (the map is ordered: use Execute), INVALID_ARGUMENT
	// (reasons bad-context, quorum-out-of-bounds; a key or value too
	// large), UNAVAILABLE reason quorum-not-reached (fewer than r or w
	// replicas answered within 2 s: a write may still have taken effect at
	// some replicas, and then shows as a sibling or is superseded as any
	// other write).
	EventualGet(context.Context, *EventualGetRequest) (*Versioned, error)
	EventualPut(context.Context, *EventualPutRequest) (*Versioned, error)
	EventualDelete(context.Context, *EventualDeleteRequest) (*Versioned, error)
	mustEmbedUnimplementedAmuletServer()
}

// UnimplementedAmuletServer must be embedded to have
// forward compatible implementations.
//
// NOTE: this should be embedded by value instead of pointer to avoid a nil
// pointer dereference when methods are called.
type UnimplementedAmuletServer struct{}

func (UnimplementedAmuletServer) GetPartitionMap(context.Context, *GetPartitionMapRequest) (*PartitionMap, error) {
	return nil, status.Error(codes.Unimplemented, "method GetPartitionMap not implemented")
}
func (UnimplementedAmuletServer) OpenSession(context.Context, *OpenSessionRequest) (*SessionResponse, error) {
	return nil, status.Error(codes.Unimplemented, "method OpenSession not implemented")
}
func (UnimplementedAmuletServer) KeepAlive(context.Context, *OpenSessionRequest) (*SessionResponse, error) {
	return nil, status.Error(codes.Unimplemented, "method KeepAlive not implemented")
}
func (UnimplementedAmuletServer) CloseSession(context.Context, *CloseSessionRequest) (*SessionResponse, error) {
	return nil, status.Error(codes.Unimplemented, "method CloseSession not implemented")
}
func (UnimplementedAmuletServer) Execute(context.Context, *MapRequest) (*MapResponse, error) {
	return nil, status.Error(codes.Unimplemented, "method Execute not implemented")
}
func (UnimplementedAmuletServer) ExecuteBatch(context.Context, *MapRequestBatch) (*MapResponseBatch, error) {
	return nil, status.Error(codes.Unimplemented, "method ExecuteBatch not implemented")
}
func (UnimplementedAmuletServer) ReadSnapshot(*ReadSnapshotRequest, grpc.ServerStreamingServer[SnapshotPage]) error {
	return status.Error(codes.Unimplemented, "method ReadSnapshot not implemented")
}
func (UnimplementedAmuletServer) TailLog(*TailLogRequest, grpc.ServerStreamingServer[LogEntries]) error {
	return status.Error(codes.Unimplemented, "method TailLog not implemented")
}
func (UnimplementedAmuletServer) ReadAt(context.Context, *ReadAtRequest) (*ReadAtResponse, error) {
	return nil, status.Error(codes.Unimplemented, "method ReadAt not implemented")
}
func (UnimplementedAmuletServer) Status(context.Context, *StatusRequest) (*StatusResponse, error) {
	return nil, status.Error(codes.Unimplemented, "method Status not implemented")
}
func (UnimplementedAmuletServer) Reconfigure(context.Context, *ReconfigureRequest) (*ReconfigureResponse, error) {
	return nil, status.Error(codes.Unimplemented, "method Reconfigure not implemented")
}
func (UnimplementedAmuletServer) EventualGet(context.Context, *EventualGetRequest) (*Versioned, error) {
	return nil, status.Error(codes.Unimplemented, "method EventualGet not implemented")
}
func (UnimplementedAmuletServer) EventualPut(context.Context, *EventualPutRequest) (*Versioned, error) {
	return nil, status.Error(codes.Unimplemented, "method EventualPut not implemented")
}
func (UnimplementedAmuletServer) EventualDelete(context.Context, *EventualDeleteRequest) (*Versioned, error) {
	return nil, status.Error(codes.Unimplemented, "method EventualDelete not implemented")
}
func (UnimplementedAmuletServer) mustEmbedUnimplementedAmuletServer() {}
func (UnimplementedAmuletServer) testEmbeddedByValue()                {}

// UnsafeAmuletServer may be embedded to opt out of forward compatibility for this service.
// Use of this interface is not recommended, as added methods to AmuletServer will
// result in compilation errors.
type UnsafeAmuletServer interface {
	mustEmbedUnimplementedAmuletServer()
}

func RegisterAmuletServer(s grpc.ServiceRegistrar, srv AmuletServer) {
	// If the following call panics, it indicates UnimplementedAmuletServer was
	// embedded by pointer and is nil.  This will cause panics if an
	// unimplemented method is ever invoked, so we test this at initialization
	// time to prevent it from happening at runtime later due to I/O.
	if t, ok := srv.(interface{ testEmbeddedByValue() }); ok {
		t.testEmbeddedByValue()
	}
	s.RegisterService(&Amulet_ServiceDesc, srv)
}

func _Amulet_GetPartitionMap_Handler(srv interface{}, ctx context.Context, dec func(interface{}) error, interceptor grpc.UnaryServerInterceptor) (interface{}, error) {
	in := new(GetPartitionMapRequest)
	if err := dec(in); err != nil {
		return nil, err
	}
	if interceptor == nil {
		return srv.(AmuletServer).GetPartitionMap(ctx, in)
	}
	info := &grpc.UnaryServerInfo{
		Server:     srv,
		FullMethod: Amulet_GetPartitionMap_FullMethodName,
	}
	handler := func(ctx context.Context, req interface{}) (interface{}, error) {
		return srv.(AmuletServer).GetPartitionMap(ctx, req.(*GetPartitionMapRequest))
	}
	return interceptor(ctx, in, info, handler)
}

func _Amulet_OpenSession_Handler(srv interface{}, ctx context.Context, dec func(interface{}) error, interceptor grpc.UnaryServerInterceptor) (interface{}, error) {
	in := new(OpenSessionRequest)
	if err := dec(in); err != nil {
		return nil, err
	}
	if interceptor == nil {
		return srv.(AmuletServer).OpenSession(ctx, in)
	}
	info := &grpc.UnaryServerInfo{
		Server:     srv,
		FullMethod: Amulet_OpenSession_FullMethodName,
	}
	handler := func(ctx context.Context, req interface{}) (interface{}, error) {
		return srv.(AmuletServer).OpenSession(ctx, req.(*OpenSessionRequest))
	}
	return interceptor(ctx, in, info, handler)
}

func _Amulet_KeepAlive_Handler(srv interface{}, ctx context.Context, dec func(interface{}) error, interceptor grpc.UnaryServerInterceptor) (interface{}, error) {
	in := new(OpenSessionRequest)
	if err := dec(in); err != nil {
		return nil, err
	}
	if interceptor == nil {
		return srv.(AmuletServer).KeepAlive(ctx, in)
	}
	info := &grpc.UnaryServerInfo{
		Server:     srv,
		FullMethod: Amulet_KeepAlive_FullMethodName,
	}
	handler := func(ctx context.Context, req interface{}) (interface{}, error) {
		return srv.(AmuletServer).KeepAlive(ctx, req.(*OpenSessionRequest))
	}
	return interceptor(ctx, in, info, handler)
}

func _Amulet_CloseSession_Handler(srv interface{}, ctx context.Context, dec func(interface{}) error, interceptor grpc.UnaryServerInterceptor) (interface{}, error) {
	in := new(CloseSessionRequest)
	if err := dec(in); err != nil {
		return nil, err
	}
	if interceptor == nil {
		return srv.(AmuletServer).CloseSession(ctx, in)
	}
	info := &grpc.UnaryServerInfo{
		Server:     srv,
		FullMethod: Amulet_CloseSession_FullMethodName,
	}
	handler := func(ctx context.Context, req interface{}) (interface{}, error) {
		return srv.(AmuletServer).CloseSession(ctx, req.(*CloseSessionRequest))
	}
	return interceptor(ctx, in, info, handler)
}

func _Amulet_Execute_Handler(srv interface{}, ctx context.Context, dec func(interface{}) error, interceptor grpc.UnaryServerInterceptor) (interface{}, error) {
	in := new(MapRequest)
	if err := dec(in); err != nil {
		return nil, err
	}
	if interceptor == nil {
		return srv.(AmuletServer).Execute(ctx, in)
	}
	info := &grpc.UnaryServerInfo{
		Server:     srv,
		FullMethod: Amulet_Execute_FullMethodName,
	}
	handler := func(ctx context.Context, req interface{}) (interface{}, error) {
		return srv.(AmuletServer).Execute(ctx, req.(*MapRequest))
	}
	return interceptor(ctx, in, info, handler)
}

func _Amulet_ExecuteBatch_Handler(srv interface{}, ctx context.Context, dec func(interface{}) error, interceptor grpc.UnaryServerInterceptor) (interface{}, error) {
	in := new(MapRequestBatch)
	if err := dec(in); err != nil {
		return nil, err
	}
	if interceptor == nil {
		return srv.(AmuletServer).ExecuteBatch(ctx, in)
	}
	info := &grpc.UnaryServerInfo{
		Server:     srv,
		FullMethod: Amulet_ExecuteBatch_FullMethodName,
	}
	handler := func(ctx context.Context, req interface{}) (interface{}, error) {
		return srv.(AmuletServer).ExecuteBatch(ctx, req.(*MapRequestBatch))
	}
	return interceptor(ctx, in, info, handler)
}

func _Amulet_ReadSnapshot_Handler(srv interface{}, stream grpc.ServerStream) error {
	m := new(ReadSnapshotRequest)
	if err := stream.RecvMsg(m); err != nil {
		return err
	}
	return srv.(AmuletServer).ReadSnapshot(m, &grpc.GenericServerStream[ReadSnapshotRequest, SnapshotPage]{ServerStream: stream})
}

// This type alias is provided for backwards compatibility with existing code that references the prior non-generic stream type by name.
type Amulet_ReadSnapshotServer = grpc.ServerStreamingServer[SnapshotPage]

func _Amulet_TailLog_Handler(srv interface{}, stream grpc.ServerStream) error {
	m := new(TailLogRequest)
	if err := stream.RecvMsg(m); err != nil {
		return err
	}
	return srv.(AmuletServer).TailLog(m, &grpc.GenericServerStream[TailLogRequest, LogEntries]{ServerStream: stream})
}

// This type alias is provided for backwards compatibility with existing code that references the prior non-generic stream type by name.
type Amulet_TailLogServer = grpc.ServerStreamingServer[LogEntries]

func _Amulet_ReadAt_Handler(srv interface{}, ctx context.Context, dec func(interface{}) error, interceptor grpc.UnaryServerInterceptor) (interface{}, error) {
	in := new(ReadAtRequest)
	if err := dec(in); err != nil {
		return nil, err
	}
	if interceptor == nil {
		return srv.(AmuletServer).ReadAt(ctx, in)
	}
	info := &grpc.UnaryServerInfo{
		Server:     srv,
		FullMethod: Amulet_ReadAt_FullMethodName,
	}
	handler := func(ctx context.Context, req interface{}) (interface{}, error) {
		return srv.(AmuletServer).ReadAt(ctx, req.(*ReadAtRequest))
	}
	return interceptor(ctx, in, info, handler)
}

func _Amulet_Status_Handler(srv interface{}, ctx context.Context, dec func(interface{}) error, interceptor grpc.UnaryServerInterceptor) (interface{}, error) {
	in := new(StatusRequest)
	if err := dec(in); err != nil {
		return nil, err
	}
	if interceptor == nil {
		return srv.(AmuletServer).Status(ctx, in)
	}
	info := &grpc.UnaryServerInfo{
		Server:     srv,
		FullMethod: Amulet_Status_FullMethodName,
	}
	handler := func(ctx context.Context, req interface{}) (interface{}, error) {
		return srv.(AmuletServer).Status(ctx, req.(*StatusRequest))
	}
	return interceptor(ctx, in, info, handler)
}

func _Amulet_Reconfigure_Handler(srv interface{}, ctx context.Context, dec func(interface{}) error, interceptor grpc.UnaryServerInterceptor) (interface{}, error) {
	in := new(ReconfigureRequest)
	if err := dec(in); err != nil {
		return nil, err
	}
	if interceptor == nil {
		return srv.(AmuletServer).Reconfigure(ctx, in)
	}
	info := &grpc.UnaryServerInfo{
		Server:     srv,
		FullMethod: Amulet_Reconfigure_FullMethodName,
	}
	handler := func(ctx context.Context, req interface{}) (interface{}, error) {
		return srv.(AmuletServer).Reconfigure(ctx, req.(*ReconfigureRequest))
	}
	return interceptor(ctx, in, info, handler)
}

func _Amulet_EventualGet_Handler(srv interface{}, ctx context.Context, dec func(interface{}) error, interceptor grpc.UnaryServerInterceptor) (interface{}, error) {
	in := new(EventualGetRequest)
	if err := dec(in); err != nil {
		return nil, err
	}
	if interceptor == nil {
		return srv.(AmuletServer).EventualGet(ctx, in)
	}
	info := &grpc.UnaryServerInfo{
		Server:     srv,
		FullMethod: Amulet_EventualGet_FullMethodName,
	}
	handler := func(ctx context.Context, req interface{}) (interface{}, error) {
		return srv.(AmuletServer).EventualGet(ctx, req.(*EventualGetRequest))
	}
	return interceptor(ctx, in, info, handler)
}

func _Amulet_EventualPut_Handler(srv interface{}, ctx context.Context, dec func(interface{}) error, interceptor grpc.UnaryServerInterceptor) (interface{}, error) {
	in := new(EventualPutRequest)
	if err := dec(in); err != nil {
		return nil, err
	}
	if interceptor == nil {
		return srv.(AmuletServer).EventualPut(ctx, in)
	}
	info := &grpc.UnaryServerInfo{
		Server:     srv,
		FullMethod: Amulet_EventualPut_FullMethodName,
	}
	handler := func(ctx context.Context, req interface{}) (interface{}, error) {
		return srv.(AmuletServer).EventualPut(ctx, req.(*EventualPutRequest))
	}
	return interceptor(ctx, in, info, handler)
}

func _Amulet_EventualDelete_Handler(srv interface{}, ctx context.Context, dec func(interface{}) error, interceptor grpc.UnaryServerInterceptor) (interface{}, error) {
	in := new(EventualDeleteRequest)
	if err := dec(in); err != nil {
		return nil, err
	}
	if interceptor == nil {
		return srv.(AmuletServer).EventualDelete(ctx, in)
	}
	info := &grpc.UnaryServerInfo{
		Server:     srv,
		FullMethod: Amulet_EventualDelete_FullMethodName,
	}
	handler := func(ctx context.Context, req interface{}) (interface{}, error) {
		return srv.(AmuletServer).EventualDelete(ctx, req.(*EventualDeleteRequest))
	}
	return interceptor(ctx, in, info, handler)
}

// Amulet_ServiceDesc is the grpc.ServiceDesc for Amulet service.
// It's only intended for direct use with grpc.RegisterService,
// and not to be introspected or modified (even as a copy)
var Amulet_ServiceDesc = grpc.ServiceDesc{
	ServiceName: "amulet.v1.Amulet",
	HandlerType: (*AmuletServer)(nil),
	Methods: []grpc.MethodDesc{
		{
			MethodName: "GetPartitionMap",
			Handler:    _Amulet_GetPartitionMap_Handler,
		},
		{
			MethodName: "OpenSession",
			Handler:    _Amulet_OpenSession_Handler,
		},
		{
			MethodName: "KeepAlive",
			Handler:    _Amulet_KeepAlive_Handler,
		},
		{
			MethodName: "CloseSession",
			Handler:    _Amulet_CloseSession_Handler,
		},
		{
			MethodName: "Execute",
			Handler:    _Amulet_Execute_Handler,
		},
		{
			MethodName: "ExecuteBatch",
			Handler:    _Amulet_ExecuteBatch_Handler,
		},
		{
			MethodName: "ReadAt",
			Handler:    _Amulet_ReadAt_Handler,
		},
		{
			MethodName: "Status",
			Handler:    _Amulet_Status_Handler,
		},
		{
			MethodName: "Reconfigure",
			Handler:    _Amulet_Reconfigure_Handler,
		},
		{
			MethodName: "EventualGet",
			Handler:    _Amulet_EventualGet_Handler,
		},
		{
			MethodName: "EventualPut",
			Handler:    _Amulet_EventualPut_Handler,
		},
		{
			MethodName: "EventualDelete",
			Handler:    _Amulet_EventualDelete_Handler,
		},
	},
	Streams: []grpc.StreamDesc{
		{
			StreamName:    "ReadSnapshot",
			Handler:       _Amulet_ReadSnapshot_Handler,
			ServerStreams: true,
		},
		{
			StreamName:    "TailLog",
			Handler:       _Amulet_TailLog_Handler,
			ServerStreams: true,
		},
	},
	Metadata: "amulet/v1/amulet.proto",
}
