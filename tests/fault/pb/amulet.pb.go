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

// Code generated by protoc-gen-go. DO NOT EDIT.
// versions:
// 	protoc-gen-go v1.36.10
// 	protoc        v3.21.12
// source: amulet/v1/amulet.proto

package pb

import (
	protoreflect "google.golang.org/protobuf/reflect/protoreflect"
	protoimpl "google.golang.org/protobuf/runtime/protoimpl"
	reflect "reflect"
	sync "sync"
	unsafe "unsafe"
)

const (
	// Verify that this generated code is sufficiently up-to-date.
	_ = protoimpl.EnforceVersion(20 - protoimpl.MinVersion)
	// Verify that runtime/protoimpl is sufficiently up-to-date.
	_ = protoimpl.EnforceVersion(protoimpl.MaxVersion - 20)
)

type Nearest int32

const (
	Nearest_NEAREST_UNSPECIFIED Nearest = 0
	// Greatest key <= the key.
	Nearest_NEAREST_FLOOR Nearest = 1
	// Least key >= the key.
	Nearest_NEAREST_CEILING Nearest = 2
	// Least key > the key.
	Nearest_NEAREST_HIGHER Nearest = 3
	// Greatest key < the key.
	Nearest_NEAREST_LOWER Nearest = 4
)

// Enum value maps for Nearest.
var (
	Nearest_name = map[int32]string{
		0: "NEAREST_UNSPECIFIED",
		1: "NEAREST_FLOOR",
		2: "NEAREST_CEILING",
		3: "NEAREST_HIGHER",
		4: "NEAREST_LOWER",
	}
	Nearest_value = map[string]int32{
		"NEAREST_UNSPECIFIED": 0,
		"NEAREST_FLOOR":       1,
		"NEAREST_CEILING":     2,
		"NEAREST_HIGHER":      3,
		"NEAREST_LOWER":       4,
	}
)

func (x Nearest) Enum() *Nearest {
	p := new(Nearest)
	*p = x
	return p
}

func (x Nearest) String() string {
	return protoimpl.X.EnumStringOf(x.Descriptor(), protoreflect.EnumNumber(x))
}

func (Nearest) Descriptor() protoreflect.EnumDescriptor {
	return file_amulet_v1_amulet_proto_enumTypes[0].Descriptor()
}

func (Nearest) Type() protoreflect.EnumType {
	return &file_amulet_v1_amulet_proto_enumTypes[0]
}

func (x Nearest) Number() protoreflect.EnumNumber {
	return protoreflect.EnumNumber(x)
}

// Deprecated: Use Nearest.Descriptor instead.
func (Nearest) EnumDescriptor() ([]byte, []int) {
	return file_amulet_v1_amulet_proto_rawDescGZIP(), []int{0}
}

type EventualGetRequest struct {
	state         protoimpl.MessageState `protogen:"open.v1"`
	Map           string                 `protobuf:"bytes,1,opt,name=map,proto3" json:"map,omitempty"`
	Key           []byte                 `protobuf:"bytes,2,opt,name=key,proto3" json:"key,omitempty"`
	R             uint32                 `protobuf:"varint,3,opt,name=r,proto3" json:"r,omitempty"`
	unknownFields protoimpl.UnknownFields
	sizeCache     protoimpl.SizeCache
}

func (x *EventualGetRequest) Reset() {
	*x = EventualGetRequest{}
	mi := &file_amulet_v1_amulet_proto_msgTypes[0]
	ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
	ms.StoreMessageInfo(mi)
}

func (x *EventualGetRequest) String() string {
	return protoimpl.X.MessageStringOf(x)
}

func (*EventualGetRequest) ProtoMessage() {}

func (x *EventualGetRequest) ProtoReflect() protoreflect.Message {
	mi := &file_amulet_v1_amulet_proto_msgTypes[0]
	if x != nil {
		ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
		if ms.LoadMessageInfo() == nil {
			ms.StoreMessageInfo(mi)
		}
		return ms
	}
	return mi.MessageOf(x)
}

// Deprecated: Use EventualGetRequest.ProtoReflect.Descriptor instead.
func (*EventualGetRequest) Descriptor() ([]byte, []int) {
	return file_amulet_v1_amulet_proto_rawDescGZIP(), []int{0}
}

func (x *EventualGetRequest) GetMap() string {
	if x != nil {
		return x.Map
	}
	return ""
}

func (x *EventualGetRequest) GetKey() []byte {
	if x != nil {
		return x.Key
	}
	return nil
}

func (x *EventualGetRequest) GetR() uint32 {
	if x != nil {
		return x.R
	}
	return 0
}

type EventualPutRequest struct {
	state protoimpl.MessageState `protogen:"open.v1"`
	Map   string                 `protobuf:"bytes,1,opt,name=map,proto3" json:"map,omitempty"`
	Key   []byte                 `protobuf:"bytes,2,opt,name=key,proto3" json:"key,omitempty"`
	Value []byte                 `protobuf:"bytes,3,opt,name=value,proto3" json:"value,omitempty"`
	// A context from an earlier reply (empty: supersede nothing).
	Context       []byte `protobuf:"bytes,4,opt,name=context,proto3" json:"context,omitempty"`
	W             uint32 `protobuf:"varint,5,opt,name=w,proto3" json:"w,omitempty"`
	unknownFields protoimpl.UnknownFields
	sizeCache     protoimpl.SizeCache
}

func (x *EventualPutRequest) Reset() {
	*x = EventualPutRequest{}
	mi := &file_amulet_v1_amulet_proto_msgTypes[1]
	ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
	ms.StoreMessageInfo(mi)
}

func (x *EventualPutRequest) String() string {
	return protoimpl.X.MessageStringOf(x)
}

func (*EventualPutRequest) ProtoMessage() {}

func (x *EventualPutRequest) ProtoReflect() protoreflect.Message {
	mi := &file_amulet_v1_amulet_proto_msgTypes[1]
	if x != nil {
		ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
		if ms.LoadMessageInfo() == nil {
			ms.StoreMessageInfo(mi)
		}
		return ms
	}
	return mi.MessageOf(x)
}

// Deprecated: Use EventualPutRequest.ProtoReflect.Descriptor instead.
func (*EventualPutRequest) Descriptor() ([]byte, []int) {
	return file_amulet_v1_amulet_proto_rawDescGZIP(), []int{1}
}

func (x *EventualPutRequest) GetMap() string {
	if x != nil {
		return x.Map
	}
	return ""
}

func (x *EventualPutRequest) GetKey() []byte {
	if x != nil {
		return x.Key
	}
	return nil
}

func (x *EventualPutRequest) GetValue() []byte {
	if x != nil {
		return x.Value
	}
	return nil
}

func (x *EventualPutRequest) GetContext() []byte {
	if x != nil {
		return x.Context
	}
	return nil
}

func (x *EventualPutRequest) GetW() uint32 {
	if x != nil {
		return x.W
	}
	return 0
}

type EventualDeleteRequest struct {
	state         protoimpl.MessageState `protogen:"open.v1"`
	Map           string                 `protobuf:"bytes,1,opt,name=map,proto3" json:"map,omitempty"`
	Key           []byte                 `protobuf:"bytes,2,opt,name=key,proto3" json:"key,omitempty"`
	Context       []byte                 `protobuf:"bytes,3,opt,name=context,proto3" json:"context,omitempty"`
	W             uint32                 `protobuf:"varint,4,opt,name=w,proto3" json:"w,omitempty"`
	unknownFields protoimpl.UnknownFields
	sizeCache     protoimpl.SizeCache
}

func (x *EventualDeleteRequest) Reset() {
	*x = EventualDeleteRequest{}
	mi := &file_amulet_v1_amulet_proto_msgTypes[2]
	ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
	ms.StoreMessageInfo(mi)
}

func (x *EventualDeleteRequest) String() string {
	return protoimpl.X.MessageStringOf(x)
}

func (*EventualDeleteRequest) ProtoMessage() {}

func (x *EventualDeleteRequest) ProtoReflect() protoreflect.Message {
	mi := &file_amulet_v1_amulet_proto_msgTypes[2]
	if x != nil {
		ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
		if ms.LoadMessageInfo() == nil {
			ms.StoreMessageInfo(mi)
		}
		return ms
	}
	return mi.MessageOf(x)
}

// Deprecated: Use EventualDeleteRequest.ProtoReflect.Descriptor instead.
func (*EventualDeleteRequest) Descriptor() ([]byte, []int) {
	return file_amulet_v1_amulet_proto_rawDescGZIP(), []int{2}
}

func (x *EventualDeleteRequest) GetMap() string {
	if x != nil {
		return x.Map
	}
	return ""
}

func (x *EventualDeleteRequest) GetKey() []byte {
	if x != nil {
		return x.Key
	}
	return nil
}

func (x *EventualDeleteRequest) GetContext() []byte {
	if x != nil {
		return x.Context
	}
	return nil
}

func (x *EventualDeleteRequest) GetW() uint32 {
	if x != nil {
		return x.W
	}
	return 0
}

// A key's siblings and the causal context that covers them (for a write,
// the values at the replica that took it, after it).
type Versioned struct {
	state         protoimpl.MessageState `protogen:"open.v1"`
	Values        [][]byte               `protobuf:"bytes,1,rep,name=values,proto3" json:"values,omitempty"`
	Context       []byte                 `protobuf:"bytes,2,opt,name=context,proto3" json:"context,omitempty"`
	unknownFields protoimpl.UnknownFields
	sizeCache     protoimpl.SizeCache
}

func (x *Versioned) Reset() {
	*x = Versioned{}
	mi := &file_amulet_v1_amulet_proto_msgTypes[3]
	ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
	ms.StoreMessageInfo(mi)
}

func (x *Versioned) String() string {
	return protoimpl.X.MessageStringOf(x)
}

func (*Versioned) ProtoMessage() {}

func (x *Versioned) ProtoReflect() protoreflect.Message {
	mi := &file_amulet_v1_amulet_proto_msgTypes[3]
	if x != nil {
		ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
		if ms.LoadMessageInfo() == nil {
			ms.StoreMessageInfo(mi)
		}
		return ms
	}
	return mi.MessageOf(x)
}

// Deprecated: Use Versioned.ProtoReflect.Descriptor instead.
func (*Versioned) Descriptor() ([]byte, []int) {
	return file_amulet_v1_amulet_proto_rawDescGZIP(), []int{3}
}

func (x *Versioned) GetValues() [][]byte {
	if x != nil {
		return x.Values
	}
	return nil
}

func (x *Versioned) GetContext() []byte {
	if x != nil {
		return x.Context
	}
	return nil
}

type ReconfigureRequest struct {
	state protoimpl.MessageState `protogen:"open.v1"`
	// The map version the change was computed from (stale: FAILED_PRECONDITION
	// stale-map, nothing changed).
	MapVersion uint64 `protobuf:"varint,1,opt,name=map_version,json=mapVersion,proto3" json:"map_version,omitempty"`
	// Types that are valid to be assigned to Change:
	//
	//	*ReconfigureRequest_Split
	//	*ReconfigureRequest_Merge
	//	*ReconfigureRequest_ReplaceStream
	//	*ReconfigureRequest_Move
	Change        isReconfigureRequest_Change `protobuf_oneof:"change"`
	unknownFields protoimpl.UnknownFields
	sizeCache     protoimpl.SizeCache
}

func (x *ReconfigureRequest) Reset() {
	*x = ReconfigureRequest{}
	mi := &file_amulet_v1_amulet_proto_msgTypes[4]
	ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
	ms.StoreMessageInfo(mi)
}

func (x *ReconfigureRequest) String() string {
	return protoimpl.X.MessageStringOf(x)
}

func (*ReconfigureRequest) ProtoMessage() {}

func (x *ReconfigureRequest) ProtoReflect() protoreflect.Message {
	mi := &file_amulet_v1_amulet_proto_msgTypes[4]
	if x != nil {
		ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
		if ms.LoadMessageInfo() == nil {
			ms.StoreMessageInfo(mi)
		}
		return ms
	}
	return mi.MessageOf(x)
}

// Deprecated: Use ReconfigureRequest.ProtoReflect.Descriptor instead.
func (*ReconfigureRequest) Descriptor() ([]byte, []int) {
	return file_amulet_v1_amulet_proto_rawDescGZIP(), []int{4}
}

func (x *ReconfigureRequest) GetMapVersion() uint64 {
	if x != nil {
		return x.MapVersion
	}
	return 0
}

func (x *ReconfigureRequest) GetChange() isReconfigureRequest_Change {
	if x != nil {
		return x.Change
	}
	return nil
}

func (x *ReconfigureRequest) GetSplit() *SplitPartition {
	if x != nil {
		if x, ok := x.Change.(*ReconfigureRequest_Split); ok {
			return x.Split
		}
	}
	return nil
}

func (x *ReconfigureRequest) GetMerge() *MergePartitions {
	if x != nil {
		if x, ok := x.Change.(*ReconfigureRequest_Merge); ok {
			return x.Merge
		}
	}
	return nil
}

func (x *ReconfigureRequest) GetReplaceStream() *ReplaceStream {
	if x != nil {
		if x, ok := x.Change.(*ReconfigureRequest_ReplaceStream); ok {
			return x.ReplaceStream
		}
	}
	return nil
}

func (x *ReconfigureRequest) GetMove() *MovePartition {
	if x != nil {
		if x, ok := x.Change.(*ReconfigureRequest_Move); ok {
			return x.Move
		}
	}
	return nil
}

type isReconfigureRequest_Change interface {
	isReconfigureRequest_Change()
}

type ReconfigureRequest_Split struct {
	Split *SplitPartition `protobuf:"bytes,2,opt,name=split,proto3,oneof"`
}

type ReconfigureRequest_Merge struct {
	Merge *MergePartitions `protobuf:"bytes,3,opt,name=merge,proto3,oneof"`
}

type ReconfigureRequest_ReplaceStream struct {
	ReplaceStream *ReplaceStream `protobuf:"bytes,4,opt,name=replace_stream,json=replaceStream,proto3,oneof"`
}

type ReconfigureRequest_Move struct {
	Move *MovePartition `protobuf:"bytes,5,opt,name=move,proto3,oneof"`
}

func (*ReconfigureRequest_Split) isReconfigureRequest_Change() {}

func (*ReconfigureRequest_Merge) isReconfigureRequest_Change() {}

func (*ReconfigureRequest_ReplaceStream) isReconfigureRequest_Change() {}

func (*ReconfigureRequest_Move) isReconfigureRequest_Change() {}

// A stream created by a reconfiguration.
type StreamSpec struct {
	state     protoimpl.MessageState `protogen:"open.v1"`
	Stream    uint32                 `protobuf:"varint,1,opt,name=stream,proto3" json:"stream,omitempty"`
	Acceptors []uint32               `protobuf:"varint,2,rep,packed,name=acceptors,proto3" json:"acceptors,omitempty"`
	Learners  []uint32               `protobuf:"varint,3,rep,packed,name=learners,proto3" json:"learners,omitempty"`
	// "memory", "async" or "sync".
	Storage       string `protobuf:"bytes,4,opt,name=storage,proto3" json:"storage,omitempty"`
	unknownFields protoimpl.UnknownFields
	sizeCache     protoimpl.SizeCache
}

func (x *StreamSpec) Reset() {
	*x = StreamSpec{}
	mi := &file_amulet_v1_amulet_proto_msgTypes[5]
	ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
	ms.StoreMessageInfo(mi)
}

func (x *StreamSpec) String() string {
	return protoimpl.X.MessageStringOf(x)
}

func (*StreamSpec) ProtoMessage() {}

func (x *StreamSpec) ProtoReflect() protoreflect.Message {
	mi := &file_amulet_v1_amulet_proto_msgTypes[5]
	if x != nil {
		ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
		if ms.LoadMessageInfo() == nil {
			ms.StoreMessageInfo(mi)
		}
		return ms
	}
	return mi.MessageOf(x)
}

// Deprecated: Use StreamSpec.ProtoReflect.Descriptor instead.
func (*StreamSpec) Descriptor() ([]byte, []int) {
	return file_amulet_v1_amulet_proto_rawDescGZIP(), []int{5}
}

func (x *StreamSpec) GetStream() uint32 {
	if x != nil {
		return x.Stream
	}
	return 0
}

func (x *StreamSpec) GetAcceptors() []uint32 {
	if x != nil {
		return x.Acceptors
	}
	return nil
}

func (x *StreamSpec) GetLearners() []uint32 {
	if x != nil {
		return x.Learners
	}
	return nil
}

func (x *StreamSpec) GetStorage() string {
	if x != nil {
		return x.Storage
	}
	return ""
}

// The keys of `source` from `at_token` (hash maps) up to the end of its
// token segment, and of each range map from the cut key up to the end of
// its range, move to the new partition `new_partition`, replicated by the
// same nodes on the new stream `stream`.
type SplitPartition struct {
	state         protoimpl.MessageState `protogen:"open.v1"`
	Source        uint32                 `protobuf:"varint,1,opt,name=source,proto3" json:"source,omitempty"`
	NewPartition  uint32                 `protobuf:"varint,2,opt,name=new_partition,json=newPartition,proto3" json:"new_partition,omitempty"`
	Stream        *StreamSpec            `protobuf:"bytes,3,opt,name=stream,proto3" json:"stream,omitempty"`
	AtToken       *uint32                `protobuf:"varint,4,opt,name=at_token,json=atToken,proto3,oneof" json:"at_token,omitempty"`
	AtKeys        []*RangeCut            `protobuf:"bytes,5,rep,name=at_keys,json=atKeys,proto3" json:"at_keys,omitempty"`
	unknownFields protoimpl.UnknownFields
	sizeCache     protoimpl.SizeCache
}

func (x *SplitPartition) Reset() {
	*x = SplitPartition{}
	mi := &file_amulet_v1_amulet_proto_msgTypes[6]
	ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
	ms.StoreMessageInfo(mi)
}

func (x *SplitPartition) String() string {
	return protoimpl.X.MessageStringOf(x)
}

func (*SplitPartition) ProtoMessage() {}

func (x *SplitPartition) ProtoReflect() protoreflect.Message {
	mi := &file_amulet_v1_amulet_proto_msgTypes[6]
	if x != nil {
		ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
		if ms.LoadMessageInfo() == nil {
			ms.StoreMessageInfo(mi)
		}
		return ms
	}
	return mi.MessageOf(x)
}

// Deprecated: Use SplitPartition.ProtoReflect.Descriptor instead.
func (*SplitPartition) Descriptor() ([]byte, []int) {
	return file_amulet_v1_amulet_proto_rawDescGZIP(), []int{6}
}

func (x *SplitPartition) GetSource() uint32 {
	if x != nil {
		return x.Source
	}
	return 0
}

func (x *SplitPartition) GetNewPartition() uint32 {
	if x != nil {
		return x.NewPartition
	}
	return 0
}

func (x *SplitPartition) GetStream() *StreamSpec {
	if x != nil {
		return x.Stream
	}
	return nil
}

func (x *SplitPartition) GetAtToken() uint32 {
	if x != nil && x.AtToken != nil {
		return *x.AtToken
	}
	return 0
}

func (x *SplitPartition) GetAtKeys() []*RangeCut {
	if x != nil {
		return x.AtKeys
	}
	return nil
}

type RangeCut struct {
	state         protoimpl.MessageState `protogen:"open.v1"`
	Map           string                 `protobuf:"bytes,1,opt,name=map,proto3" json:"map,omitempty"`
	Key           []byte                 `protobuf:"bytes,2,opt,name=key,proto3" json:"key,omitempty"`
	unknownFields protoimpl.UnknownFields
	sizeCache     protoimpl.SizeCache
}

func (x *RangeCut) Reset() {
	*x = RangeCut{}
	mi := &file_amulet_v1_amulet_proto_msgTypes[7]
	ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
	ms.StoreMessageInfo(mi)
}

func (x *RangeCut) String() string {
	return protoimpl.X.MessageStringOf(x)
}

func (*RangeCut) ProtoMessage() {}

func (x *RangeCut) ProtoReflect() protoreflect.Message {
	mi := &file_amulet_v1_amulet_proto_msgTypes[7]
	if x != nil {
		ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
		if ms.LoadMessageInfo() == nil {
			ms.StoreMessageInfo(mi)
		}
		return ms
	}
	return mi.MessageOf(x)
}

// Deprecated: Use RangeCut.ProtoReflect.Descriptor instead.
func (*RangeCut) Descriptor() ([]byte, []int) {
	return file_amulet_v1_amulet_proto_rawDescGZIP(), []int{7}
}

func (x *RangeCut) GetMap() string {
	if x != nil {
		return x.Map
	}
	return ""
}

func (x *RangeCut) GetKey() []byte {
	if x != nil {
		return x.Key
	}
	return nil
}

// Every key of `source` moves to `into` (replicated by the same nodes);
// `source` and its stream retire.
type MergePartitions struct {
	state         protoimpl.MessageState `protogen:"open.v1"`
	Source        uint32                 `protobuf:"varint,1,opt,name=source,proto3" json:"source,omitempty"`
	Into          uint32                 `protobuf:"varint,2,opt,name=into,proto3" json:"into,omitempty"`
	unknownFields protoimpl.UnknownFields
	sizeCache     protoimpl.SizeCache
}

func (x *MergePartitions) Reset() {
	*x = MergePartitions{}
	mi := &file_amulet_v1_amulet_proto_msgTypes[8]
	ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
	ms.StoreMessageInfo(mi)
}

func (x *MergePartitions) String() string {
	return protoimpl.X.MessageStringOf(x)
}

func (*MergePartitions) ProtoMessage() {}

func (x *MergePartitions) ProtoReflect() protoreflect.Message {
	mi := &file_amulet_v1_amulet_proto_msgTypes[8]
	if x != nil {
		ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
		if ms.LoadMessageInfo() == nil {
			ms.StoreMessageInfo(mi)
		}
		return ms
	}
	return mi.MessageOf(x)
}

// Deprecated: Use MergePartitions.ProtoReflect.Descriptor instead.
func (*MergePartitions) Descriptor() ([]byte, []int) {
	return file_amulet_v1_amulet_proto_rawDescGZIP(), []int{8}
}

func (x *MergePartitions) GetSource() uint32 {
	if x != nil {
		return x.Source
	}
	return 0
}

func (x *MergePartitions) GetInto() uint32 {
	if x != nil {
		return x.Into
	}
	return 0
}

// `partition` continues on the new stream `stream` (thesis §4.2
// "Reconfiguration"); the old stream retires.
type ReplaceStream struct {
	state         protoimpl.MessageState `protogen:"open.v1"`
	Partition     uint32                 `protobuf:"varint,1,opt,name=partition,proto3" json:"partition,omitempty"`
	Stream        *StreamSpec            `protobuf:"bytes,2,opt,name=stream,proto3" json:"stream,omitempty"`
	unknownFields protoimpl.UnknownFields
	sizeCache     protoimpl.SizeCache
}

func (x *ReplaceStream) Reset() {
	*x = ReplaceStream{}
	mi := &file_amulet_v1_amulet_proto_msgTypes[9]
	ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
	ms.StoreMessageInfo(mi)
}

func (x *ReplaceStream) String() string {
	return protoimpl.X.MessageStringOf(x)
}

func (*ReplaceStream) ProtoMessage() {}

func (x *ReplaceStream) ProtoReflect() protoreflect.Message {
	mi := &file_amulet_v1_amulet_proto_msgTypes[9]
	if x != nil {
		ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
		if ms.LoadMessageInfo() == nil {
			ms.StoreMessageInfo(mi)
		}
		return ms
	}
	return mi.MessageOf(x)
}

// Deprecated: Use ReplaceStream.ProtoReflect.Descriptor instead.
func (*ReplaceStream) Descriptor() ([]byte, []int) {
	return file_amulet_v1_amulet_proto_rawDescGZIP(), []int{9}
}

func (x *ReplaceStream) GetPartition() uint32 {
	if x != nil {
		return x.Partition
	}
	return 0
}

func (x *ReplaceStream) GetStream() *StreamSpec {
	if x != nil {
		return x.Stream
	}
	return nil
}

// `partition` moves to the replica group `replicas` (each already a
// replica of some partition) on the new stream `stream`, whose members
// must be the old and the new replicas; the new ones that had no replica
// fetch a peer's checkpoint (state transfer), the old ones that go drop
// theirs once a majority of the new group holds the state.
type MovePartition struct {
	state         protoimpl.MessageState `protogen:"open.v1"`
	Partition     uint32                 `protobuf:"varint,1,opt,name=partition,proto3" json:"partition,omitempty"`
	Replicas      []uint32               `protobuf:"varint,2,rep,packed,name=replicas,proto3" json:"replicas,omitempty"`
	Stream        *StreamSpec            `protobuf:"bytes,3,opt,name=stream,proto3" json:"stream,omitempty"`
	unknownFields protoimpl.UnknownFields
	sizeCache     protoimpl.SizeCache
}

func (x *MovePartition) Reset() {
	*x = MovePartition{}
	mi := &file_amulet_v1_amulet_proto_msgTypes[10]
	ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
	ms.StoreMessageInfo(mi)
}

func (x *MovePartition) String() string {
	return protoimpl.X.MessageStringOf(x)
}

func (*MovePartition) ProtoMessage() {}

func (x *MovePartition) ProtoReflect() protoreflect.Message {
	mi := &file_amulet_v1_amulet_proto_msgTypes[10]
	if x != nil {
		ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
		if ms.LoadMessageInfo() == nil {
			ms.StoreMessageInfo(mi)
		}
		return ms
	}
	return mi.MessageOf(x)
}

// Deprecated: Use MovePartition.ProtoReflect.Descriptor instead.
func (*MovePartition) Descriptor() ([]byte, []int) {
	return file_amulet_v1_amulet_proto_rawDescGZIP(), []int{10}
}

func (x *MovePartition) GetPartition() uint32 {
	if x != nil {
		return x.Partition
	}
	return 0
}

func (x *MovePartition) GetReplicas() []uint32 {
	if x != nil {
		return x.Replicas
	}
	return nil
}

func (x *MovePartition) GetStream() *StreamSpec {
	if x != nil {
		return x.Stream
	}
	return nil
}

type ReconfigureResponse struct {
	state         protoimpl.MessageState `protogen:"open.v1"`
	unknownFields protoimpl.UnknownFields
	sizeCache     protoimpl.SizeCache
}

func (x *ReconfigureResponse) Reset() {
	*x = ReconfigureResponse{}
	mi := &file_amulet_v1_amulet_proto_msgTypes[11]
	ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
	ms.StoreMessageInfo(mi)
}

func (x *ReconfigureResponse) String() string {
	return protoimpl.X.MessageStringOf(x)
}

func (*ReconfigureResponse) ProtoMessage() {}

func (x *ReconfigureResponse) ProtoReflect() protoreflect.Message {
	mi := &file_amulet_v1_amulet_proto_msgTypes[11]
	if x != nil {
		ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
		if ms.LoadMessageInfo() == nil {
			ms.StoreMessageInfo(mi)
		}
		return ms
	}
	return mi.MessageOf(x)
}

// Deprecated: Use ReconfigureResponse.ProtoReflect.Descriptor instead.
func (*ReconfigureResponse) Descriptor() ([]byte, []int) {
	return file_amulet_v1_amulet_proto_rawDescGZIP(), []int{11}
}

type GetPartitionMapRequest struct {
	state         protoimpl.MessageState `protogen:"open.v1"`
	unknownFields protoimpl.UnknownFields
	sizeCache     protoimpl.SizeCache
}

func (x *GetPartitionMapRequest) Reset() {
	*x = GetPartitionMapRequest{}
	mi := &file_amulet_v1_amulet_proto_msgTypes[12]
	ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
	ms.StoreMessageInfo(mi)
}

func (x *GetPartitionMapRequest) String() string {
	return protoimpl.X.MessageStringOf(x)
}

func (*GetPartitionMapRequest) ProtoMessage() {}

func (x *GetPartitionMapRequest) ProtoReflect() protoreflect.Message {
	mi := &file_amulet_v1_amulet_proto_msgTypes[12]
	if x != nil {
		ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
		if ms.LoadMessageInfo() == nil {
			ms.StoreMessageInfo(mi)
		}
		return ms
	}
	return mi.MessageOf(x)
}

// Deprecated: Use GetPartitionMapRequest.ProtoReflect.Descriptor instead.
func (*GetPartitionMapRequest) Descriptor() ([]byte, []int) {
	return file_amulet_v1_amulet_proto_rawDescGZIP(), []int{12}
}

type PartitionMap struct {
	state        protoimpl.MessageState `protogen:"open.v1"`
	Version      uint64                 `protobuf:"varint,1,opt,name=version,proto3" json:"version,omitempty"`
	GlobalStream uint32                 `protobuf:"varint,2,opt,name=global_stream,json=globalStream,proto3" json:"global_stream,omitempty"`
	Partitions   []*Partition           `protobuf:"bytes,3,rep,name=partitions,proto3" json:"partitions,omitempty"`
	// (first token, partition), sorted by token, starting at 0. The token of
	// a key is its CRC-32C.
	TokenRing []*TokenRange `protobuf:"bytes,4,rep,name=token_ring,json=tokenRing,proto3" json:"token_ring,omitempty"`
	Keyspaces []*Keyspace   `protobuf:"bytes,5,rep,name=keyspaces,proto3" json:"keyspaces,omitempty"`
	// Client addresses (host:port) of the nodes.
	Nodes         []*NodeAddress `protobuf:"bytes,6,rep,name=nodes,proto3" json:"nodes,omitempty"`
	unknownFields protoimpl.UnknownFields
	sizeCache     protoimpl.SizeCache
}

func (x *PartitionMap) Reset() {
	*x = PartitionMap{}
	mi := &file_amulet_v1_amulet_proto_msgTypes[13]
	ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
	ms.StoreMessageInfo(mi)
}

func (x *PartitionMap) String() string {
	return protoimpl.X.MessageStringOf(x)
}

func (*PartitionMap) ProtoMessage() {}

func (x *PartitionMap) ProtoReflect() protoreflect.Message {
	mi := &file_amulet_v1_amulet_proto_msgTypes[13]
	if x != nil {
		ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
		if ms.LoadMessageInfo() == nil {
			ms.StoreMessageInfo(mi)
		}
		return ms
	}
	return mi.MessageOf(x)
}

// Deprecated: Use PartitionMap.ProtoReflect.Descriptor instead.
func (*PartitionMap) Descriptor() ([]byte, []int) {
	return file_amulet_v1_amulet_proto_rawDescGZIP(), []int{13}
}

func (x *PartitionMap) GetVersion() uint64 {
	if x != nil {
		return x.Version
	}
	return 0
}

func (x *PartitionMap) GetGlobalStream() uint32 {
	if x != nil {
		return x.GlobalStream
	}
	return 0
}

func (x *PartitionMap) GetPartitions() []*Partition {
	if x != nil {
		return x.Partitions
	}
	return nil
}

func (x *PartitionMap) GetTokenRing() []*TokenRange {
	if x != nil {
		return x.TokenRing
	}
	return nil
}

func (x *PartitionMap) GetKeyspaces() []*Keyspace {
	if x != nil {
		return x.Keyspaces
	}
	return nil
}

func (x *PartitionMap) GetNodes() []*NodeAddress {
	if x != nil {
		return x.Nodes
	}
	return nil
}

type Partition struct {
	state         protoimpl.MessageState `protogen:"open.v1"`
	Id            uint32                 `protobuf:"varint,1,opt,name=id,proto3" json:"id,omitempty"`
	Stream        uint32                 `protobuf:"varint,2,opt,name=stream,proto3" json:"stream,omitempty"`
	Replicas      []uint32               `protobuf:"varint,3,rep,packed,name=replicas,proto3" json:"replicas,omitempty"`
	unknownFields protoimpl.UnknownFields
	sizeCache     protoimpl.SizeCache
}

func (x *Partition) Reset() {
	*x = Partition{}
	mi := &file_amulet_v1_amulet_proto_msgTypes[14]
	ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
	ms.StoreMessageInfo(mi)
}

func (x *Partition) String() string {
	return protoimpl.X.MessageStringOf(x)
}

func (*Partition) ProtoMessage() {}

func (x *Partition) ProtoReflect() protoreflect.Message {
	mi := &file_amulet_v1_amulet_proto_msgTypes[14]
	if x != nil {
		ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
		if ms.LoadMessageInfo() == nil {
			ms.StoreMessageInfo(mi)
		}
		return ms
	}
	return mi.MessageOf(x)
}

// Deprecated: Use Partition.ProtoReflect.Descriptor instead.
func (*Partition) Descriptor() ([]byte, []int) {
	return file_amulet_v1_amulet_proto_rawDescGZIP(), []int{14}
}

func (x *Partition) GetId() uint32 {
	if x != nil {
		return x.Id
	}
	return 0
}

func (x *Partition) GetStream() uint32 {
	if x != nil {
		return x.Stream
	}
	return 0
}

func (x *Partition) GetReplicas() []uint32 {
	if x != nil {
		return x.Replicas
	}
	return nil
}

type TokenRange struct {
	state         protoimpl.MessageState `protogen:"open.v1"`
	FirstToken    uint32                 `protobuf:"varint,1,opt,name=first_token,json=firstToken,proto3" json:"first_token,omitempty"`
	Partition     uint32                 `protobuf:"varint,2,opt,name=partition,proto3" json:"partition,omitempty"`
	unknownFields protoimpl.UnknownFields
	sizeCache     protoimpl.SizeCache
}

func (x *TokenRange) Reset() {
	*x = TokenRange{}
	mi := &file_amulet_v1_amulet_proto_msgTypes[15]
	ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
	ms.StoreMessageInfo(mi)
}

func (x *TokenRange) String() string {
	return protoimpl.X.MessageStringOf(x)
}

func (*TokenRange) ProtoMessage() {}

func (x *TokenRange) ProtoReflect() protoreflect.Message {
	mi := &file_amulet_v1_amulet_proto_msgTypes[15]
	if x != nil {
		ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
		if ms.LoadMessageInfo() == nil {
			ms.StoreMessageInfo(mi)
		}
		return ms
	}
	return mi.MessageOf(x)
}

// Deprecated: Use TokenRange.ProtoReflect.Descriptor instead.
func (*TokenRange) Descriptor() ([]byte, []int) {
	return file_amulet_v1_amulet_proto_rawDescGZIP(), []int{15}
}

func (x *TokenRange) GetFirstToken() uint32 {
	if x != nil {
		return x.FirstToken
	}
	return 0
}

func (x *TokenRange) GetPartition() uint32 {
	if x != nil {
		return x.Partition
	}
	return 0
}

type Keyspace struct {
	state protoimpl.MessageState `protogen:"open.v1"`
	Name  string                 `protobuf:"bytes,1,opt,name=name,proto3" json:"name,omitempty"`
	// Empty for a hash layout; for a range layout, (least key, partition)
	// sorted by key, starting at the empty key.
	Layout        *Layout `protobuf:"bytes,2,opt,name=layout,proto3" json:"layout,omitempty"`
	unknownFields protoimpl.UnknownFields
	sizeCache     protoimpl.SizeCache
}

func (x *Keyspace) Reset() {
	*x = Keyspace{}
	mi := &file_amulet_v1_amulet_proto_msgTypes[16]
	ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
	ms.StoreMessageInfo(mi)
}

func (x *Keyspace) String() string {
	return protoimpl.X.MessageStringOf(x)
}

func (*Keyspace) ProtoMessage() {}

func (x *Keyspace) ProtoReflect() protoreflect.Message {
	mi := &file_amulet_v1_amulet_proto_msgTypes[16]
	if x != nil {
		ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
		if ms.LoadMessageInfo() == nil {
			ms.StoreMessageInfo(mi)
		}
		return ms
	}
	return mi.MessageOf(x)
}

// Deprecated: Use Keyspace.ProtoReflect.Descriptor instead.
func (*Keyspace) Descriptor() ([]byte, []int) {
	return file_amulet_v1_amulet_proto_rawDescGZIP(), []int{16}
}

func (x *Keyspace) GetName() string {
	if x != nil {
		return x.Name
	}
	return ""
}

func (x *Keyspace) GetLayout() *Layout {
	if x != nil {
		return x.Layout
	}
	return nil
}

type Layout struct {
	state protoimpl.MessageState `protogen:"open.v1"`
	// Types that are valid to be assigned to Kind:
	//
	//	*Layout_Hash
	//	*Layout_Range
	//	*Layout_Eventual
	Kind          isLayout_Kind `protobuf_oneof:"kind"`
	unknownFields protoimpl.UnknownFields
	sizeCache     protoimpl.SizeCache
}

func (x *Layout) Reset() {
	*x = Layout{}
	mi := &file_amulet_v1_amulet_proto_msgTypes[17]
	ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
	ms.StoreMessageInfo(mi)
}

func (x *Layout) String() string {
	return protoimpl.X.MessageStringOf(x)
}

func (*Layout) ProtoMessage() {}

func (x *Layout) ProtoReflect() protoreflect.Message {
	mi := &file_amulet_v1_amulet_proto_msgTypes[17]
	if x != nil {
		ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
		if ms.LoadMessageInfo() == nil {
			ms.StoreMessageInfo(mi)
		}
		return ms
	}
	return mi.MessageOf(x)
}

// Deprecated: Use Layout.ProtoReflect.Descriptor instead.
func (*Layout) Descriptor() ([]byte, []int) {
	return file_amulet_v1_amulet_proto_rawDescGZIP(), []int{17}
}

func (x *Layout) GetKind() isLayout_Kind {
	if x != nil {
		return x.Kind
	}
	return nil
}

func (x *Layout) GetHash() *HashLayout {
	if x != nil {
		if x, ok := x.Kind.(*Layout_Hash); ok {
			return x.Hash
		}
	}
	return nil
}

func (x *Layout) GetRange() *RangeLayout {
	if x != nil {
		if x, ok := x.Kind.(*Layout_Range); ok {
			return x.Range
		}
	}
	return nil
}

func (x *Layout) GetEventual() *EventualLayout {
	if x != nil {
		if x, ok := x.Kind.(*Layout_Eventual); ok {
			return x.Eventual
		}
	}
	return nil
}

type isLayout_Kind interface {
	isLayout_Kind()
}

type Layout_Hash struct {
	Hash *HashLayout `protobuf:"bytes,1,opt,name=hash,proto3,oneof"`
}

type Layout_Range struct {
	Range *RangeLayout `protobuf:"bytes,2,opt,name=range,proto3,oneof"`
}

type Layout_Eventual struct {
	Eventual *EventualLayout `protobuf:"bytes,3,opt,name=eventual,proto3,oneof"`
}

func (*Layout_Hash) isLayout_Kind() {}

func (*Layout_Range) isLayout_Kind() {}

func (*Layout_Eventual) isLayout_Kind() {}

// An eventual map (docs/eventual-maps.md): `vnodes` virtual nodes on a
// token ring (0: 16), each key on `replicas` consecutive ones, placed on
// distinct nodes. `ring` is filled by the cluster (empty in CreateMap).
type EventualLayout struct {
	state    protoimpl.MessageState `protogen:"open.v1"`
	Replicas uint32                 `protobuf:"varint,1,opt,name=replicas,proto3" json:"replicas,omitempty"`
	Vnodes   uint32                 `protobuf:"varint,2,opt,name=vnodes,proto3" json:"vnodes,omitempty"`
	Ring     []*EventualVnode       `protobuf:"bytes,3,rep,name=ring,proto3" json:"ring,omitempty"`
	// The MerkleDB baseline's store (per-key version vectors, tombstones,
	// Merkle-tree anti-entropy) instead of DottedDB's, for comparisons
	// (DottedDB §V); the same API.
	Merkle        bool `protobuf:"varint,4,opt,name=merkle,proto3" json:"merkle,omitempty"`
	unknownFields protoimpl.UnknownFields
	sizeCache     protoimpl.SizeCache
}

func (x *EventualLayout) Reset() {
	*x = EventualLayout{}
	mi := &file_amulet_v1_amulet_proto_msgTypes[18]
	ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
	ms.StoreMessageInfo(mi)
}

func (x *EventualLayout) String() string {
	return protoimpl.X.MessageStringOf(x)
}

func (*EventualLayout) ProtoMessage() {}

func (x *EventualLayout) ProtoReflect() protoreflect.Message {
	mi := &file_amulet_v1_amulet_proto_msgTypes[18]
	if x != nil {
		ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
		if ms.LoadMessageInfo() == nil {
			ms.StoreMessageInfo(mi)
		}
		return ms
	}
	return mi.MessageOf(x)
}

// Deprecated: Use EventualLayout.ProtoReflect.Descriptor instead.
func (*EventualLayout) Descriptor() ([]byte, []int) {
	return file_amulet_v1_amulet_proto_rawDescGZIP(), []int{18}
}

func (x *EventualLayout) GetReplicas() uint32 {
	if x != nil {
		return x.Replicas
	}
	return 0
}

func (x *EventualLayout) GetVnodes() uint32 {
	if x != nil {
		return x.Vnodes
	}
	return 0
}

func (x *EventualLayout) GetRing() []*EventualVnode {
	if x != nil {
		return x.Ring
	}
	return nil
}

func (x *EventualLayout) GetMerkle() bool {
	if x != nil {
		return x.Merkle
	}
	return false
}

// A virtual node: its replica id (never reused) and the node holding it.
type EventualVnode struct {
	state         protoimpl.MessageState `protogen:"open.v1"`
	Replica       uint64                 `protobuf:"varint,1,opt,name=replica,proto3" json:"replica,omitempty"`
	Node          uint32                 `protobuf:"varint,2,opt,name=node,proto3" json:"node,omitempty"`
	unknownFields protoimpl.UnknownFields
	sizeCache     protoimpl.SizeCache
}

func (x *EventualVnode) Reset() {
	*x = EventualVnode{}
	mi := &file_amulet_v1_amulet_proto_msgTypes[19]
	ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
	ms.StoreMessageInfo(mi)
}

func (x *EventualVnode) String() string {
	return protoimpl.X.MessageStringOf(x)
}

func (*EventualVnode) ProtoMessage() {}

func (x *EventualVnode) ProtoReflect() protoreflect.Message {
	mi := &file_amulet_v1_amulet_proto_msgTypes[19]
	if x != nil {
		ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
		if ms.LoadMessageInfo() == nil {
			ms.StoreMessageInfo(mi)
		}
		return ms
	}
	return mi.MessageOf(x)
}

// Deprecated: Use EventualVnode.ProtoReflect.Descriptor instead.
func (*EventualVnode) Descriptor() ([]byte, []int) {
	return file_amulet_v1_amulet_proto_rawDescGZIP(), []int{19}
}

func (x *EventualVnode) GetReplica() uint64 {
	if x != nil {
		return x.Replica
	}
	return 0
}

func (x *EventualVnode) GetNode() uint32 {
	if x != nil {
		return x.Node
	}
	return 0
}

type HashLayout struct {
	state         protoimpl.MessageState `protogen:"open.v1"`
	unknownFields protoimpl.UnknownFields
	sizeCache     protoimpl.SizeCache
}

func (x *HashLayout) Reset() {
	*x = HashLayout{}
	mi := &file_amulet_v1_amulet_proto_msgTypes[20]
	ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
	ms.StoreMessageInfo(mi)
}

func (x *HashLayout) String() string {
	return protoimpl.X.MessageStringOf(x)
}

func (*HashLayout) ProtoMessage() {}

func (x *HashLayout) ProtoReflect() protoreflect.Message {
	mi := &file_amulet_v1_amulet_proto_msgTypes[20]
	if x != nil {
		ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
		if ms.LoadMessageInfo() == nil {
			ms.StoreMessageInfo(mi)
		}
		return ms
	}
	return mi.MessageOf(x)
}

// Deprecated: Use HashLayout.ProtoReflect.Descriptor instead.
func (*HashLayout) Descriptor() ([]byte, []int) {
	return file_amulet_v1_amulet_proto_rawDescGZIP(), []int{20}
}

type RangeLayout struct {
	state         protoimpl.MessageState `protogen:"open.v1"`
	Splits        []*RangeSplit          `protobuf:"bytes,1,rep,name=splits,proto3" json:"splits,omitempty"`
	unknownFields protoimpl.UnknownFields
	sizeCache     protoimpl.SizeCache
}

func (x *RangeLayout) Reset() {
	*x = RangeLayout{}
	mi := &file_amulet_v1_amulet_proto_msgTypes[21]
	ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
	ms.StoreMessageInfo(mi)
}

func (x *RangeLayout) String() string {
	return protoimpl.X.MessageStringOf(x)
}

func (*RangeLayout) ProtoMessage() {}

func (x *RangeLayout) ProtoReflect() protoreflect.Message {
	mi := &file_amulet_v1_amulet_proto_msgTypes[21]
	if x != nil {
		ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
		if ms.LoadMessageInfo() == nil {
			ms.StoreMessageInfo(mi)
		}
		return ms
	}
	return mi.MessageOf(x)
}

// Deprecated: Use RangeLayout.ProtoReflect.Descriptor instead.
func (*RangeLayout) Descriptor() ([]byte, []int) {
	return file_amulet_v1_amulet_proto_rawDescGZIP(), []int{21}
}

func (x *RangeLayout) GetSplits() []*RangeSplit {
	if x != nil {
		return x.Splits
	}
	return nil
}

type RangeSplit struct {
	state         protoimpl.MessageState `protogen:"open.v1"`
	StartKey      []byte                 `protobuf:"bytes,1,opt,name=start_key,json=startKey,proto3" json:"start_key,omitempty"`
	Partition     uint32                 `protobuf:"varint,2,opt,name=partition,proto3" json:"partition,omitempty"`
	unknownFields protoimpl.UnknownFields
	sizeCache     protoimpl.SizeCache
}

func (x *RangeSplit) Reset() {
	*x = RangeSplit{}
	mi := &file_amulet_v1_amulet_proto_msgTypes[22]
	ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
	ms.StoreMessageInfo(mi)
}

func (x *RangeSplit) String() string {
	return protoimpl.X.MessageStringOf(x)
}

func (*RangeSplit) ProtoMessage() {}

func (x *RangeSplit) ProtoReflect() protoreflect.Message {
	mi := &file_amulet_v1_amulet_proto_msgTypes[22]
	if x != nil {
		ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
		if ms.LoadMessageInfo() == nil {
			ms.StoreMessageInfo(mi)
		}
		return ms
	}
	return mi.MessageOf(x)
}

// Deprecated: Use RangeSplit.ProtoReflect.Descriptor instead.
func (*RangeSplit) Descriptor() ([]byte, []int) {
	return file_amulet_v1_amulet_proto_rawDescGZIP(), []int{22}
}

func (x *RangeSplit) GetStartKey() []byte {
	if x != nil {
		return x.StartKey
	}
	return nil
}

func (x *RangeSplit) GetPartition() uint32 {
	if x != nil {
		return x.Partition
	}
	return 0
}

type NodeAddress struct {
	state         protoimpl.MessageState `protogen:"open.v1"`
	Node          uint32                 `protobuf:"varint,1,opt,name=node,proto3" json:"node,omitempty"`
	Address       string                 `protobuf:"bytes,2,opt,name=address,proto3" json:"address,omitempty"`
	unknownFields protoimpl.UnknownFields
	sizeCache     protoimpl.SizeCache
}

func (x *NodeAddress) Reset() {
	*x = NodeAddress{}
	mi := &file_amulet_v1_amulet_proto_msgTypes[23]
	ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
	ms.StoreMessageInfo(mi)
}

func (x *NodeAddress) String() string {
	return protoimpl.X.MessageStringOf(x)
}

func (*NodeAddress) ProtoMessage() {}

func (x *NodeAddress) ProtoReflect() protoreflect.Message {
	mi := &file_amulet_v1_amulet_proto_msgTypes[23]
	if x != nil {
		ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
		if ms.LoadMessageInfo() == nil {
			ms.StoreMessageInfo(mi)
		}
		return ms
	}
	return mi.MessageOf(x)
}

// Deprecated: Use NodeAddress.ProtoReflect.Descriptor instead.
func (*NodeAddress) Descriptor() ([]byte, []int) {
	return file_amulet_v1_amulet_proto_rawDescGZIP(), []int{23}
}

func (x *NodeAddress) GetNode() uint32 {
	if x != nil {
		return x.Node
	}
	return 0
}

func (x *NodeAddress) GetAddress() string {
	if x != nil {
		return x.Address
	}
	return ""
}

type OpenSessionRequest struct {
	state protoimpl.MessageState `protogen:"open.v1"`
	// Drawn at random by the client; never 0.
	Session       uint64 `protobuf:"varint,1,opt,name=session,proto3" json:"session,omitempty"`
	LeaseMicros   uint64 `protobuf:"varint,2,opt,name=lease_micros,json=leaseMicros,proto3" json:"lease_micros,omitempty"`
	MapVersion    uint64 `protobuf:"varint,3,opt,name=map_version,json=mapVersion,proto3" json:"map_version,omitempty"`
	unknownFields protoimpl.UnknownFields
	sizeCache     protoimpl.SizeCache
}

func (x *OpenSessionRequest) Reset() {
	*x = OpenSessionRequest{}
	mi := &file_amulet_v1_amulet_proto_msgTypes[24]
	ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
	ms.StoreMessageInfo(mi)
}

func (x *OpenSessionRequest) String() string {
	return protoimpl.X.MessageStringOf(x)
}

func (*OpenSessionRequest) ProtoMessage() {}

func (x *OpenSessionRequest) ProtoReflect() protoreflect.Message {
	mi := &file_amulet_v1_amulet_proto_msgTypes[24]
	if x != nil {
		ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
		if ms.LoadMessageInfo() == nil {
			ms.StoreMessageInfo(mi)
		}
		return ms
	}
	return mi.MessageOf(x)
}

// Deprecated: Use OpenSessionRequest.ProtoReflect.Descriptor instead.
func (*OpenSessionRequest) Descriptor() ([]byte, []int) {
	return file_amulet_v1_amulet_proto_rawDescGZIP(), []int{24}
}

func (x *OpenSessionRequest) GetSession() uint64 {
	if x != nil {
		return x.Session
	}
	return 0
}

func (x *OpenSessionRequest) GetLeaseMicros() uint64 {
	if x != nil {
		return x.LeaseMicros
	}
	return 0
}

func (x *OpenSessionRequest) GetMapVersion() uint64 {
	if x != nil {
		return x.MapVersion
	}
	return 0
}

type CloseSessionRequest struct {
	state         protoimpl.MessageState `protogen:"open.v1"`
	Session       uint64                 `protobuf:"varint,1,opt,name=session,proto3" json:"session,omitempty"`
	MapVersion    uint64                 `protobuf:"varint,2,opt,name=map_version,json=mapVersion,proto3" json:"map_version,omitempty"`
	unknownFields protoimpl.UnknownFields
	sizeCache     protoimpl.SizeCache
}

func (x *CloseSessionRequest) Reset() {
	*x = CloseSessionRequest{}
	mi := &file_amulet_v1_amulet_proto_msgTypes[25]
	ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
	ms.StoreMessageInfo(mi)
}

func (x *CloseSessionRequest) String() string {
	return protoimpl.X.MessageStringOf(x)
}

func (*CloseSessionRequest) ProtoMessage() {}

func (x *CloseSessionRequest) ProtoReflect() protoreflect.Message {
	mi := &file_amulet_v1_amulet_proto_msgTypes[25]
	if x != nil {
		ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
		if ms.LoadMessageInfo() == nil {
			ms.StoreMessageInfo(mi)
		}
		return ms
	}
	return mi.MessageOf(x)
}

// Deprecated: Use CloseSessionRequest.ProtoReflect.Descriptor instead.
func (*CloseSessionRequest) Descriptor() ([]byte, []int) {
	return file_amulet_v1_amulet_proto_rawDescGZIP(), []int{25}
}

func (x *CloseSessionRequest) GetSession() uint64 {
	if x != nil {
		return x.Session
	}
	return 0
}

func (x *CloseSessionRequest) GetMapVersion() uint64 {
	if x != nil {
		return x.MapVersion
	}
	return 0
}

type SessionResponse struct {
	state         protoimpl.MessageState `protogen:"open.v1"`
	unknownFields protoimpl.UnknownFields
	sizeCache     protoimpl.SizeCache
}

func (x *SessionResponse) Reset() {
	*x = SessionResponse{}
	mi := &file_amulet_v1_amulet_proto_msgTypes[26]
	ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
	ms.StoreMessageInfo(mi)
}

func (x *SessionResponse) String() string {
	return protoimpl.X.MessageStringOf(x)
}

func (*SessionResponse) ProtoMessage() {}

func (x *SessionResponse) ProtoReflect() protoreflect.Message {
	mi := &file_amulet_v1_amulet_proto_msgTypes[26]
	if x != nil {
		ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
		if ms.LoadMessageInfo() == nil {
			ms.StoreMessageInfo(mi)
		}
		return ms
	}
	return mi.MessageOf(x)
}

// Deprecated: Use SessionResponse.ProtoReflect.Descriptor instead.
func (*SessionResponse) Descriptor() ([]byte, []int) {
	return file_amulet_v1_amulet_proto_rawDescGZIP(), []int{26}
}

// Routing and exactly-once stamp of a map operation.
type RequestHeader struct {
	state protoimpl.MessageState `protogen:"open.v1"`
	// The partition map version the client routed by.
	MapVersion uint64 `protobuf:"varint,1,opt,name=map_version,json=mapVersion,proto3" json:"map_version,omitempty"`
	// The partition the request was sent for; the node hands it to its
	// replica of that partition.
	Partition uint32 `protobuf:"varint,2,opt,name=partition,proto3" json:"partition,omitempty"`
	// Session and sequence (1, 2, ...); a resend keeps the sequence. A
	// session of 0 means none: the operation may apply twice if resent.
	Session       uint64 `protobuf:"varint,3,opt,name=session,proto3" json:"session,omitempty"`
	Sequence      uint64 `protobuf:"varint,4,opt,name=sequence,proto3" json:"sequence,omitempty"`
	unknownFields protoimpl.UnknownFields
	sizeCache     protoimpl.SizeCache
}

func (x *RequestHeader) Reset() {
	*x = RequestHeader{}
	mi := &file_amulet_v1_amulet_proto_msgTypes[27]
	ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
	ms.StoreMessageInfo(mi)
}

func (x *RequestHeader) String() string {
	return protoimpl.X.MessageStringOf(x)
}

func (*RequestHeader) ProtoMessage() {}

func (x *RequestHeader) ProtoReflect() protoreflect.Message {
	mi := &file_amulet_v1_amulet_proto_msgTypes[27]
	if x != nil {
		ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
		if ms.LoadMessageInfo() == nil {
			ms.StoreMessageInfo(mi)
		}
		return ms
	}
	return mi.MessageOf(x)
}

// Deprecated: Use RequestHeader.ProtoReflect.Descriptor instead.
func (*RequestHeader) Descriptor() ([]byte, []int) {
	return file_amulet_v1_amulet_proto_rawDescGZIP(), []int{27}
}

func (x *RequestHeader) GetMapVersion() uint64 {
	if x != nil {
		return x.MapVersion
	}
	return 0
}

func (x *RequestHeader) GetPartition() uint32 {
	if x != nil {
		return x.Partition
	}
	return 0
}

func (x *RequestHeader) GetSession() uint64 {
	if x != nil {
		return x.Session
	}
	return 0
}

func (x *RequestHeader) GetSequence() uint64 {
	if x != nil {
		return x.Sequence
	}
	return 0
}

type MapRequest struct {
	state  protoimpl.MessageState `protogen:"open.v1"`
	Header *RequestHeader         `protobuf:"bytes,1,opt,name=header,proto3" json:"header,omitempty"`
	// Types that are valid to be assigned to Op:
	//
	//	*MapRequest_CreateMap
	//	*MapRequest_DropMap
	//	*MapRequest_Get
	//	*MapRequest_ContainsKey
	//	*MapRequest_Put
	//	*MapRequest_Remove
	//	*MapRequest_PutIfAbsent
	//	*MapRequest_Replace
	//	*MapRequest_ReplaceIfEquals
	//	*MapRequest_RemoveIfEquals
	//	*MapRequest_PutAll
	//	*MapRequest_ContainsValue
	//	*MapRequest_Size
	//	*MapRequest_IsEmpty
	//	*MapRequest_Clear
	//	*MapRequest_FirstEntry
	//	*MapRequest_LastEntry
	//	*MapRequest_NearestEntry
	//	*MapRequest_Range
	//	*MapRequest_OpenSnapshot
	//	*MapRequest_ReleaseSnapshot
	//	*MapRequest_BeginTransaction
	//	*MapRequest_EndTransaction
	//	*MapRequest_Commit
	//	*MapRequest_MergeFields
	//	*MapRequest_CreateLog
	//	*MapRequest_DropLog
	//	*MapRequest_Append
	//	*MapRequest_MultiAppend
	//	*MapRequest_ReadLog
	//	*MapRequest_TrimLog
	//	*MapRequest_LogBounds
	Op            isMapRequest_Op `protobuf_oneof:"op"`
	unknownFields protoimpl.UnknownFields
	sizeCache     protoimpl.SizeCache
}

func (x *MapRequest) Reset() {
	*x = MapRequest{}
	mi := &file_amulet_v1_amulet_proto_msgTypes[28]
	ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
	ms.StoreMessageInfo(mi)
}

func (x *MapRequest) String() string {
	return protoimpl.X.MessageStringOf(x)
}

func (*MapRequest) ProtoMessage() {}

func (x *MapRequest) ProtoReflect() protoreflect.Message {
	mi := &file_amulet_v1_amulet_proto_msgTypes[28]
	if x != nil {
		ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
		if ms.LoadMessageInfo() == nil {
			ms.StoreMessageInfo(mi)
		}
		return ms
	}
	return mi.MessageOf(x)
}

// Deprecated: Use MapRequest.ProtoReflect.Descriptor instead.
func (*MapRequest) Descriptor() ([]byte, []int) {
	return file_amulet_v1_amulet_proto_rawDescGZIP(), []int{28}
}

func (x *MapRequest) GetHeader() *RequestHeader {
	if x != nil {
		return x.Header
	}
	return nil
}

func (x *MapRequest) GetOp() isMapRequest_Op {
	if x != nil {
		return x.Op
	}
	return nil
}

func (x *MapRequest) GetCreateMap() *CreateMap {
	if x != nil {
		if x, ok := x.Op.(*MapRequest_CreateMap); ok {
			return x.CreateMap
		}
	}
	return nil
}

func (x *MapRequest) GetDropMap() *DropMap {
	if x != nil {
		if x, ok := x.Op.(*MapRequest_DropMap); ok {
			return x.DropMap
		}
	}
	return nil
}

func (x *MapRequest) GetGet() *Get {
	if x != nil {
		if x, ok := x.Op.(*MapRequest_Get); ok {
			return x.Get
		}
	}
	return nil
}

func (x *MapRequest) GetContainsKey() *ContainsKey {
	if x != nil {
		if x, ok := x.Op.(*MapRequest_ContainsKey); ok {
			return x.ContainsKey
		}
	}
	return nil
}

func (x *MapRequest) GetPut() *Put {
	if x != nil {
		if x, ok := x.Op.(*MapRequest_Put); ok {
			return x.Put
		}
	}
	return nil
}

func (x *MapRequest) GetRemove() *Remove {
	if x != nil {
		if x, ok := x.Op.(*MapRequest_Remove); ok {
			return x.Remove
		}
	}
	return nil
}

func (x *MapRequest) GetPutIfAbsent() *PutIfAbsent {
	if x != nil {
		if x, ok := x.Op.(*MapRequest_PutIfAbsent); ok {
			return x.PutIfAbsent
		}
	}
	return nil
}

func (x *MapRequest) GetReplace() *Replace {
	if x != nil {
		if x, ok := x.Op.(*MapRequest_Replace); ok {
			return x.Replace
		}
	}
	return nil
}

func (x *MapRequest) GetReplaceIfEquals() *ReplaceIfEquals {
	if x != nil {
		if x, ok := x.Op.(*MapRequest_ReplaceIfEquals); ok {
			return x.ReplaceIfEquals
		}
	}
	return nil
}

func (x *MapRequest) GetRemoveIfEquals() *RemoveIfEquals {
	if x != nil {
		if x, ok := x.Op.(*MapRequest_RemoveIfEquals); ok {
			return x.RemoveIfEquals
		}
	}
	return nil
}

func (x *MapRequest) GetPutAll() *PutAll {
	if x != nil {
		if x, ok := x.Op.(*MapRequest_PutAll); ok {
			return x.PutAll
		}
	}
	return nil
}

func (x *MapRequest) GetContainsValue() *ContainsValue {
	if x != nil {
		if x, ok := x.Op.(*MapRequest_ContainsValue); ok {
			return x.ContainsValue
		}
	}
	return nil
}

func (x *MapRequest) GetSize() *Size {
	if x != nil {
		if x, ok := x.Op.(*MapRequest_Size); ok {
			return x.Size
		}
	}
	return nil
}

func (x *MapRequest) GetIsEmpty() *IsEmpty {
	if x != nil {
		if x, ok := x.Op.(*MapRequest_IsEmpty); ok {
			return x.IsEmpty
		}
	}
	return nil
}

func (x *MapRequest) GetClear() *Clear {
	if x != nil {
		if x, ok := x.Op.(*MapRequest_Clear); ok {
			return x.Clear
		}
	}
	return nil
}

func (x *MapRequest) GetFirstEntry() *FirstEntry {
	if x != nil {
		if x, ok := x.Op.(*MapRequest_FirstEntry); ok {
			return x.FirstEntry
		}
	}
	return nil
}

func (x *MapRequest) GetLastEntry() *LastEntry {
	if x != nil {
		if x, ok := x.Op.(*MapRequest_LastEntry); ok {
			return x.LastEntry
		}
	}
	return nil
}

func (x *MapRequest) GetNearestEntry() *NearestEntry {
	if x != nil {
		if x, ok := x.Op.(*MapRequest_NearestEntry); ok {
			return x.NearestEntry
		}
	}
	return nil
}

func (x *MapRequest) GetRange() *Range {
	if x != nil {
		if x, ok := x.Op.(*MapRequest_Range); ok {
			return x.Range
		}
	}
	return nil
}

func (x *MapRequest) GetOpenSnapshot() *OpenSnapshot {
	if x != nil {
		if x, ok := x.Op.(*MapRequest_OpenSnapshot); ok {
			return x.OpenSnapshot
		}
	}
	return nil
}

func (x *MapRequest) GetReleaseSnapshot() *ReleaseSnapshot {
	if x != nil {
		if x, ok := x.Op.(*MapRequest_ReleaseSnapshot); ok {
			return x.ReleaseSnapshot
		}
	}
	return nil
}

func (x *MapRequest) GetBeginTransaction() *BeginTransaction {
	if x != nil {
		if x, ok := x.Op.(*MapRequest_BeginTransaction); ok {
			return x.BeginTransaction
		}
	}
	return nil
}

func (x *MapRequest) GetEndTransaction() *EndTransaction {
	if x != nil {
		if x, ok := x.Op.(*MapRequest_EndTransaction); ok {
			return x.EndTransaction
		}
	}
	return nil
}

func (x *MapRequest) GetCommit() *Commit {
	if x != nil {
		if x, ok := x.Op.(*MapRequest_Commit); ok {
			return x.Commit
		}
	}
	return nil
}

func (x *MapRequest) GetMergeFields() *MergeFields {
	if x != nil {
		if x, ok := x.Op.(*MapRequest_MergeFields); ok {
			return x.MergeFields
		}
	}
	return nil
}

func (x *MapRequest) GetCreateLog() *CreateLog {
	if x != nil {
		if x, ok := x.Op.(*MapRequest_CreateLog); ok {
			return x.CreateLog
		}
	}
	return nil
}

func (x *MapRequest) GetDropLog() *DropLog {
	if x != nil {
		if x, ok := x.Op.(*MapRequest_DropLog); ok {
			return x.DropLog
		}
	}
	return nil
}

func (x *MapRequest) GetAppend() *Append {
	if x != nil {
		if x, ok := x.Op.(*MapRequest_Append); ok {
			return x.Append
		}
	}
	return nil
}

func (x *MapRequest) GetMultiAppend() *MultiAppend {
	if x != nil {
		if x, ok := x.Op.(*MapRequest_MultiAppend); ok {
			return x.MultiAppend
		}
	}
	return nil
}

func (x *MapRequest) GetReadLog() *ReadLog {
	if x != nil {
		if x, ok := x.Op.(*MapRequest_ReadLog); ok {
			return x.ReadLog
		}
	}
	return nil
}

func (x *MapRequest) GetTrimLog() *TrimLog {
	if x != nil {
		if x, ok := x.Op.(*MapRequest_TrimLog); ok {
			return x.TrimLog
		}
	}
	return nil
}

func (x *MapRequest) GetLogBounds() *LogBounds {
	if x != nil {
		if x, ok := x.Op.(*MapRequest_LogBounds); ok {
			return x.LogBounds
		}
	}
	return nil
}

type isMapRequest_Op interface {
	isMapRequest_Op()
}

type MapRequest_CreateMap struct {
	CreateMap *CreateMap `protobuf:"bytes,10,opt,name=create_map,json=createMap,proto3,oneof"`
}

type MapRequest_DropMap struct {
	DropMap *DropMap `protobuf:"bytes,11,opt,name=drop_map,json=dropMap,proto3,oneof"`
}

type MapRequest_Get struct {
	Get *Get `protobuf:"bytes,12,opt,name=get,proto3,oneof"`
}

type MapRequest_ContainsKey struct {
	ContainsKey *ContainsKey `protobuf:"bytes,13,opt,name=contains_key,json=containsKey,proto3,oneof"`
}

type MapRequest_Put struct {
	Put *Put `protobuf:"bytes,14,opt,name=put,proto3,oneof"`
}

type MapRequest_Remove struct {
	Remove *Remove `protobuf:"bytes,15,opt,name=remove,proto3,oneof"`
}

type MapRequest_PutIfAbsent struct {
	PutIfAbsent *PutIfAbsent `protobuf:"bytes,16,opt,name=put_if_absent,json=putIfAbsent,proto3,oneof"`
}

type MapRequest_Replace struct {
	Replace *Replace `protobuf:"bytes,17,opt,name=replace,proto3,oneof"`
}

type MapRequest_ReplaceIfEquals struct {
	ReplaceIfEquals *ReplaceIfEquals `protobuf:"bytes,18,opt,name=replace_if_equals,json=replaceIfEquals,proto3,oneof"`
}

type MapRequest_RemoveIfEquals struct {
	RemoveIfEquals *RemoveIfEquals `protobuf:"bytes,19,opt,name=remove_if_equals,json=removeIfEquals,proto3,oneof"`
}

type MapRequest_PutAll struct {
	PutAll *PutAll `protobuf:"bytes,20,opt,name=put_all,json=putAll,proto3,oneof"`
}

type MapRequest_ContainsValue struct {
	ContainsValue *ContainsValue `protobuf:"bytes,21,opt,name=contains_value,json=containsValue,proto3,oneof"`
}

type MapRequest_Size struct {
	Size *Size `protobuf:"bytes,22,opt,name=size,proto3,oneof"`
}

type MapRequest_IsEmpty struct {
	IsEmpty *IsEmpty `protobuf:"bytes,23,opt,name=is_empty,json=isEmpty,proto3,oneof"`
}

type MapRequest_Clear struct {
	Clear *Clear `protobuf:"bytes,24,opt,name=clear,proto3,oneof"`
}

type MapRequest_FirstEntry struct {
	FirstEntry *FirstEntry `protobuf:"bytes,25,opt,name=first_entry,json=firstEntry,proto3,oneof"`
}

type MapRequest_LastEntry struct {
	LastEntry *LastEntry `protobuf:"bytes,26,opt,name=last_entry,json=lastEntry,proto3,oneof"`
}

type MapRequest_NearestEntry struct {
	NearestEntry *NearestEntry `protobuf:"bytes,27,opt,name=nearest_entry,json=nearestEntry,proto3,oneof"`
}

type MapRequest_Range struct {
	Range *Range `protobuf:"bytes,28,opt,name=range,proto3,oneof"`
}

type MapRequest_OpenSnapshot struct {
	OpenSnapshot *OpenSnapshot `protobuf:"bytes,29,opt,name=open_snapshot,json=openSnapshot,proto3,oneof"`
}

type MapRequest_ReleaseSnapshot struct {
	ReleaseSnapshot *ReleaseSnapshot `protobuf:"bytes,30,opt,name=release_snapshot,json=releaseSnapshot,proto3,oneof"`
}

type MapRequest_BeginTransaction struct {
	BeginTransaction *BeginTransaction `protobuf:"bytes,31,opt,name=begin_transaction,json=beginTransaction,proto3,oneof"`
}

type MapRequest_EndTransaction struct {
	EndTransaction *EndTransaction `protobuf:"bytes,32,opt,name=end_transaction,json=endTransaction,proto3,oneof"`
}

type MapRequest_Commit struct {
	Commit *Commit `protobuf:"bytes,33,opt,name=commit,proto3,oneof"`
}

type MapRequest_MergeFields struct {
	MergeFields *MergeFields `protobuf:"bytes,34,opt,name=merge_fields,json=mergeFields,proto3,oneof"`
}

type MapRequest_CreateLog struct {
	CreateLog *CreateLog `protobuf:"bytes,35,opt,name=create_log,json=createLog,proto3,oneof"`
}

type MapRequest_DropLog struct {
	DropLog *DropLog `protobuf:"bytes,36,opt,name=drop_log,json=dropLog,proto3,oneof"`
}

type MapRequest_Append struct {
	Append *Append `protobuf:"bytes,37,opt,name=append,proto3,oneof"`
}

type MapRequest_MultiAppend struct {
	MultiAppend *MultiAppend `protobuf:"bytes,38,opt,name=multi_append,json=multiAppend,proto3,oneof"`
}

type MapRequest_ReadLog struct {
	ReadLog *ReadLog `protobuf:"bytes,39,opt,name=read_log,json=readLog,proto3,oneof"`
}

type MapRequest_TrimLog struct {
	TrimLog *TrimLog `protobuf:"bytes,40,opt,name=trim_log,json=trimLog,proto3,oneof"`
}

type MapRequest_LogBounds struct {
	LogBounds *LogBounds `protobuf:"bytes,41,opt,name=log_bounds,json=logBounds,proto3,oneof"`
}

func (*MapRequest_CreateMap) isMapRequest_Op() {}

func (*MapRequest_DropMap) isMapRequest_Op() {}

func (*MapRequest_Get) isMapRequest_Op() {}

func (*MapRequest_ContainsKey) isMapRequest_Op() {}

func (*MapRequest_Put) isMapRequest_Op() {}

func (*MapRequest_Remove) isMapRequest_Op() {}

func (*MapRequest_PutIfAbsent) isMapRequest_Op() {}

func (*MapRequest_Replace) isMapRequest_Op() {}

func (*MapRequest_ReplaceIfEquals) isMapRequest_Op() {}

func (*MapRequest_RemoveIfEquals) isMapRequest_Op() {}

func (*MapRequest_PutAll) isMapRequest_Op() {}

func (*MapRequest_ContainsValue) isMapRequest_Op() {}

func (*MapRequest_Size) isMapRequest_Op() {}

func (*MapRequest_IsEmpty) isMapRequest_Op() {}

func (*MapRequest_Clear) isMapRequest_Op() {}

func (*MapRequest_FirstEntry) isMapRequest_Op() {}

func (*MapRequest_LastEntry) isMapRequest_Op() {}

func (*MapRequest_NearestEntry) isMapRequest_Op() {}

func (*MapRequest_Range) isMapRequest_Op() {}

func (*MapRequest_OpenSnapshot) isMapRequest_Op() {}

func (*MapRequest_ReleaseSnapshot) isMapRequest_Op() {}

func (*MapRequest_BeginTransaction) isMapRequest_Op() {}

func (*MapRequest_EndTransaction) isMapRequest_Op() {}

func (*MapRequest_Commit) isMapRequest_Op() {}

func (*MapRequest_MergeFields) isMapRequest_Op() {}

func (*MapRequest_CreateLog) isMapRequest_Op() {}

func (*MapRequest_DropLog) isMapRequest_Op() {}

func (*MapRequest_Append) isMapRequest_Op() {}

func (*MapRequest_MultiAppend) isMapRequest_Op() {}

func (*MapRequest_ReadLog) isMapRequest_Op() {}

func (*MapRequest_TrimLog) isMapRequest_Op() {}

func (*MapRequest_LogBounds) isMapRequest_Op() {}

// DLog (docs/logs.md): named logs of entries at dense positions 0, 1, ...
// that are never reused. Logs and maps share one namespace. A log lives
// whole in the partition that owns its name (as a key of its own hash
// keyspace); send its requests to a replica of that partition.
//
// Creates an empty log (every partition; ALREADY_EXISTS if a log or map
// has the name). Replies `done`.
type CreateLog struct {
	state         protoimpl.MessageState `protogen:"open.v1"`
	Log           string                 `protobuf:"bytes,1,opt,name=log,proto3" json:"log,omitempty"`
	unknownFields protoimpl.UnknownFields
	sizeCache     protoimpl.SizeCache
}

func (x *CreateLog) Reset() {
	*x = CreateLog{}
	mi := &file_amulet_v1_amulet_proto_msgTypes[29]
	ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
	ms.StoreMessageInfo(mi)
}

func (x *CreateLog) String() string {
	return protoimpl.X.MessageStringOf(x)
}

func (*CreateLog) ProtoMessage() {}

func (x *CreateLog) ProtoReflect() protoreflect.Message {
	mi := &file_amulet_v1_amulet_proto_msgTypes[29]
	if x != nil {
		ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
		if ms.LoadMessageInfo() == nil {
			ms.StoreMessageInfo(mi)
		}
		return ms
	}
	return mi.MessageOf(x)
}

// Deprecated: Use CreateLog.ProtoReflect.Descriptor instead.
func (*CreateLog) Descriptor() ([]byte, []int) {
	return file_amulet_v1_amulet_proto_rawDescGZIP(), []int{29}
}

func (x *CreateLog) GetLog() string {
	if x != nil {
		return x.Log
	}
	return ""
}

// Drops a log and its entries (every partition). Replies `done`.
type DropLog struct {
	state         protoimpl.MessageState `protogen:"open.v1"`
	Log           string                 `protobuf:"bytes,1,opt,name=log,proto3" json:"log,omitempty"`
	unknownFields protoimpl.UnknownFields
	sizeCache     protoimpl.SizeCache
}

func (x *DropLog) Reset() {
	*x = DropLog{}
	mi := &file_amulet_v1_amulet_proto_msgTypes[30]
	ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
	ms.StoreMessageInfo(mi)
}

func (x *DropLog) String() string {
	return protoimpl.X.MessageStringOf(x)
}

func (*DropLog) ProtoMessage() {}

func (x *DropLog) ProtoReflect() protoreflect.Message {
	mi := &file_amulet_v1_amulet_proto_msgTypes[30]
	if x != nil {
		ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
		if ms.LoadMessageInfo() == nil {
			ms.StoreMessageInfo(mi)
		}
		return ms
	}
	return mi.MessageOf(x)
}

// Deprecated: Use DropLog.ProtoReflect.Descriptor instead.
func (*DropLog) Descriptor() ([]byte, []int) {
	return file_amulet_v1_amulet_proto_rawDescGZIP(), []int{30}
}

func (x *DropLog) GetLog() string {
	if x != nil {
		return x.Log
	}
	return ""
}

// Appends one entry (at most value_bytes_max bytes). Replies `position`.
type Append struct {
	state         protoimpl.MessageState `protogen:"open.v1"`
	Log           string                 `protobuf:"bytes,1,opt,name=log,proto3" json:"log,omitempty"`
	Value         []byte                 `protobuf:"bytes,2,opt,name=value,proto3" json:"value,omitempty"`
	unknownFields protoimpl.UnknownFields
	sizeCache     protoimpl.SizeCache
}

func (x *Append) Reset() {
	*x = Append{}
	mi := &file_amulet_v1_amulet_proto_msgTypes[31]
	ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
	ms.StoreMessageInfo(mi)
}

func (x *Append) String() string {
	return protoimpl.X.MessageStringOf(x)
}

func (*Append) ProtoMessage() {}

func (x *Append) ProtoReflect() protoreflect.Message {
	mi := &file_amulet_v1_amulet_proto_msgTypes[31]
	if x != nil {
		ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
		if ms.LoadMessageInfo() == nil {
			ms.StoreMessageInfo(mi)
		}
		return ms
	}
	return mi.MessageOf(x)
}

// Deprecated: Use Append.ProtoReflect.Descriptor instead.
func (*Append) Descriptor() ([]byte, []int) {
	return file_amulet_v1_amulet_proto_rawDescGZIP(), []int{31}
}

func (x *Append) GetLog() string {
	if x != nil {
		return x.Log
	}
	return ""
}

func (x *Append) GetValue() []byte {
	if x != nil {
		return x.Value
	}
	return nil
}

// Appends each entry to its log, all or none, in one step of the order
// (the partitions of all the logs; one log may appear several times and
// gets consecutive positions). At least one entry, at most
// put_all_entries_max entries and put_all_bytes_max bytes. Replies
// `positions`, in the order given.
type MultiAppend struct {
	state         protoimpl.MessageState `protogen:"open.v1"`
	Entries       []*LogEntry            `protobuf:"bytes,1,rep,name=entries,proto3" json:"entries,omitempty"`
	unknownFields protoimpl.UnknownFields
	sizeCache     protoimpl.SizeCache
}

func (x *MultiAppend) Reset() {
	*x = MultiAppend{}
	mi := &file_amulet_v1_amulet_proto_msgTypes[32]
	ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
	ms.StoreMessageInfo(mi)
}

func (x *MultiAppend) String() string {
	return protoimpl.X.MessageStringOf(x)
}

func (*MultiAppend) ProtoMessage() {}

func (x *MultiAppend) ProtoReflect() protoreflect.Message {
	mi := &file_amulet_v1_amulet_proto_msgTypes[32]
	if x != nil {
		ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
		if ms.LoadMessageInfo() == nil {
			ms.StoreMessageInfo(mi)
		}
		return ms
	}
	return mi.MessageOf(x)
}

// Deprecated: Use MultiAppend.ProtoReflect.Descriptor instead.
func (*MultiAppend) Descriptor() ([]byte, []int) {
	return file_amulet_v1_amulet_proto_rawDescGZIP(), []int{32}
}

func (x *MultiAppend) GetEntries() []*LogEntry {
	if x != nil {
		return x.Entries
	}
	return nil
}

type LogEntry struct {
	state         protoimpl.MessageState `protogen:"open.v1"`
	Log           string                 `protobuf:"bytes,1,opt,name=log,proto3" json:"log,omitempty"`
	Value         []byte                 `protobuf:"bytes,2,opt,name=value,proto3" json:"value,omitempty"`
	unknownFields protoimpl.UnknownFields
	sizeCache     protoimpl.SizeCache
}

func (x *LogEntry) Reset() {
	*x = LogEntry{}
	mi := &file_amulet_v1_amulet_proto_msgTypes[33]
	ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
	ms.StoreMessageInfo(mi)
}

func (x *LogEntry) String() string {
	return protoimpl.X.MessageStringOf(x)
}

func (*LogEntry) ProtoMessage() {}

func (x *LogEntry) ProtoReflect() protoreflect.Message {
	mi := &file_amulet_v1_amulet_proto_msgTypes[33]
	if x != nil {
		ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
		if ms.LoadMessageInfo() == nil {
			ms.StoreMessageInfo(mi)
		}
		return ms
	}
	return mi.MessageOf(x)
}

// Deprecated: Use LogEntry.ProtoReflect.Descriptor instead.
func (*LogEntry) Descriptor() ([]byte, []int) {
	return file_amulet_v1_amulet_proto_rawDescGZIP(), []int{33}
}

func (x *LogEntry) GetLog() string {
	if x != nil {
		return x.Log
	}
	return ""
}

func (x *LogEntry) GetValue() []byte {
	if x != nil {
		return x.Value
	}
	return nil
}

// Up to max_entries (1 ..= range_entries_max) entries from position
// `from`, at most log_read_bytes_max bytes (but at least one entry when
// one exists). `from` equal to the log's end reads nothing (poll);
// below its first position: OUT_OF_RANGE (trimmed); past its end:
// OUT_OF_RANGE. Replies `log_entries`.
type ReadLog struct {
	state         protoimpl.MessageState `protogen:"open.v1"`
	Log           string                 `protobuf:"bytes,1,opt,name=log,proto3" json:"log,omitempty"`
	From          uint64                 `protobuf:"varint,2,opt,name=from,proto3" json:"from,omitempty"`
	MaxEntries    uint32                 `protobuf:"varint,3,opt,name=max_entries,json=maxEntries,proto3" json:"max_entries,omitempty"`
	unknownFields protoimpl.UnknownFields
	sizeCache     protoimpl.SizeCache
}

func (x *ReadLog) Reset() {
	*x = ReadLog{}
	mi := &file_amulet_v1_amulet_proto_msgTypes[34]
	ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
	ms.StoreMessageInfo(mi)
}

func (x *ReadLog) String() string {
	return protoimpl.X.MessageStringOf(x)
}

func (*ReadLog) ProtoMessage() {}

func (x *ReadLog) ProtoReflect() protoreflect.Message {
	mi := &file_amulet_v1_amulet_proto_msgTypes[34]
	if x != nil {
		ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
		if ms.LoadMessageInfo() == nil {
			ms.StoreMessageInfo(mi)
		}
		return ms
	}
	return mi.MessageOf(x)
}

// Deprecated: Use ReadLog.ProtoReflect.Descriptor instead.
func (*ReadLog) Descriptor() ([]byte, []int) {
	return file_amulet_v1_amulet_proto_rawDescGZIP(), []int{34}
}

func (x *ReadLog) GetLog() string {
	if x != nil {
		return x.Log
	}
	return ""
}

func (x *ReadLog) GetFrom() uint64 {
	if x != nil {
		return x.From
	}
	return 0
}

func (x *ReadLog) GetMaxEntries() uint32 {
	if x != nil {
		return x.MaxEntries
	}
	return 0
}

// Drops the entries below position `below` (at most the log's end,
// OUT_OF_RANGE otherwise; below the first position: nothing changes).
// Replies `log_bounds`.
type TrimLog struct {
	state         protoimpl.MessageState `protogen:"open.v1"`
	Log           string                 `protobuf:"bytes,1,opt,name=log,proto3" json:"log,omitempty"`
	Below         uint64                 `protobuf:"varint,2,opt,name=below,proto3" json:"below,omitempty"`
	unknownFields protoimpl.UnknownFields
	sizeCache     protoimpl.SizeCache
}

func (x *TrimLog) Reset() {
	*x = TrimLog{}
	mi := &file_amulet_v1_amulet_proto_msgTypes[35]
	ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
	ms.StoreMessageInfo(mi)
}

func (x *TrimLog) String() string {
	return protoimpl.X.MessageStringOf(x)
}

func (*TrimLog) ProtoMessage() {}

func (x *TrimLog) ProtoReflect() protoreflect.Message {
	mi := &file_amulet_v1_amulet_proto_msgTypes[35]
	if x != nil {
		ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
		if ms.LoadMessageInfo() == nil {
			ms.StoreMessageInfo(mi)
		}
		return ms
	}
	return mi.MessageOf(x)
}

// Deprecated: Use TrimLog.ProtoReflect.Descriptor instead.
func (*TrimLog) Descriptor() ([]byte, []int) {
	return file_amulet_v1_amulet_proto_rawDescGZIP(), []int{35}
}

func (x *TrimLog) GetLog() string {
	if x != nil {
		return x.Log
	}
	return ""
}

func (x *TrimLog) GetBelow() uint64 {
	if x != nil {
		return x.Below
	}
	return 0
}

// The log's first position and end. Replies `log_bounds`.
type LogBounds struct {
	state         protoimpl.MessageState `protogen:"open.v1"`
	Log           string                 `protobuf:"bytes,1,opt,name=log,proto3" json:"log,omitempty"`
	unknownFields protoimpl.UnknownFields
	sizeCache     protoimpl.SizeCache
}

func (x *LogBounds) Reset() {
	*x = LogBounds{}
	mi := &file_amulet_v1_amulet_proto_msgTypes[36]
	ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
	ms.StoreMessageInfo(mi)
}

func (x *LogBounds) String() string {
	return protoimpl.X.MessageStringOf(x)
}

func (*LogBounds) ProtoMessage() {}

func (x *LogBounds) ProtoReflect() protoreflect.Message {
	mi := &file_amulet_v1_amulet_proto_msgTypes[36]
	if x != nil {
		ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
		if ms.LoadMessageInfo() == nil {
			ms.StoreMessageInfo(mi)
		}
		return ms
	}
	return mi.MessageOf(x)
}

// Deprecated: Use LogBounds.ProtoReflect.Descriptor instead.
func (*LogBounds) Descriptor() ([]byte, []int) {
	return file_amulet_v1_amulet_proto_rawDescGZIP(), []int{36}
}

func (x *LogBounds) GetLog() string {
	if x != nil {
		return x.Log
	}
	return ""
}

// Takes a read version for transactions (every partition; see
// docs/transactions.md): the response's read_version. Every partition
// keeps a snapshot of all its maps there for lease_micros of replicated
// time (1 ..= read_version_lease_micros_max) unless ended first. Several
// transactions that begin together may share one. end_read_versions are
// ended first (a client ends the versions it is done with in its next
// begin instead of ordering an EndTransaction for each).
type BeginTransaction struct {
	state           protoimpl.MessageState `protogen:"open.v1"`
	LeaseMicros     uint64                 `protobuf:"varint,1,opt,name=lease_micros,json=leaseMicros,proto3" json:"lease_micros,omitempty"`
	EndReadVersions []uint64               `protobuf:"varint,2,rep,packed,name=end_read_versions,json=endReadVersions,proto3" json:"end_read_versions,omitempty"`
	unknownFields   protoimpl.UnknownFields
	sizeCache       protoimpl.SizeCache
}

func (x *BeginTransaction) Reset() {
	*x = BeginTransaction{}
	mi := &file_amulet_v1_amulet_proto_msgTypes[37]
	ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
	ms.StoreMessageInfo(mi)
}

func (x *BeginTransaction) String() string {
	return protoimpl.X.MessageStringOf(x)
}

func (*BeginTransaction) ProtoMessage() {}

func (x *BeginTransaction) ProtoReflect() protoreflect.Message {
	mi := &file_amulet_v1_amulet_proto_msgTypes[37]
	if x != nil {
		ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
		if ms.LoadMessageInfo() == nil {
			ms.StoreMessageInfo(mi)
		}
		return ms
	}
	return mi.MessageOf(x)
}

// Deprecated: Use BeginTransaction.ProtoReflect.Descriptor instead.
func (*BeginTransaction) Descriptor() ([]byte, []int) {
	return file_amulet_v1_amulet_proto_rawDescGZIP(), []int{37}
}

func (x *BeginTransaction) GetLeaseMicros() uint64 {
	if x != nil {
		return x.LeaseMicros
	}
	return 0
}

func (x *BeginTransaction) GetEndReadVersions() []uint64 {
	if x != nil {
		return x.EndReadVersions
	}
	return nil
}

// Ends a read version early (every partition; idempotent).
type EndTransaction struct {
	state         protoimpl.MessageState `protogen:"open.v1"`
	ReadVersion   uint64                 `protobuf:"varint,1,opt,name=read_version,json=readVersion,proto3" json:"read_version,omitempty"`
	unknownFields protoimpl.UnknownFields
	sizeCache     protoimpl.SizeCache
}

func (x *EndTransaction) Reset() {
	*x = EndTransaction{}
	mi := &file_amulet_v1_amulet_proto_msgTypes[38]
	ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
	ms.StoreMessageInfo(mi)
}

func (x *EndTransaction) String() string {
	return protoimpl.X.MessageStringOf(x)
}

func (*EndTransaction) ProtoMessage() {}

func (x *EndTransaction) ProtoReflect() protoreflect.Message {
	mi := &file_amulet_v1_amulet_proto_msgTypes[38]
	if x != nil {
		ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
		if ms.LoadMessageInfo() == nil {
			ms.StoreMessageInfo(mi)
		}
		return ms
	}
	return mi.MessageOf(x)
}

// Deprecated: Use EndTransaction.ProtoReflect.Descriptor instead.
func (*EndTransaction) Descriptor() ([]byte, []int) {
	return file_amulet_v1_amulet_proto_rawDescGZIP(), []int{38}
}

func (x *EndTransaction) GetReadVersion() uint64 {
	if x != nil {
		return x.ReadVersion
	}
	return 0
}

// A range of keys; an absent end is open.
type KeyRange struct {
	state         protoimpl.MessageState `protogen:"open.v1"`
	From          *KeyBound              `protobuf:"bytes,1,opt,name=from,proto3" json:"from,omitempty"`
	To            *KeyBound              `protobuf:"bytes,2,opt,name=to,proto3" json:"to,omitempty"`
	unknownFields protoimpl.UnknownFields
	sizeCache     protoimpl.SizeCache
}

func (x *KeyRange) Reset() {
	*x = KeyRange{}
	mi := &file_amulet_v1_amulet_proto_msgTypes[39]
	ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
	ms.StoreMessageInfo(mi)
}

func (x *KeyRange) String() string {
	return protoimpl.X.MessageStringOf(x)
}

func (*KeyRange) ProtoMessage() {}

func (x *KeyRange) ProtoReflect() protoreflect.Message {
	mi := &file_amulet_v1_amulet_proto_msgTypes[39]
	if x != nil {
		ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
		if ms.LoadMessageInfo() == nil {
			ms.StoreMessageInfo(mi)
		}
		return ms
	}
	return mi.MessageOf(x)
}

// Deprecated: Use KeyRange.ProtoReflect.Descriptor instead.
func (*KeyRange) Descriptor() ([]byte, []int) {
	return file_amulet_v1_amulet_proto_rawDescGZIP(), []int{39}
}

func (x *KeyRange) GetFrom() *KeyBound {
	if x != nil {
		return x.From
	}
	return nil
}

func (x *KeyRange) GetTo() *KeyBound {
	if x != nil {
		return x.To
	}
	return nil
}

// A range a transaction read (a single key: from = to, both inclusive).
type ReadConflict struct {
	state         protoimpl.MessageState `protogen:"open.v1"`
	Map           string                 `protobuf:"bytes,1,opt,name=map,proto3" json:"map,omitempty"`
	Range         *KeyRange              `protobuf:"bytes,2,opt,name=range,proto3" json:"range,omitempty"`
	unknownFields protoimpl.UnknownFields
	sizeCache     protoimpl.SizeCache
}

func (x *ReadConflict) Reset() {
	*x = ReadConflict{}
	mi := &file_amulet_v1_amulet_proto_msgTypes[40]
	ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
	ms.StoreMessageInfo(mi)
}

func (x *ReadConflict) String() string {
	return protoimpl.X.MessageStringOf(x)
}

func (*ReadConflict) ProtoMessage() {}

func (x *ReadConflict) ProtoReflect() protoreflect.Message {
	mi := &file_amulet_v1_amulet_proto_msgTypes[40]
	if x != nil {
		ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
		if ms.LoadMessageInfo() == nil {
			ms.StoreMessageInfo(mi)
		}
		return ms
	}
	return mi.MessageOf(x)
}

// Deprecated: Use ReadConflict.ProtoReflect.Descriptor instead.
func (*ReadConflict) Descriptor() ([]byte, []int) {
	return file_amulet_v1_amulet_proto_rawDescGZIP(), []int{40}
}

func (x *ReadConflict) GetMap() string {
	if x != nil {
		return x.Map
	}
	return ""
}

func (x *ReadConflict) GetRange() *KeyRange {
	if x != nil {
		return x.Range
	}
	return nil
}

// A write of a transaction; an absent value removes the key.
type TxnWrite struct {
	state         protoimpl.MessageState `protogen:"open.v1"`
	Map           string                 `protobuf:"bytes,1,opt,name=map,proto3" json:"map,omitempty"`
	Key           []byte                 `protobuf:"bytes,2,opt,name=key,proto3" json:"key,omitempty"`
	Value         []byte                 `protobuf:"bytes,3,opt,name=value,proto3,oneof" json:"value,omitempty"`
	unknownFields protoimpl.UnknownFields
	sizeCache     protoimpl.SizeCache
}

func (x *TxnWrite) Reset() {
	*x = TxnWrite{}
	mi := &file_amulet_v1_amulet_proto_msgTypes[41]
	ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
	ms.StoreMessageInfo(mi)
}

func (x *TxnWrite) String() string {
	return protoimpl.X.MessageStringOf(x)
}

func (*TxnWrite) ProtoMessage() {}

func (x *TxnWrite) ProtoReflect() protoreflect.Message {
	mi := &file_amulet_v1_amulet_proto_msgTypes[41]
	if x != nil {
		ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
		if ms.LoadMessageInfo() == nil {
			ms.StoreMessageInfo(mi)
		}
		return ms
	}
	return mi.MessageOf(x)
}

// Deprecated: Use TxnWrite.ProtoReflect.Descriptor instead.
func (*TxnWrite) Descriptor() ([]byte, []int) {
	return file_amulet_v1_amulet_proto_rawDescGZIP(), []int{41}
}

func (x *TxnWrite) GetMap() string {
	if x != nil {
		return x.Map
	}
	return ""
}

func (x *TxnWrite) GetKey() []byte {
	if x != nil {
		return x.Key
	}
	return nil
}

func (x *TxnWrite) GetValue() []byte {
	if x != nil {
		return x.Value
	}
	return nil
}

// Commits a transaction: every partition holding a written key or part of
// a read range checks that no key it holds in the read ranges was written
// at or after read_version; all apply the writes or none does. Send it in
// a session (exactly-once: a resent commit never applies twice). Without
// a read version (blind writes) it never conflicts.
type Commit struct {
	state         protoimpl.MessageState `protogen:"open.v1"`
	ReadVersion   *uint64                `protobuf:"varint,1,opt,name=read_version,json=readVersion,proto3,oneof" json:"read_version,omitempty"`
	Reads         []*ReadConflict        `protobuf:"bytes,2,rep,name=reads,proto3" json:"reads,omitempty"`
	Writes        []*TxnWrite            `protobuf:"bytes,3,rep,name=writes,proto3" json:"writes,omitempty"`
	unknownFields protoimpl.UnknownFields
	sizeCache     protoimpl.SizeCache
}

func (x *Commit) Reset() {
	*x = Commit{}
	mi := &file_amulet_v1_amulet_proto_msgTypes[42]
	ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
	ms.StoreMessageInfo(mi)
}

func (x *Commit) String() string {
	return protoimpl.X.MessageStringOf(x)
}

func (*Commit) ProtoMessage() {}

func (x *Commit) ProtoReflect() protoreflect.Message {
	mi := &file_amulet_v1_amulet_proto_msgTypes[42]
	if x != nil {
		ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
		if ms.LoadMessageInfo() == nil {
			ms.StoreMessageInfo(mi)
		}
		return ms
	}
	return mi.MessageOf(x)
}

// Deprecated: Use Commit.ProtoReflect.Descriptor instead.
func (*Commit) Descriptor() ([]byte, []int) {
	return file_amulet_v1_amulet_proto_rawDescGZIP(), []int{42}
}

func (x *Commit) GetReadVersion() uint64 {
	if x != nil && x.ReadVersion != nil {
		return *x.ReadVersion
	}
	return 0
}

func (x *Commit) GetReads() []*ReadConflict {
	if x != nil {
		return x.Reads
	}
	return nil
}

func (x *Commit) GetWrites() []*TxnWrite {
	if x != nil {
		return x.Writes
	}
	return nil
}

// A read of a transaction (get, contains_key, range, first_entry,
// last_entry, nearest_entry, size, is_empty, contains_value) served from
// the read version's snapshot by this node's replica of `partition`,
// without ordering. The header's map_version is checked as for Execute.
type ReadAtRequest struct {
	state         protoimpl.MessageState `protogen:"open.v1"`
	ReadVersion   uint64                 `protobuf:"varint,1,opt,name=read_version,json=readVersion,proto3" json:"read_version,omitempty"`
	Request       *MapRequest            `protobuf:"bytes,2,opt,name=request,proto3" json:"request,omitempty"`
	unknownFields protoimpl.UnknownFields
	sizeCache     protoimpl.SizeCache
}

func (x *ReadAtRequest) Reset() {
	*x = ReadAtRequest{}
	mi := &file_amulet_v1_amulet_proto_msgTypes[43]
	ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
	ms.StoreMessageInfo(mi)
}

func (x *ReadAtRequest) String() string {
	return protoimpl.X.MessageStringOf(x)
}

func (*ReadAtRequest) ProtoMessage() {}

func (x *ReadAtRequest) ProtoReflect() protoreflect.Message {
	mi := &file_amulet_v1_amulet_proto_msgTypes[43]
	if x != nil {
		ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
		if ms.LoadMessageInfo() == nil {
			ms.StoreMessageInfo(mi)
		}
		return ms
	}
	return mi.MessageOf(x)
}

// Deprecated: Use ReadAtRequest.ProtoReflect.Descriptor instead.
func (*ReadAtRequest) Descriptor() ([]byte, []int) {
	return file_amulet_v1_amulet_proto_rawDescGZIP(), []int{43}
}

func (x *ReadAtRequest) GetReadVersion() uint64 {
	if x != nil {
		return x.ReadVersion
	}
	return 0
}

func (x *ReadAtRequest) GetRequest() *MapRequest {
	if x != nil {
		return x.Request
	}
	return nil
}

// The read's response; written_since: a key the read covered was written
// at or after the read version in this partition, so a transaction that
// writes will conflict (it may give up now).
type ReadAtResponse struct {
	state         protoimpl.MessageState `protogen:"open.v1"`
	Response      *MapResponse           `protobuf:"bytes,1,opt,name=response,proto3" json:"response,omitempty"`
	WrittenSince  bool                   `protobuf:"varint,2,opt,name=written_since,json=writtenSince,proto3" json:"written_since,omitempty"`
	unknownFields protoimpl.UnknownFields
	sizeCache     protoimpl.SizeCache
}

func (x *ReadAtResponse) Reset() {
	*x = ReadAtResponse{}
	mi := &file_amulet_v1_amulet_proto_msgTypes[44]
	ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
	ms.StoreMessageInfo(mi)
}

func (x *ReadAtResponse) String() string {
	return protoimpl.X.MessageStringOf(x)
}

func (*ReadAtResponse) ProtoMessage() {}

func (x *ReadAtResponse) ProtoReflect() protoreflect.Message {
	mi := &file_amulet_v1_amulet_proto_msgTypes[44]
	if x != nil {
		ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
		if ms.LoadMessageInfo() == nil {
			ms.StoreMessageInfo(mi)
		}
		return ms
	}
	return mi.MessageOf(x)
}

// Deprecated: Use ReadAtResponse.ProtoReflect.Descriptor instead.
func (*ReadAtResponse) Descriptor() ([]byte, []int) {
	return file_amulet_v1_amulet_proto_rawDescGZIP(), []int{44}
}

func (x *ReadAtResponse) GetResponse() *MapResponse {
	if x != nil {
		return x.Response
	}
	return nil
}

func (x *ReadAtResponse) GetWrittenSince() bool {
	if x != nil {
		return x.WrittenSince
	}
	return false
}

// Creates an empty map. Without a layout the map is hash-partitioned.
type CreateMap struct {
	state         protoimpl.MessageState `protogen:"open.v1"`
	Map           string                 `protobuf:"bytes,1,opt,name=map,proto3" json:"map,omitempty"`
	Layout        *Layout                `protobuf:"bytes,2,opt,name=layout,proto3" json:"layout,omitempty"`
	unknownFields protoimpl.UnknownFields
	sizeCache     protoimpl.SizeCache
}

func (x *CreateMap) Reset() {
	*x = CreateMap{}
	mi := &file_amulet_v1_amulet_proto_msgTypes[45]
	ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
	ms.StoreMessageInfo(mi)
}

func (x *CreateMap) String() string {
	return protoimpl.X.MessageStringOf(x)
}

func (*CreateMap) ProtoMessage() {}

func (x *CreateMap) ProtoReflect() protoreflect.Message {
	mi := &file_amulet_v1_amulet_proto_msgTypes[45]
	if x != nil {
		ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
		if ms.LoadMessageInfo() == nil {
			ms.StoreMessageInfo(mi)
		}
		return ms
	}
	return mi.MessageOf(x)
}

// Deprecated: Use CreateMap.ProtoReflect.Descriptor instead.
func (*CreateMap) Descriptor() ([]byte, []int) {
	return file_amulet_v1_amulet_proto_rawDescGZIP(), []int{45}
}

func (x *CreateMap) GetMap() string {
	if x != nil {
		return x.Map
	}
	return ""
}

func (x *CreateMap) GetLayout() *Layout {
	if x != nil {
		return x.Layout
	}
	return nil
}

type DropMap struct {
	state         protoimpl.MessageState `protogen:"open.v1"`
	Map           string                 `protobuf:"bytes,1,opt,name=map,proto3" json:"map,omitempty"`
	unknownFields protoimpl.UnknownFields
	sizeCache     protoimpl.SizeCache
}

func (x *DropMap) Reset() {
	*x = DropMap{}
	mi := &file_amulet_v1_amulet_proto_msgTypes[46]
	ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
	ms.StoreMessageInfo(mi)
}

func (x *DropMap) String() string {
	return protoimpl.X.MessageStringOf(x)
}

func (*DropMap) ProtoMessage() {}

func (x *DropMap) ProtoReflect() protoreflect.Message {
	mi := &file_amulet_v1_amulet_proto_msgTypes[46]
	if x != nil {
		ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
		if ms.LoadMessageInfo() == nil {
			ms.StoreMessageInfo(mi)
		}
		return ms
	}
	return mi.MessageOf(x)
}

// Deprecated: Use DropMap.ProtoReflect.Descriptor instead.
func (*DropMap) Descriptor() ([]byte, []int) {
	return file_amulet_v1_amulet_proto_rawDescGZIP(), []int{46}
}

func (x *DropMap) GetMap() string {
	if x != nil {
		return x.Map
	}
	return ""
}

// Replies `value`.
type Get struct {
	state         protoimpl.MessageState `protogen:"open.v1"`
	Map           string                 `protobuf:"bytes,1,opt,name=map,proto3" json:"map,omitempty"`
	Key           []byte                 `protobuf:"bytes,2,opt,name=key,proto3" json:"key,omitempty"`
	unknownFields protoimpl.UnknownFields
	sizeCache     protoimpl.SizeCache
}

func (x *Get) Reset() {
	*x = Get{}
	mi := &file_amulet_v1_amulet_proto_msgTypes[47]
	ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
	ms.StoreMessageInfo(mi)
}

func (x *Get) String() string {
	return protoimpl.X.MessageStringOf(x)
}

func (*Get) ProtoMessage() {}

func (x *Get) ProtoReflect() protoreflect.Message {
	mi := &file_amulet_v1_amulet_proto_msgTypes[47]
	if x != nil {
		ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
		if ms.LoadMessageInfo() == nil {
			ms.StoreMessageInfo(mi)
		}
		return ms
	}
	return mi.MessageOf(x)
}

// Deprecated: Use Get.ProtoReflect.Descriptor instead.
func (*Get) Descriptor() ([]byte, []int) {
	return file_amulet_v1_amulet_proto_rawDescGZIP(), []int{47}
}

func (x *Get) GetMap() string {
	if x != nil {
		return x.Map
	}
	return ""
}

func (x *Get) GetKey() []byte {
	if x != nil {
		return x.Key
	}
	return nil
}

// Replies `flag`.
type ContainsKey struct {
	state         protoimpl.MessageState `protogen:"open.v1"`
	Map           string                 `protobuf:"bytes,1,opt,name=map,proto3" json:"map,omitempty"`
	Key           []byte                 `protobuf:"bytes,2,opt,name=key,proto3" json:"key,omitempty"`
	unknownFields protoimpl.UnknownFields
	sizeCache     protoimpl.SizeCache
}

func (x *ContainsKey) Reset() {
	*x = ContainsKey{}
	mi := &file_amulet_v1_amulet_proto_msgTypes[48]
	ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
	ms.StoreMessageInfo(mi)
}

func (x *ContainsKey) String() string {
	return protoimpl.X.MessageStringOf(x)
}

func (*ContainsKey) ProtoMessage() {}

func (x *ContainsKey) ProtoReflect() protoreflect.Message {
	mi := &file_amulet_v1_amulet_proto_msgTypes[48]
	if x != nil {
		ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
		if ms.LoadMessageInfo() == nil {
			ms.StoreMessageInfo(mi)
		}
		return ms
	}
	return mi.MessageOf(x)
}

// Deprecated: Use ContainsKey.ProtoReflect.Descriptor instead.
func (*ContainsKey) Descriptor() ([]byte, []int) {
	return file_amulet_v1_amulet_proto_rawDescGZIP(), []int{48}
}

func (x *ContainsKey) GetMap() string {
	if x != nil {
		return x.Map
	}
	return ""
}

func (x *ContainsKey) GetKey() []byte {
	if x != nil {
		return x.Key
	}
	return nil
}

// Replies `value`: the previous value.
type Put struct {
	state         protoimpl.MessageState `protogen:"open.v1"`
	Map           string                 `protobuf:"bytes,1,opt,name=map,proto3" json:"map,omitempty"`
	Key           []byte                 `protobuf:"bytes,2,opt,name=key,proto3" json:"key,omitempty"`
	Value         []byte                 `protobuf:"bytes,3,opt,name=value,proto3" json:"value,omitempty"`
	unknownFields protoimpl.UnknownFields
	sizeCache     protoimpl.SizeCache
}

func (x *Put) Reset() {
	*x = Put{}
	mi := &file_amulet_v1_amulet_proto_msgTypes[49]
	ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
	ms.StoreMessageInfo(mi)
}

func (x *Put) String() string {
	return protoimpl.X.MessageStringOf(x)
}

func (*Put) ProtoMessage() {}

func (x *Put) ProtoReflect() protoreflect.Message {
	mi := &file_amulet_v1_amulet_proto_msgTypes[49]
	if x != nil {
		ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
		if ms.LoadMessageInfo() == nil {
			ms.StoreMessageInfo(mi)
		}
		return ms
	}
	return mi.MessageOf(x)
}

// Deprecated: Use Put.ProtoReflect.Descriptor instead.
func (*Put) Descriptor() ([]byte, []int) {
	return file_amulet_v1_amulet_proto_rawDescGZIP(), []int{49}
}

func (x *Put) GetMap() string {
	if x != nil {
		return x.Map
	}
	return ""
}

func (x *Put) GetKey() []byte {
	if x != nil {
		return x.Key
	}
	return nil
}

func (x *Put) GetValue() []byte {
	if x != nil {
		return x.Value
	}
	return nil
}

// Replies `value`: the removed value.
type Remove struct {
	state         protoimpl.MessageState `protogen:"open.v1"`
	Map           string                 `protobuf:"bytes,1,opt,name=map,proto3" json:"map,omitempty"`
	Key           []byte                 `protobuf:"bytes,2,opt,name=key,proto3" json:"key,omitempty"`
	unknownFields protoimpl.UnknownFields
	sizeCache     protoimpl.SizeCache
}

func (x *Remove) Reset() {
	*x = Remove{}
	mi := &file_amulet_v1_amulet_proto_msgTypes[50]
	ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
	ms.StoreMessageInfo(mi)
}

func (x *Remove) String() string {
	return protoimpl.X.MessageStringOf(x)
}

func (*Remove) ProtoMessage() {}

func (x *Remove) ProtoReflect() protoreflect.Message {
	mi := &file_amulet_v1_amulet_proto_msgTypes[50]
	if x != nil {
		ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
		if ms.LoadMessageInfo() == nil {
			ms.StoreMessageInfo(mi)
		}
		return ms
	}
	return mi.MessageOf(x)
}

// Deprecated: Use Remove.ProtoReflect.Descriptor instead.
func (*Remove) Descriptor() ([]byte, []int) {
	return file_amulet_v1_amulet_proto_rawDescGZIP(), []int{50}
}

func (x *Remove) GetMap() string {
	if x != nil {
		return x.Map
	}
	return ""
}

func (x *Remove) GetKey() []byte {
	if x != nil {
		return x.Key
	}
	return nil
}

// Replies `value`: the existing value (absent: it was set).
type PutIfAbsent struct {
	state         protoimpl.MessageState `protogen:"open.v1"`
	Map           string                 `protobuf:"bytes,1,opt,name=map,proto3" json:"map,omitempty"`
	Key           []byte                 `protobuf:"bytes,2,opt,name=key,proto3" json:"key,omitempty"`
	Value         []byte                 `protobuf:"bytes,3,opt,name=value,proto3" json:"value,omitempty"`
	unknownFields protoimpl.UnknownFields
	sizeCache     protoimpl.SizeCache
}

func (x *PutIfAbsent) Reset() {
	*x = PutIfAbsent{}
	mi := &file_amulet_v1_amulet_proto_msgTypes[51]
	ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
	ms.StoreMessageInfo(mi)
}

func (x *PutIfAbsent) String() string {
	return protoimpl.X.MessageStringOf(x)
}

func (*PutIfAbsent) ProtoMessage() {}

func (x *PutIfAbsent) ProtoReflect() protoreflect.Message {
	mi := &file_amulet_v1_amulet_proto_msgTypes[51]
	if x != nil {
		ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
		if ms.LoadMessageInfo() == nil {
			ms.StoreMessageInfo(mi)
		}
		return ms
	}
	return mi.MessageOf(x)
}

// Deprecated: Use PutIfAbsent.ProtoReflect.Descriptor instead.
func (*PutIfAbsent) Descriptor() ([]byte, []int) {
	return file_amulet_v1_amulet_proto_rawDescGZIP(), []int{51}
}

func (x *PutIfAbsent) GetMap() string {
	if x != nil {
		return x.Map
	}
	return ""
}

func (x *PutIfAbsent) GetKey() []byte {
	if x != nil {
		return x.Key
	}
	return nil
}

func (x *PutIfAbsent) GetValue() []byte {
	if x != nil {
		return x.Value
	}
	return nil
}

// Replies `value`: the previous value (absent: nothing changed).
type Replace struct {
	state         protoimpl.MessageState `protogen:"open.v1"`
	Map           string                 `protobuf:"bytes,1,opt,name=map,proto3" json:"map,omitempty"`
	Key           []byte                 `protobuf:"bytes,2,opt,name=key,proto3" json:"key,omitempty"`
	Value         []byte                 `protobuf:"bytes,3,opt,name=value,proto3" json:"value,omitempty"`
	unknownFields protoimpl.UnknownFields
	sizeCache     protoimpl.SizeCache
}

func (x *Replace) Reset() {
	*x = Replace{}
	mi := &file_amulet_v1_amulet_proto_msgTypes[52]
	ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
	ms.StoreMessageInfo(mi)
}

func (x *Replace) String() string {
	return protoimpl.X.MessageStringOf(x)
}

func (*Replace) ProtoMessage() {}

func (x *Replace) ProtoReflect() protoreflect.Message {
	mi := &file_amulet_v1_amulet_proto_msgTypes[52]
	if x != nil {
		ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
		if ms.LoadMessageInfo() == nil {
			ms.StoreMessageInfo(mi)
		}
		return ms
	}
	return mi.MessageOf(x)
}

// Deprecated: Use Replace.ProtoReflect.Descriptor instead.
func (*Replace) Descriptor() ([]byte, []int) {
	return file_amulet_v1_amulet_proto_rawDescGZIP(), []int{52}
}

func (x *Replace) GetMap() string {
	if x != nil {
		return x.Map
	}
	return ""
}

func (x *Replace) GetKey() []byte {
	if x != nil {
		return x.Key
	}
	return nil
}

func (x *Replace) GetValue() []byte {
	if x != nil {
		return x.Value
	}
	return nil
}

// Replies `flag`: whether it replaced.
type ReplaceIfEquals struct {
	state         protoimpl.MessageState `protogen:"open.v1"`
	Map           string                 `protobuf:"bytes,1,opt,name=map,proto3" json:"map,omitempty"`
	Key           []byte                 `protobuf:"bytes,2,opt,name=key,proto3" json:"key,omitempty"`
	Expected      []byte                 `protobuf:"bytes,3,opt,name=expected,proto3" json:"expected,omitempty"`
	Value         []byte                 `protobuf:"bytes,4,opt,name=value,proto3" json:"value,omitempty"`
	unknownFields protoimpl.UnknownFields
	sizeCache     protoimpl.SizeCache
}

func (x *ReplaceIfEquals) Reset() {
	*x = ReplaceIfEquals{}
	mi := &file_amulet_v1_amulet_proto_msgTypes[53]
	ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
	ms.StoreMessageInfo(mi)
}

func (x *ReplaceIfEquals) String() string {
	return protoimpl.X.MessageStringOf(x)
}

func (*ReplaceIfEquals) ProtoMessage() {}

func (x *ReplaceIfEquals) ProtoReflect() protoreflect.Message {
	mi := &file_amulet_v1_amulet_proto_msgTypes[53]
	if x != nil {
		ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
		if ms.LoadMessageInfo() == nil {
			ms.StoreMessageInfo(mi)
		}
		return ms
	}
	return mi.MessageOf(x)
}

// Deprecated: Use ReplaceIfEquals.ProtoReflect.Descriptor instead.
func (*ReplaceIfEquals) Descriptor() ([]byte, []int) {
	return file_amulet_v1_amulet_proto_rawDescGZIP(), []int{53}
}

func (x *ReplaceIfEquals) GetMap() string {
	if x != nil {
		return x.Map
	}
	return ""
}

func (x *ReplaceIfEquals) GetKey() []byte {
	if x != nil {
		return x.Key
	}
	return nil
}

func (x *ReplaceIfEquals) GetExpected() []byte {
	if x != nil {
		return x.Expected
	}
	return nil
}

func (x *ReplaceIfEquals) GetValue() []byte {
	if x != nil {
		return x.Value
	}
	return nil
}

// Replies `flag`: whether it removed.
type RemoveIfEquals struct {
	state         protoimpl.MessageState `protogen:"open.v1"`
	Map           string                 `protobuf:"bytes,1,opt,name=map,proto3" json:"map,omitempty"`
	Key           []byte                 `protobuf:"bytes,2,opt,name=key,proto3" json:"key,omitempty"`
	Expected      []byte                 `protobuf:"bytes,3,opt,name=expected,proto3" json:"expected,omitempty"`
	unknownFields protoimpl.UnknownFields
	sizeCache     protoimpl.SizeCache
}

func (x *RemoveIfEquals) Reset() {
	*x = RemoveIfEquals{}
	mi := &file_amulet_v1_amulet_proto_msgTypes[54]
	ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
	ms.StoreMessageInfo(mi)
}

func (x *RemoveIfEquals) String() string {
	return protoimpl.X.MessageStringOf(x)
}

func (*RemoveIfEquals) ProtoMessage() {}

func (x *RemoveIfEquals) ProtoReflect() protoreflect.Message {
	mi := &file_amulet_v1_amulet_proto_msgTypes[54]
	if x != nil {
		ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
		if ms.LoadMessageInfo() == nil {
			ms.StoreMessageInfo(mi)
		}
		return ms
	}
	return mi.MessageOf(x)
}

// Deprecated: Use RemoveIfEquals.ProtoReflect.Descriptor instead.
func (*RemoveIfEquals) Descriptor() ([]byte, []int) {
	return file_amulet_v1_amulet_proto_rawDescGZIP(), []int{54}
}

func (x *RemoveIfEquals) GetMap() string {
	if x != nil {
		return x.Map
	}
	return ""
}

func (x *RemoveIfEquals) GetKey() []byte {
	if x != nil {
		return x.Key
	}
	return nil
}

func (x *RemoveIfEquals) GetExpected() []byte {
	if x != nil {
		return x.Expected
	}
	return nil
}

// Atomic over every partition involved. Replies `done`.
type PutAll struct {
	state         protoimpl.MessageState `protogen:"open.v1"`
	Map           string                 `protobuf:"bytes,1,opt,name=map,proto3" json:"map,omitempty"`
	Entries       []*Entry               `protobuf:"bytes,2,rep,name=entries,proto3" json:"entries,omitempty"`
	unknownFields protoimpl.UnknownFields
	sizeCache     protoimpl.SizeCache
}

func (x *PutAll) Reset() {
	*x = PutAll{}
	mi := &file_amulet_v1_amulet_proto_msgTypes[55]
	ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
	ms.StoreMessageInfo(mi)
}

func (x *PutAll) String() string {
	return protoimpl.X.MessageStringOf(x)
}

func (*PutAll) ProtoMessage() {}

func (x *PutAll) ProtoReflect() protoreflect.Message {
	mi := &file_amulet_v1_amulet_proto_msgTypes[55]
	if x != nil {
		ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
		if ms.LoadMessageInfo() == nil {
			ms.StoreMessageInfo(mi)
		}
		return ms
	}
	return mi.MessageOf(x)
}

// Deprecated: Use PutAll.ProtoReflect.Descriptor instead.
func (*PutAll) Descriptor() ([]byte, []int) {
	return file_amulet_v1_amulet_proto_rawDescGZIP(), []int{55}
}

func (x *PutAll) GetMap() string {
	if x != nil {
		return x.Map
	}
	return ""
}

func (x *PutAll) GetEntries() []*Entry {
	if x != nil {
		return x.Entries
	}
	return nil
}

// Sets and removes fields of the field record stored at `key`
// (docs/field-records.md) in one step, keeping its other fields: a field
// with a value is set, one without is removed. Replies `flag`: whether the
// key had a value (a missing key stays missing). At least one field, each
// named once (INVALID_ARGUMENT otherwise); a stored value that is not a
// field record gets FAILED_PRECONDITION and is left as it is.
type MergeFields struct {
	state         protoimpl.MessageState `protogen:"open.v1"`
	Map           string                 `protobuf:"bytes,1,opt,name=map,proto3" json:"map,omitempty"`
	Key           []byte                 `protobuf:"bytes,2,opt,name=key,proto3" json:"key,omitempty"`
	Fields        []*Field               `protobuf:"bytes,3,rep,name=fields,proto3" json:"fields,omitempty"`
	unknownFields protoimpl.UnknownFields
	sizeCache     protoimpl.SizeCache
}

func (x *MergeFields) Reset() {
	*x = MergeFields{}
	mi := &file_amulet_v1_amulet_proto_msgTypes[56]
	ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
	ms.StoreMessageInfo(mi)
}

func (x *MergeFields) String() string {
	return protoimpl.X.MessageStringOf(x)
}

func (*MergeFields) ProtoMessage() {}

func (x *MergeFields) ProtoReflect() protoreflect.Message {
	mi := &file_amulet_v1_amulet_proto_msgTypes[56]
	if x != nil {
		ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
		if ms.LoadMessageInfo() == nil {
			ms.StoreMessageInfo(mi)
		}
		return ms
	}
	return mi.MessageOf(x)
}

// Deprecated: Use MergeFields.ProtoReflect.Descriptor instead.
func (*MergeFields) Descriptor() ([]byte, []int) {
	return file_amulet_v1_amulet_proto_rawDescGZIP(), []int{56}
}

func (x *MergeFields) GetMap() string {
	if x != nil {
		return x.Map
	}
	return ""
}

func (x *MergeFields) GetKey() []byte {
	if x != nil {
		return x.Key
	}
	return nil
}

func (x *MergeFields) GetFields() []*Field {
	if x != nil {
		return x.Fields
	}
	return nil
}

type Field struct {
	state         protoimpl.MessageState `protogen:"open.v1"`
	Name          []byte                 `protobuf:"bytes,1,opt,name=name,proto3" json:"name,omitempty"`
	Value         []byte                 `protobuf:"bytes,2,opt,name=value,proto3,oneof" json:"value,omitempty"`
	unknownFields protoimpl.UnknownFields
	sizeCache     protoimpl.SizeCache
}

func (x *Field) Reset() {
	*x = Field{}
	mi := &file_amulet_v1_amulet_proto_msgTypes[57]
	ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
	ms.StoreMessageInfo(mi)
}

func (x *Field) String() string {
	return protoimpl.X.MessageStringOf(x)
}

func (*Field) ProtoMessage() {}

func (x *Field) ProtoReflect() protoreflect.Message {
	mi := &file_amulet_v1_amulet_proto_msgTypes[57]
	if x != nil {
		ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
		if ms.LoadMessageInfo() == nil {
			ms.StoreMessageInfo(mi)
		}
		return ms
	}
	return mi.MessageOf(x)
}

// Deprecated: Use Field.ProtoReflect.Descriptor instead.
func (*Field) Descriptor() ([]byte, []int) {
	return file_amulet_v1_amulet_proto_rawDescGZIP(), []int{57}
}

func (x *Field) GetName() []byte {
	if x != nil {
		return x.Name
	}
	return nil
}

func (x *Field) GetValue() []byte {
	if x != nil {
		return x.Value
	}
	return nil
}

// Replies `flag`.
type ContainsValue struct {
	state         protoimpl.MessageState `protogen:"open.v1"`
	Map           string                 `protobuf:"bytes,1,opt,name=map,proto3" json:"map,omitempty"`
	Value         []byte                 `protobuf:"bytes,2,opt,name=value,proto3" json:"value,omitempty"`
	unknownFields protoimpl.UnknownFields
	sizeCache     protoimpl.SizeCache
}

func (x *ContainsValue) Reset() {
	*x = ContainsValue{}
	mi := &file_amulet_v1_amulet_proto_msgTypes[58]
	ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
	ms.StoreMessageInfo(mi)
}

func (x *ContainsValue) String() string {
	return protoimpl.X.MessageStringOf(x)
}

func (*ContainsValue) ProtoMessage() {}

func (x *ContainsValue) ProtoReflect() protoreflect.Message {
	mi := &file_amulet_v1_amulet_proto_msgTypes[58]
	if x != nil {
		ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
		if ms.LoadMessageInfo() == nil {
			ms.StoreMessageInfo(mi)
		}
		return ms
	}
	return mi.MessageOf(x)
}

// Deprecated: Use ContainsValue.ProtoReflect.Descriptor instead.
func (*ContainsValue) Descriptor() ([]byte, []int) {
	return file_amulet_v1_amulet_proto_rawDescGZIP(), []int{58}
}

func (x *ContainsValue) GetMap() string {
	if x != nil {
		return x.Map
	}
	return ""
}

func (x *ContainsValue) GetValue() []byte {
	if x != nil {
		return x.Value
	}
	return nil
}

// Replies `count`.
type Size struct {
	state         protoimpl.MessageState `protogen:"open.v1"`
	Map           string                 `protobuf:"bytes,1,opt,name=map,proto3" json:"map,omitempty"`
	unknownFields protoimpl.UnknownFields
	sizeCache     protoimpl.SizeCache
}

func (x *Size) Reset() {
	*x = Size{}
	mi := &file_amulet_v1_amulet_proto_msgTypes[59]
	ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
	ms.StoreMessageInfo(mi)
}

func (x *Size) String() string {
	return protoimpl.X.MessageStringOf(x)
}

func (*Size) ProtoMessage() {}

func (x *Size) ProtoReflect() protoreflect.Message {
	mi := &file_amulet_v1_amulet_proto_msgTypes[59]
	if x != nil {
		ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
		if ms.LoadMessageInfo() == nil {
			ms.StoreMessageInfo(mi)
		}
		return ms
	}
	return mi.MessageOf(x)
}

// Deprecated: Use Size.ProtoReflect.Descriptor instead.
func (*Size) Descriptor() ([]byte, []int) {
	return file_amulet_v1_amulet_proto_rawDescGZIP(), []int{59}
}

func (x *Size) GetMap() string {
	if x != nil {
		return x.Map
	}
	return ""
}

// Replies `flag`.
type IsEmpty struct {
	state         protoimpl.MessageState `protogen:"open.v1"`
	Map           string                 `protobuf:"bytes,1,opt,name=map,proto3" json:"map,omitempty"`
	unknownFields protoimpl.UnknownFields
	sizeCache     protoimpl.SizeCache
}

func (x *IsEmpty) Reset() {
	*x = IsEmpty{}
	mi := &file_amulet_v1_amulet_proto_msgTypes[60]
	ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
	ms.StoreMessageInfo(mi)
}

func (x *IsEmpty) String() string {
	return protoimpl.X.MessageStringOf(x)
}

func (*IsEmpty) ProtoMessage() {}

func (x *IsEmpty) ProtoReflect() protoreflect.Message {
	mi := &file_amulet_v1_amulet_proto_msgTypes[60]
	if x != nil {
		ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
		if ms.LoadMessageInfo() == nil {
			ms.StoreMessageInfo(mi)
		}
		return ms
	}
	return mi.MessageOf(x)
}

// Deprecated: Use IsEmpty.ProtoReflect.Descriptor instead.
func (*IsEmpty) Descriptor() ([]byte, []int) {
	return file_amulet_v1_amulet_proto_rawDescGZIP(), []int{60}
}

func (x *IsEmpty) GetMap() string {
	if x != nil {
		return x.Map
	}
	return ""
}

// Replies `done`.
type Clear struct {
	state         protoimpl.MessageState `protogen:"open.v1"`
	Map           string                 `protobuf:"bytes,1,opt,name=map,proto3" json:"map,omitempty"`
	unknownFields protoimpl.UnknownFields
	sizeCache     protoimpl.SizeCache
}

func (x *Clear) Reset() {
	*x = Clear{}
	mi := &file_amulet_v1_amulet_proto_msgTypes[61]
	ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
	ms.StoreMessageInfo(mi)
}

func (x *Clear) String() string {
	return protoimpl.X.MessageStringOf(x)
}

func (*Clear) ProtoMessage() {}

func (x *Clear) ProtoReflect() protoreflect.Message {
	mi := &file_amulet_v1_amulet_proto_msgTypes[61]
	if x != nil {
		ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
		if ms.LoadMessageInfo() == nil {
			ms.StoreMessageInfo(mi)
		}
		return ms
	}
	return mi.MessageOf(x)
}

// Deprecated: Use Clear.ProtoReflect.Descriptor instead.
func (*Clear) Descriptor() ([]byte, []int) {
	return file_amulet_v1_amulet_proto_rawDescGZIP(), []int{61}
}

func (x *Clear) GetMap() string {
	if x != nil {
		return x.Map
	}
	return ""
}

// Replies `entry`.
type FirstEntry struct {
	state         protoimpl.MessageState `protogen:"open.v1"`
	Map           string                 `protobuf:"bytes,1,opt,name=map,proto3" json:"map,omitempty"`
	unknownFields protoimpl.UnknownFields
	sizeCache     protoimpl.SizeCache
}

func (x *FirstEntry) Reset() {
	*x = FirstEntry{}
	mi := &file_amulet_v1_amulet_proto_msgTypes[62]
	ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
	ms.StoreMessageInfo(mi)
}

func (x *FirstEntry) String() string {
	return protoimpl.X.MessageStringOf(x)
}

func (*FirstEntry) ProtoMessage() {}

func (x *FirstEntry) ProtoReflect() protoreflect.Message {
	mi := &file_amulet_v1_amulet_proto_msgTypes[62]
	if x != nil {
		ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
		if ms.LoadMessageInfo() == nil {
			ms.StoreMessageInfo(mi)
		}
		return ms
	}
	return mi.MessageOf(x)
}

// Deprecated: Use FirstEntry.ProtoReflect.Descriptor instead.
func (*FirstEntry) Descriptor() ([]byte, []int) {
	return file_amulet_v1_amulet_proto_rawDescGZIP(), []int{62}
}

func (x *FirstEntry) GetMap() string {
	if x != nil {
		return x.Map
	}
	return ""
}

// Replies `entry`.
type LastEntry struct {
	state         protoimpl.MessageState `protogen:"open.v1"`
	Map           string                 `protobuf:"bytes,1,opt,name=map,proto3" json:"map,omitempty"`
	unknownFields protoimpl.UnknownFields
	sizeCache     protoimpl.SizeCache
}

func (x *LastEntry) Reset() {
	*x = LastEntry{}
	mi := &file_amulet_v1_amulet_proto_msgTypes[63]
	ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
	ms.StoreMessageInfo(mi)
}

func (x *LastEntry) String() string {
	return protoimpl.X.MessageStringOf(x)
}

func (*LastEntry) ProtoMessage() {}

func (x *LastEntry) ProtoReflect() protoreflect.Message {
	mi := &file_amulet_v1_amulet_proto_msgTypes[63]
	if x != nil {
		ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
		if ms.LoadMessageInfo() == nil {
			ms.StoreMessageInfo(mi)
		}
		return ms
	}
	return mi.MessageOf(x)
}

// Deprecated: Use LastEntry.ProtoReflect.Descriptor instead.
func (*LastEntry) Descriptor() ([]byte, []int) {
	return file_amulet_v1_amulet_proto_rawDescGZIP(), []int{63}
}

func (x *LastEntry) GetMap() string {
	if x != nil {
		return x.Map
	}
	return ""
}

// Replies `entry`.
type NearestEntry struct {
	state         protoimpl.MessageState `protogen:"open.v1"`
	Map           string                 `protobuf:"bytes,1,opt,name=map,proto3" json:"map,omitempty"`
	Key           []byte                 `protobuf:"bytes,2,opt,name=key,proto3" json:"key,omitempty"`
	Nearest       Nearest                `protobuf:"varint,3,opt,name=nearest,proto3,enum=amulet.v1.Nearest" json:"nearest,omitempty"`
	unknownFields protoimpl.UnknownFields
	sizeCache     protoimpl.SizeCache
}

func (x *NearestEntry) Reset() {
	*x = NearestEntry{}
	mi := &file_amulet_v1_amulet_proto_msgTypes[64]
	ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
	ms.StoreMessageInfo(mi)
}

func (x *NearestEntry) String() string {
	return protoimpl.X.MessageStringOf(x)
}

func (*NearestEntry) ProtoMessage() {}

func (x *NearestEntry) ProtoReflect() protoreflect.Message {
	mi := &file_amulet_v1_amulet_proto_msgTypes[64]
	if x != nil {
		ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
		if ms.LoadMessageInfo() == nil {
			ms.StoreMessageInfo(mi)
		}
		return ms
	}
	return mi.MessageOf(x)
}

// Deprecated: Use NearestEntry.ProtoReflect.Descriptor instead.
func (*NearestEntry) Descriptor() ([]byte, []int) {
	return file_amulet_v1_amulet_proto_rawDescGZIP(), []int{64}
}

func (x *NearestEntry) GetMap() string {
	if x != nil {
		return x.Map
	}
	return ""
}

func (x *NearestEntry) GetKey() []byte {
	if x != nil {
		return x.Key
	}
	return nil
}

func (x *NearestEntry) GetNearest() Nearest {
	if x != nil {
		return x.Nearest
	}
	return Nearest_NEAREST_UNSPECIFIED
}

type KeyBound struct {
	state         protoimpl.MessageState `protogen:"open.v1"`
	Key           []byte                 `protobuf:"bytes,1,opt,name=key,proto3" json:"key,omitempty"`
	Inclusive     bool                   `protobuf:"varint,2,opt,name=inclusive,proto3" json:"inclusive,omitempty"`
	unknownFields protoimpl.UnknownFields
	sizeCache     protoimpl.SizeCache
}

func (x *KeyBound) Reset() {
	*x = KeyBound{}
	mi := &file_amulet_v1_amulet_proto_msgTypes[65]
	ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
	ms.StoreMessageInfo(mi)
}

func (x *KeyBound) String() string {
	return protoimpl.X.MessageStringOf(x)
}

func (*KeyBound) ProtoMessage() {}

func (x *KeyBound) ProtoReflect() protoreflect.Message {
	mi := &file_amulet_v1_amulet_proto_msgTypes[65]
	if x != nil {
		ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
		if ms.LoadMessageInfo() == nil {
			ms.StoreMessageInfo(mi)
		}
		return ms
	}
	return mi.MessageOf(x)
}

// Deprecated: Use KeyBound.ProtoReflect.Descriptor instead.
func (*KeyBound) Descriptor() ([]byte, []int) {
	return file_amulet_v1_amulet_proto_rawDescGZIP(), []int{65}
}

func (x *KeyBound) GetKey() []byte {
	if x != nil {
		return x.Key
	}
	return nil
}

func (x *KeyBound) GetInclusive() bool {
	if x != nil {
		return x.Inclusive
	}
	return false
}

// Replies `entries`: at most `limit` entries between the bounds (absent:
// open), ascending or, with `reverse`, the highest ones descending.
type Range struct {
	state         protoimpl.MessageState `protogen:"open.v1"`
	Map           string                 `protobuf:"bytes,1,opt,name=map,proto3" json:"map,omitempty"`
	From          *KeyBound              `protobuf:"bytes,2,opt,name=from,proto3" json:"from,omitempty"`
	To            *KeyBound              `protobuf:"bytes,3,opt,name=to,proto3" json:"to,omitempty"`
	Limit         uint32                 `protobuf:"varint,4,opt,name=limit,proto3" json:"limit,omitempty"`
	Reverse       bool                   `protobuf:"varint,5,opt,name=reverse,proto3" json:"reverse,omitempty"`
	unknownFields protoimpl.UnknownFields
	sizeCache     protoimpl.SizeCache
}

func (x *Range) Reset() {
	*x = Range{}
	mi := &file_amulet_v1_amulet_proto_msgTypes[66]
	ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
	ms.StoreMessageInfo(mi)
}

func (x *Range) String() string {
	return protoimpl.X.MessageStringOf(x)
}

func (*Range) ProtoMessage() {}

func (x *Range) ProtoReflect() protoreflect.Message {
	mi := &file_amulet_v1_amulet_proto_msgTypes[66]
	if x != nil {
		ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
		if ms.LoadMessageInfo() == nil {
			ms.StoreMessageInfo(mi)
		}
		return ms
	}
	return mi.MessageOf(x)
}

// Deprecated: Use Range.ProtoReflect.Descriptor instead.
func (*Range) Descriptor() ([]byte, []int) {
	return file_amulet_v1_amulet_proto_rawDescGZIP(), []int{66}
}

func (x *Range) GetMap() string {
	if x != nil {
		return x.Map
	}
	return ""
}

func (x *Range) GetFrom() *KeyBound {
	if x != nil {
		return x.From
	}
	return nil
}

func (x *Range) GetTo() *KeyBound {
	if x != nil {
		return x.To
	}
	return nil
}

func (x *Range) GetLimit() uint32 {
	if x != nil {
		return x.Limit
	}
	return 0
}

func (x *Range) GetReverse() bool {
	if x != nil {
		return x.Reverse
	}
	return false
}

// Replies `snapshot`: its id, then read with ReadSnapshot from a replica
// of every partition.
type OpenSnapshot struct {
	state         protoimpl.MessageState `protogen:"open.v1"`
	Map           string                 `protobuf:"bytes,1,opt,name=map,proto3" json:"map,omitempty"`
	LeaseMicros   uint64                 `protobuf:"varint,2,opt,name=lease_micros,json=leaseMicros,proto3" json:"lease_micros,omitempty"`
	unknownFields protoimpl.UnknownFields
	sizeCache     protoimpl.SizeCache
}

func (x *OpenSnapshot) Reset() {
	*x = OpenSnapshot{}
	mi := &file_amulet_v1_amulet_proto_msgTypes[67]
	ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
	ms.StoreMessageInfo(mi)
}

func (x *OpenSnapshot) String() string {
	return protoimpl.X.MessageStringOf(x)
}

func (*OpenSnapshot) ProtoMessage() {}

func (x *OpenSnapshot) ProtoReflect() protoreflect.Message {
	mi := &file_amulet_v1_amulet_proto_msgTypes[67]
	if x != nil {
		ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
		if ms.LoadMessageInfo() == nil {
			ms.StoreMessageInfo(mi)
		}
		return ms
	}
	return mi.MessageOf(x)
}

// Deprecated: Use OpenSnapshot.ProtoReflect.Descriptor instead.
func (*OpenSnapshot) Descriptor() ([]byte, []int) {
	return file_amulet_v1_amulet_proto_rawDescGZIP(), []int{67}
}

func (x *OpenSnapshot) GetMap() string {
	if x != nil {
		return x.Map
	}
	return ""
}

func (x *OpenSnapshot) GetLeaseMicros() uint64 {
	if x != nil {
		return x.LeaseMicros
	}
	return 0
}

// Replies `done`.
type ReleaseSnapshot struct {
	state         protoimpl.MessageState `protogen:"open.v1"`
	Snapshot      uint64                 `protobuf:"varint,1,opt,name=snapshot,proto3" json:"snapshot,omitempty"`
	unknownFields protoimpl.UnknownFields
	sizeCache     protoimpl.SizeCache
}

func (x *ReleaseSnapshot) Reset() {
	*x = ReleaseSnapshot{}
	mi := &file_amulet_v1_amulet_proto_msgTypes[68]
	ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
	ms.StoreMessageInfo(mi)
}

func (x *ReleaseSnapshot) String() string {
	return protoimpl.X.MessageStringOf(x)
}

func (*ReleaseSnapshot) ProtoMessage() {}

func (x *ReleaseSnapshot) ProtoReflect() protoreflect.Message {
	mi := &file_amulet_v1_amulet_proto_msgTypes[68]
	if x != nil {
		ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
		if ms.LoadMessageInfo() == nil {
			ms.StoreMessageInfo(mi)
		}
		return ms
	}
	return mi.MessageOf(x)
}

// Deprecated: Use ReleaseSnapshot.ProtoReflect.Descriptor instead.
func (*ReleaseSnapshot) Descriptor() ([]byte, []int) {
	return file_amulet_v1_amulet_proto_rawDescGZIP(), []int{68}
}

func (x *ReleaseSnapshot) GetSnapshot() uint64 {
	if x != nil {
		return x.Snapshot
	}
	return 0
}

type Entry struct {
	state         protoimpl.MessageState `protogen:"open.v1"`
	Key           []byte                 `protobuf:"bytes,1,opt,name=key,proto3" json:"key,omitempty"`
	Value         []byte                 `protobuf:"bytes,2,opt,name=value,proto3" json:"value,omitempty"`
	unknownFields protoimpl.UnknownFields
	sizeCache     protoimpl.SizeCache
}

func (x *Entry) Reset() {
	*x = Entry{}
	mi := &file_amulet_v1_amulet_proto_msgTypes[69]
	ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
	ms.StoreMessageInfo(mi)
}

func (x *Entry) String() string {
	return protoimpl.X.MessageStringOf(x)
}

func (*Entry) ProtoMessage() {}

func (x *Entry) ProtoReflect() protoreflect.Message {
	mi := &file_amulet_v1_amulet_proto_msgTypes[69]
	if x != nil {
		ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
		if ms.LoadMessageInfo() == nil {
			ms.StoreMessageInfo(mi)
		}
		return ms
	}
	return mi.MessageOf(x)
}

// Deprecated: Use Entry.ProtoReflect.Descriptor instead.
func (*Entry) Descriptor() ([]byte, []int) {
	return file_amulet_v1_amulet_proto_rawDescGZIP(), []int{69}
}

func (x *Entry) GetKey() []byte {
	if x != nil {
		return x.Key
	}
	return nil
}

func (x *Entry) GetValue() []byte {
	if x != nil {
		return x.Value
	}
	return nil
}

type OptionalValue struct {
	state         protoimpl.MessageState `protogen:"open.v1"`
	Value         []byte                 `protobuf:"bytes,1,opt,name=value,proto3,oneof" json:"value,omitempty"`
	unknownFields protoimpl.UnknownFields
	sizeCache     protoimpl.SizeCache
}

func (x *OptionalValue) Reset() {
	*x = OptionalValue{}
	mi := &file_amulet_v1_amulet_proto_msgTypes[70]
	ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
	ms.StoreMessageInfo(mi)
}

func (x *OptionalValue) String() string {
	return protoimpl.X.MessageStringOf(x)
}

func (*OptionalValue) ProtoMessage() {}

func (x *OptionalValue) ProtoReflect() protoreflect.Message {
	mi := &file_amulet_v1_amulet_proto_msgTypes[70]
	if x != nil {
		ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
		if ms.LoadMessageInfo() == nil {
			ms.StoreMessageInfo(mi)
		}
		return ms
	}
	return mi.MessageOf(x)
}

// Deprecated: Use OptionalValue.ProtoReflect.Descriptor instead.
func (*OptionalValue) Descriptor() ([]byte, []int) {
	return file_amulet_v1_amulet_proto_rawDescGZIP(), []int{70}
}

func (x *OptionalValue) GetValue() []byte {
	if x != nil {
		return x.Value
	}
	return nil
}

type OptionalEntry struct {
	state         protoimpl.MessageState `protogen:"open.v1"`
	Entry         *Entry                 `protobuf:"bytes,1,opt,name=entry,proto3" json:"entry,omitempty"`
	unknownFields protoimpl.UnknownFields
	sizeCache     protoimpl.SizeCache
}

func (x *OptionalEntry) Reset() {
	*x = OptionalEntry{}
	mi := &file_amulet_v1_amulet_proto_msgTypes[71]
	ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
	ms.StoreMessageInfo(mi)
}

func (x *OptionalEntry) String() string {
	return protoimpl.X.MessageStringOf(x)
}

func (*OptionalEntry) ProtoMessage() {}

func (x *OptionalEntry) ProtoReflect() protoreflect.Message {
	mi := &file_amulet_v1_amulet_proto_msgTypes[71]
	if x != nil {
		ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
		if ms.LoadMessageInfo() == nil {
			ms.StoreMessageInfo(mi)
		}
		return ms
	}
	return mi.MessageOf(x)
}

// Deprecated: Use OptionalEntry.ProtoReflect.Descriptor instead.
func (*OptionalEntry) Descriptor() ([]byte, []int) {
	return file_amulet_v1_amulet_proto_rawDescGZIP(), []int{71}
}

func (x *OptionalEntry) GetEntry() *Entry {
	if x != nil {
		return x.Entry
	}
	return nil
}

type Entries struct {
	state   protoimpl.MessageState `protogen:"open.v1"`
	Entries []*Entry               `protobuf:"bytes,1,rep,name=entries,proto3" json:"entries,omitempty"`
	// The limit cut the range short.
	More          bool `protobuf:"varint,2,opt,name=more,proto3" json:"more,omitempty"`
	unknownFields protoimpl.UnknownFields
	sizeCache     protoimpl.SizeCache
}

func (x *Entries) Reset() {
	*x = Entries{}
	mi := &file_amulet_v1_amulet_proto_msgTypes[72]
	ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
	ms.StoreMessageInfo(mi)
}

func (x *Entries) String() string {
	return protoimpl.X.MessageStringOf(x)
}

func (*Entries) ProtoMessage() {}

func (x *Entries) ProtoReflect() protoreflect.Message {
	mi := &file_amulet_v1_amulet_proto_msgTypes[72]
	if x != nil {
		ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
		if ms.LoadMessageInfo() == nil {
			ms.StoreMessageInfo(mi)
		}
		return ms
	}
	return mi.MessageOf(x)
}

// Deprecated: Use Entries.ProtoReflect.Descriptor instead.
func (*Entries) Descriptor() ([]byte, []int) {
	return file_amulet_v1_amulet_proto_rawDescGZIP(), []int{72}
}

func (x *Entries) GetEntries() []*Entry {
	if x != nil {
		return x.Entries
	}
	return nil
}

func (x *Entries) GetMore() bool {
	if x != nil {
		return x.More
	}
	return false
}

type Done struct {
	state         protoimpl.MessageState `protogen:"open.v1"`
	unknownFields protoimpl.UnknownFields
	sizeCache     protoimpl.SizeCache
}

func (x *Done) Reset() {
	*x = Done{}
	mi := &file_amulet_v1_amulet_proto_msgTypes[73]
	ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
	ms.StoreMessageInfo(mi)
}

func (x *Done) String() string {
	return protoimpl.X.MessageStringOf(x)
}

func (*Done) ProtoMessage() {}

func (x *Done) ProtoReflect() protoreflect.Message {
	mi := &file_amulet_v1_amulet_proto_msgTypes[73]
	if x != nil {
		ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
		if ms.LoadMessageInfo() == nil {
			ms.StoreMessageInfo(mi)
		}
		return ms
	}
	return mi.MessageOf(x)
}

// Deprecated: Use Done.ProtoReflect.Descriptor instead.
func (*Done) Descriptor() ([]byte, []int) {
	return file_amulet_v1_amulet_proto_rawDescGZIP(), []int{73}
}

type MapResponse struct {
	state protoimpl.MessageState `protogen:"open.v1"`
	// Types that are valid to be assigned to Result:
	//
	//	*MapResponse_Value
	//	*MapResponse_Flag
	//	*MapResponse_Count
	//	*MapResponse_Entry
	//	*MapResponse_Entries
	//	*MapResponse_Snapshot
	//	*MapResponse_Done
	//	*MapResponse_ReadVersion
	//	*MapResponse_Position
	//	*MapResponse_Positions
	//	*MapResponse_LogEntries
	//	*MapResponse_LogBounds
	Result        isMapResponse_Result `protobuf_oneof:"result"`
	unknownFields protoimpl.UnknownFields
	sizeCache     protoimpl.SizeCache
}

func (x *MapResponse) Reset() {
	*x = MapResponse{}
	mi := &file_amulet_v1_amulet_proto_msgTypes[74]
	ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
	ms.StoreMessageInfo(mi)
}

func (x *MapResponse) String() string {
	return protoimpl.X.MessageStringOf(x)
}

func (*MapResponse) ProtoMessage() {}

func (x *MapResponse) ProtoReflect() protoreflect.Message {
	mi := &file_amulet_v1_amulet_proto_msgTypes[74]
	if x != nil {
		ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
		if ms.LoadMessageInfo() == nil {
			ms.StoreMessageInfo(mi)
		}
		return ms
	}
	return mi.MessageOf(x)
}

// Deprecated: Use MapResponse.ProtoReflect.Descriptor instead.
func (*MapResponse) Descriptor() ([]byte, []int) {
	return file_amulet_v1_amulet_proto_rawDescGZIP(), []int{74}
}

func (x *MapResponse) GetResult() isMapResponse_Result {
	if x != nil {
		return x.Result
	}
	return nil
}

func (x *MapResponse) GetValue() *OptionalValue {
	if x != nil {
		if x, ok := x.Result.(*MapResponse_Value); ok {
			return x.Value
		}
	}
	return nil
}

func (x *MapResponse) GetFlag() bool {
	if x != nil {
		if x, ok := x.Result.(*MapResponse_Flag); ok {
			return x.Flag
		}
	}
	return false
}

func (x *MapResponse) GetCount() uint64 {
	if x != nil {
		if x, ok := x.Result.(*MapResponse_Count); ok {
			return x.Count
		}
	}
	return 0
}

func (x *MapResponse) GetEntry() *OptionalEntry {
	if x != nil {
		if x, ok := x.Result.(*MapResponse_Entry); ok {
			return x.Entry
		}
	}
	return nil
}

func (x *MapResponse) GetEntries() *Entries {
	if x != nil {
		if x, ok := x.Result.(*MapResponse_Entries); ok {
			return x.Entries
		}
	}
	return nil
}

func (x *MapResponse) GetSnapshot() uint64 {
	if x != nil {
		if x, ok := x.Result.(*MapResponse_Snapshot); ok {
			return x.Snapshot
		}
	}
	return 0
}

func (x *MapResponse) GetDone() *Done {
	if x != nil {
		if x, ok := x.Result.(*MapResponse_Done); ok {
			return x.Done
		}
	}
	return nil
}

func (x *MapResponse) GetReadVersion() uint64 {
	if x != nil {
		if x, ok := x.Result.(*MapResponse_ReadVersion); ok {
			return x.ReadVersion
		}
	}
	return 0
}

func (x *MapResponse) GetPosition() uint64 {
	if x != nil {
		if x, ok := x.Result.(*MapResponse_Position); ok {
			return x.Position
		}
	}
	return 0
}

func (x *MapResponse) GetPositions() *Positions {
	if x != nil {
		if x, ok := x.Result.(*MapResponse_Positions); ok {
			return x.Positions
		}
	}
	return nil
}

func (x *MapResponse) GetLogEntries() *LogEntries {
	if x != nil {
		if x, ok := x.Result.(*MapResponse_LogEntries); ok {
			return x.LogEntries
		}
	}
	return nil
}

func (x *MapResponse) GetLogBounds() *LogBoundsReply {
	if x != nil {
		if x, ok := x.Result.(*MapResponse_LogBounds); ok {
			return x.LogBounds
		}
	}
	return nil
}

type isMapResponse_Result interface {
	isMapResponse_Result()
}

type MapResponse_Value struct {
	Value *OptionalValue `protobuf:"bytes,1,opt,name=value,proto3,oneof"`
}

type MapResponse_Flag struct {
	Flag bool `protobuf:"varint,2,opt,name=flag,proto3,oneof"`
}

type MapResponse_Count struct {
	Count uint64 `protobuf:"varint,3,opt,name=count,proto3,oneof"`
}

type MapResponse_Entry struct {
	Entry *OptionalEntry `protobuf:"bytes,4,opt,name=entry,proto3,oneof"`
}

type MapResponse_Entries struct {
	Entries *Entries `protobuf:"bytes,5,opt,name=entries,proto3,oneof"`
}

type MapResponse_Snapshot struct {
	Snapshot uint64 `protobuf:"varint,6,opt,name=snapshot,proto3,oneof"`
}

type MapResponse_Done struct {
	Done *Done `protobuf:"bytes,7,opt,name=done,proto3,oneof"`
}

type MapResponse_ReadVersion struct {
	ReadVersion uint64 `protobuf:"varint,8,opt,name=read_version,json=readVersion,proto3,oneof"`
}

type MapResponse_Position struct {
	Position uint64 `protobuf:"varint,9,opt,name=position,proto3,oneof"`
}

type MapResponse_Positions struct {
	Positions *Positions `protobuf:"bytes,10,opt,name=positions,proto3,oneof"`
}

type MapResponse_LogEntries struct {
	LogEntries *LogEntries `protobuf:"bytes,11,opt,name=log_entries,json=logEntries,proto3,oneof"`
}

type MapResponse_LogBounds struct {
	LogBounds *LogBoundsReply `protobuf:"bytes,12,opt,name=log_bounds,json=logBounds,proto3,oneof"`
}

func (*MapResponse_Value) isMapResponse_Result() {}

func (*MapResponse_Flag) isMapResponse_Result() {}

func (*MapResponse_Count) isMapResponse_Result() {}

func (*MapResponse_Entry) isMapResponse_Result() {}

func (*MapResponse_Entries) isMapResponse_Result() {}

func (*MapResponse_Snapshot) isMapResponse_Result() {}

func (*MapResponse_Done) isMapResponse_Result() {}

func (*MapResponse_ReadVersion) isMapResponse_Result() {}

func (*MapResponse_Position) isMapResponse_Result() {}

func (*MapResponse_Positions) isMapResponse_Result() {}

func (*MapResponse_LogEntries) isMapResponse_Result() {}

func (*MapResponse_LogBounds) isMapResponse_Result() {}

// A multi-append's positions, in the order of its entries.
type Positions struct {
	state         protoimpl.MessageState `protogen:"open.v1"`
	Positions     []uint64               `protobuf:"varint,1,rep,packed,name=positions,proto3" json:"positions,omitempty"`
	unknownFields protoimpl.UnknownFields
	sizeCache     protoimpl.SizeCache
}

func (x *Positions) Reset() {
	*x = Positions{}
	mi := &file_amulet_v1_amulet_proto_msgTypes[75]
	ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
	ms.StoreMessageInfo(mi)
}

func (x *Positions) String() string {
	return protoimpl.X.MessageStringOf(x)
}

func (*Positions) ProtoMessage() {}

func (x *Positions) ProtoReflect() protoreflect.Message {
	mi := &file_amulet_v1_amulet_proto_msgTypes[75]
	if x != nil {
		ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
		if ms.LoadMessageInfo() == nil {
			ms.StoreMessageInfo(mi)
		}
		return ms
	}
	return mi.MessageOf(x)
}

// Deprecated: Use Positions.ProtoReflect.Descriptor instead.
func (*Positions) Descriptor() ([]byte, []int) {
	return file_amulet_v1_amulet_proto_rawDescGZIP(), []int{75}
}

func (x *Positions) GetPositions() []uint64 {
	if x != nil {
		return x.Positions
	}
	return nil
}

// Entries of a log read: at positions from, from + 1, ...; the log's
// bounds when it was read.
type LogEntries struct {
	state         protoimpl.MessageState `protogen:"open.v1"`
	From          uint64                 `protobuf:"varint,1,opt,name=from,proto3" json:"from,omitempty"`
	Entries       [][]byte               `protobuf:"bytes,2,rep,name=entries,proto3" json:"entries,omitempty"`
	First         uint64                 `protobuf:"varint,3,opt,name=first,proto3" json:"first,omitempty"`
	End           uint64                 `protobuf:"varint,4,opt,name=end,proto3" json:"end,omitempty"`
	unknownFields protoimpl.UnknownFields
	sizeCache     protoimpl.SizeCache
}

func (x *LogEntries) Reset() {
	*x = LogEntries{}
	mi := &file_amulet_v1_amulet_proto_msgTypes[76]
	ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
	ms.StoreMessageInfo(mi)
}

func (x *LogEntries) String() string {
	return protoimpl.X.MessageStringOf(x)
}

func (*LogEntries) ProtoMessage() {}

func (x *LogEntries) ProtoReflect() protoreflect.Message {
	mi := &file_amulet_v1_amulet_proto_msgTypes[76]
	if x != nil {
		ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
		if ms.LoadMessageInfo() == nil {
			ms.StoreMessageInfo(mi)
		}
		return ms
	}
	return mi.MessageOf(x)
}

// Deprecated: Use LogEntries.ProtoReflect.Descriptor instead.
func (*LogEntries) Descriptor() ([]byte, []int) {
	return file_amulet_v1_amulet_proto_rawDescGZIP(), []int{76}
}

func (x *LogEntries) GetFrom() uint64 {
	if x != nil {
		return x.From
	}
	return 0
}

func (x *LogEntries) GetEntries() [][]byte {
	if x != nil {
		return x.Entries
	}
	return nil
}

func (x *LogEntries) GetFirst() uint64 {
	if x != nil {
		return x.First
	}
	return 0
}

func (x *LogEntries) GetEnd() uint64 {
	if x != nil {
		return x.End
	}
	return 0
}

// A log's first position still held, and the position of its next append.
type LogBoundsReply struct {
	state         protoimpl.MessageState `protogen:"open.v1"`
	First         uint64                 `protobuf:"varint,1,opt,name=first,proto3" json:"first,omitempty"`
	End           uint64                 `protobuf:"varint,2,opt,name=end,proto3" json:"end,omitempty"`
	unknownFields protoimpl.UnknownFields
	sizeCache     protoimpl.SizeCache
}

func (x *LogBoundsReply) Reset() {
	*x = LogBoundsReply{}
	mi := &file_amulet_v1_amulet_proto_msgTypes[77]
	ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
	ms.StoreMessageInfo(mi)
}

func (x *LogBoundsReply) String() string {
	return protoimpl.X.MessageStringOf(x)
}

func (*LogBoundsReply) ProtoMessage() {}

func (x *LogBoundsReply) ProtoReflect() protoreflect.Message {
	mi := &file_amulet_v1_amulet_proto_msgTypes[77]
	if x != nil {
		ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
		if ms.LoadMessageInfo() == nil {
			ms.StoreMessageInfo(mi)
		}
		return ms
	}
	return mi.MessageOf(x)
}

// Deprecated: Use LogBoundsReply.ProtoReflect.Descriptor instead.
func (*LogBoundsReply) Descriptor() ([]byte, []int) {
	return file_amulet_v1_amulet_proto_rawDescGZIP(), []int{77}
}

func (x *LogBoundsReply) GetFirst() uint64 {
	if x != nil {
		return x.First
	}
	return 0
}

func (x *LogBoundsReply) GetEnd() uint64 {
	if x != nil {
		return x.End
	}
	return 0
}

type TailLogRequest struct {
	state protoimpl.MessageState `protogen:"open.v1"`
	Log   string                 `protobuf:"bytes,1,opt,name=log,proto3" json:"log,omitempty"`
	// The first position to deliver.
	From uint64 `protobuf:"varint,2,opt,name=from,proto3" json:"from,omitempty"`
	// Bytes of entries per message at most (0 or more than
	// log_read_bytes_max: log_read_bytes_max); a larger entry comes alone.
	MaxBytes uint32 `protobuf:"varint,3,opt,name=max_bytes,json=maxBytes,proto3" json:"max_bytes,omitempty"`
	// The client's partition map version: a replica whose map is older
	// (it has not executed the log's creation yet, say) waits for it, then
	// answers UNAVAILABLE behind, rather than NOT_FOUND.
	MapVersion    uint64 `protobuf:"varint,4,opt,name=map_version,json=mapVersion,proto3" json:"map_version,omitempty"`
	unknownFields protoimpl.UnknownFields
	sizeCache     protoimpl.SizeCache
}

func (x *TailLogRequest) Reset() {
	*x = TailLogRequest{}
	mi := &file_amulet_v1_amulet_proto_msgTypes[78]
	ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
	ms.StoreMessageInfo(mi)
}

func (x *TailLogRequest) String() string {
	return protoimpl.X.MessageStringOf(x)
}

func (*TailLogRequest) ProtoMessage() {}

func (x *TailLogRequest) ProtoReflect() protoreflect.Message {
	mi := &file_amulet_v1_amulet_proto_msgTypes[78]
	if x != nil {
		ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
		if ms.LoadMessageInfo() == nil {
			ms.StoreMessageInfo(mi)
		}
		return ms
	}
	return mi.MessageOf(x)
}

// Deprecated: Use TailLogRequest.ProtoReflect.Descriptor instead.
func (*TailLogRequest) Descriptor() ([]byte, []int) {
	return file_amulet_v1_amulet_proto_rawDescGZIP(), []int{78}
}

func (x *TailLogRequest) GetLog() string {
	if x != nil {
		return x.Log
	}
	return ""
}

func (x *TailLogRequest) GetFrom() uint64 {
	if x != nil {
		return x.From
	}
	return 0
}

func (x *TailLogRequest) GetMaxBytes() uint32 {
	if x != nil {
		return x.MaxBytes
	}
	return 0
}

func (x *TailLogRequest) GetMapVersion() uint64 {
	if x != nil {
		return x.MapVersion
	}
	return 0
}

type ReadSnapshotRequest struct {
	state     protoimpl.MessageState `protogen:"open.v1"`
	Partition uint32                 `protobuf:"varint,1,opt,name=partition,proto3" json:"partition,omitempty"`
	Snapshot  uint64                 `protobuf:"varint,2,opt,name=snapshot,proto3" json:"snapshot,omitempty"`
	// Start after this key (absent: from the first key).
	After []byte `protobuf:"bytes,3,opt,name=after,proto3,oneof" json:"after,omitempty"`
	// Entries per page, 1..=range_entries_max (0: the server's default).
	PageSize      uint32 `protobuf:"varint,4,opt,name=page_size,json=pageSize,proto3" json:"page_size,omitempty"`
	unknownFields protoimpl.UnknownFields
	sizeCache     protoimpl.SizeCache
}

func (x *ReadSnapshotRequest) Reset() {
	*x = ReadSnapshotRequest{}
	mi := &file_amulet_v1_amulet_proto_msgTypes[79]
	ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
	ms.StoreMessageInfo(mi)
}

func (x *ReadSnapshotRequest) String() string {
	return protoimpl.X.MessageStringOf(x)
}

func (*ReadSnapshotRequest) ProtoMessage() {}

func (x *ReadSnapshotRequest) ProtoReflect() protoreflect.Message {
	mi := &file_amulet_v1_amulet_proto_msgTypes[79]
	if x != nil {
		ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
		if ms.LoadMessageInfo() == nil {
			ms.StoreMessageInfo(mi)
		}
		return ms
	}
	return mi.MessageOf(x)
}

// Deprecated: Use ReadSnapshotRequest.ProtoReflect.Descriptor instead.
func (*ReadSnapshotRequest) Descriptor() ([]byte, []int) {
	return file_amulet_v1_amulet_proto_rawDescGZIP(), []int{79}
}

func (x *ReadSnapshotRequest) GetPartition() uint32 {
	if x != nil {
		return x.Partition
	}
	return 0
}

func (x *ReadSnapshotRequest) GetSnapshot() uint64 {
	if x != nil {
		return x.Snapshot
	}
	return 0
}

func (x *ReadSnapshotRequest) GetAfter() []byte {
	if x != nil {
		return x.After
	}
	return nil
}

func (x *ReadSnapshotRequest) GetPageSize() uint32 {
	if x != nil {
		return x.PageSize
	}
	return 0
}

type SnapshotPage struct {
	state   protoimpl.MessageState `protogen:"open.v1"`
	Entries []*Entry               `protobuf:"bytes,1,rep,name=entries,proto3" json:"entries,omitempty"`
	// No page follows.
	Last          bool `protobuf:"varint,2,opt,name=last,proto3" json:"last,omitempty"`
	unknownFields protoimpl.UnknownFields
	sizeCache     protoimpl.SizeCache
}

func (x *SnapshotPage) Reset() {
	*x = SnapshotPage{}
	mi := &file_amulet_v1_amulet_proto_msgTypes[80]
	ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
	ms.StoreMessageInfo(mi)
}

func (x *SnapshotPage) String() string {
	return protoimpl.X.MessageStringOf(x)
}

func (*SnapshotPage) ProtoMessage() {}

func (x *SnapshotPage) ProtoReflect() protoreflect.Message {
	mi := &file_amulet_v1_amulet_proto_msgTypes[80]
	if x != nil {
		ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
		if ms.LoadMessageInfo() == nil {
			ms.StoreMessageInfo(mi)
		}
		return ms
	}
	return mi.MessageOf(x)
}

// Deprecated: Use SnapshotPage.ProtoReflect.Descriptor instead.
func (*SnapshotPage) Descriptor() ([]byte, []int) {
	return file_amulet_v1_amulet_proto_rawDescGZIP(), []int{80}
}

func (x *SnapshotPage) GetEntries() []*Entry {
	if x != nil {
		return x.Entries
	}
	return nil
}

func (x *SnapshotPage) GetLast() bool {
	if x != nil {
		return x.Last
	}
	return false
}

type StatusRequest struct {
	state         protoimpl.MessageState `protogen:"open.v1"`
	unknownFields protoimpl.UnknownFields
	sizeCache     protoimpl.SizeCache
}

func (x *StatusRequest) Reset() {
	*x = StatusRequest{}
	mi := &file_amulet_v1_amulet_proto_msgTypes[81]
	ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
	ms.StoreMessageInfo(mi)
}

func (x *StatusRequest) String() string {
	return protoimpl.X.MessageStringOf(x)
}

func (*StatusRequest) ProtoMessage() {}

func (x *StatusRequest) ProtoReflect() protoreflect.Message {
	mi := &file_amulet_v1_amulet_proto_msgTypes[81]
	if x != nil {
		ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
		if ms.LoadMessageInfo() == nil {
			ms.StoreMessageInfo(mi)
		}
		return ms
	}
	return mi.MessageOf(x)
}

// Deprecated: Use StatusRequest.ProtoReflect.Descriptor instead.
func (*StatusRequest) Descriptor() ([]byte, []int) {
	return file_amulet_v1_amulet_proto_rawDescGZIP(), []int{81}
}

type StatusResponse struct {
	state      protoimpl.MessageState `protogen:"open.v1"`
	Node       uint32                 `protobuf:"varint,1,opt,name=node,proto3" json:"node,omitempty"`
	MapVersion uint64                 `protobuf:"varint,2,opt,name=map_version,json=mapVersion,proto3" json:"map_version,omitempty"`
	Replicas   []*ReplicaStatus       `protobuf:"bytes,3,rep,name=replicas,proto3" json:"replicas,omitempty"`
	Streams    []*StreamStatus        `protobuf:"bytes,4,rep,name=streams,proto3" json:"streams,omitempty"`
	// The eventual maps' virtual nodes this node holds.
	Eventual      []*EventualReplicaStatus `protobuf:"bytes,5,rep,name=eventual,proto3" json:"eventual,omitempty"`
	unknownFields protoimpl.UnknownFields
	sizeCache     protoimpl.SizeCache
}

func (x *StatusResponse) Reset() {
	*x = StatusResponse{}
	mi := &file_amulet_v1_amulet_proto_msgTypes[82]
	ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
	ms.StoreMessageInfo(mi)
}

func (x *StatusResponse) String() string {
	return protoimpl.X.MessageStringOf(x)
}

func (*StatusResponse) ProtoMessage() {}

func (x *StatusResponse) ProtoReflect() protoreflect.Message {
	mi := &file_amulet_v1_amulet_proto_msgTypes[82]
	if x != nil {
		ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
		if ms.LoadMessageInfo() == nil {
			ms.StoreMessageInfo(mi)
		}
		return ms
	}
	return mi.MessageOf(x)
}

// Deprecated: Use StatusResponse.ProtoReflect.Descriptor instead.
func (*StatusResponse) Descriptor() ([]byte, []int) {
	return file_amulet_v1_amulet_proto_rawDescGZIP(), []int{82}
}

func (x *StatusResponse) GetNode() uint32 {
	if x != nil {
		return x.Node
	}
	return 0
}

func (x *StatusResponse) GetMapVersion() uint64 {
	if x != nil {
		return x.MapVersion
	}
	return 0
}

func (x *StatusResponse) GetReplicas() []*ReplicaStatus {
	if x != nil {
		return x.Replicas
	}
	return nil
}

func (x *StatusResponse) GetStreams() []*StreamStatus {
	if x != nil {
		return x.Streams
	}
	return nil
}

func (x *StatusResponse) GetEventual() []*EventualReplicaStatus {
	if x != nil {
		return x.Eventual
	}
	return nil
}

type EventualReplicaStatus struct {
	state   protoimpl.MessageState `protogen:"open.v1"`
	Map     string                 `protobuf:"bytes,1,opt,name=map,proto3" json:"map,omitempty"`
	Replica uint64                 `protobuf:"varint,2,opt,name=replica,proto3" json:"replica,omitempty"`
	// Objects stored.
	Keys uint64 `protobuf:"varint,3,opt,name=keys,proto3" json:"keys,omitempty"`
	// Bits set in the node clock's bitmaps (dots seen out of order).
	ClockBitmapBits uint64 `protobuf:"varint,4,opt,name=clock_bitmap_bits,json=clockBitmapBits,proto3" json:"clock_bitmap_bits,omitempty"`
	// Dot-key map entries (versions some peer may still lack).
	DotKeys uint64 `protobuf:"varint,5,opt,name=dot_keys,json=dotKeys,proto3" json:"dot_keys,omitempty"`
	// Keys whose stored context is not stripped yet.
	NonStripped uint64 `protobuf:"varint,6,opt,name=non_stripped,json=nonStripped,proto3" json:"non_stripped,omitempty"`
	// Dots this replica issued that the least caught-up peer has not
	// acknowledged by anti-entropy.
	WatermarkLag uint64 `protobuf:"varint,7,opt,name=watermark_lag,json=watermarkLag,proto3" json:"watermark_lag,omitempty"`
	// Writes this replica coordinated.
	Coordinated uint64 `protobuf:"varint,8,opt,name=coordinated,proto3" json:"coordinated,omitempty"`
	// Anti-entropy reply bytes this replica sent and received.
	SyncBytesSent     uint64 `protobuf:"varint,9,opt,name=sync_bytes_sent,json=syncBytesSent,proto3" json:"sync_bytes_sent,omitempty"`
	SyncBytesReceived uint64 `protobuf:"varint,10,opt,name=sync_bytes_received,json=syncBytesReceived,proto3" json:"sync_bytes_received,omitempty"`
	// Stored objects with no value (the MerkleDB baseline's tombstones).
	Tombstones uint64 `protobuf:"varint,11,opt,name=tombstones,proto3" json:"tombstones,omitempty"`
	// Bytes of causality and anti-entropy metadata (clocks, dot-key map,
	// watermark, stored contexts; for the baseline its hash trees and
	// per-key clocks).
	MetadataBytes uint64 `protobuf:"varint,12,opt,name=metadata_bytes,json=metadataBytes,proto3" json:"metadata_bytes,omitempty"`
	unknownFields protoimpl.UnknownFields
	sizeCache     protoimpl.SizeCache
}

func (x *EventualReplicaStatus) Reset() {
	*x = EventualReplicaStatus{}
	mi := &file_amulet_v1_amulet_proto_msgTypes[83]
	ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
	ms.StoreMessageInfo(mi)
}

func (x *EventualReplicaStatus) String() string {
	return protoimpl.X.MessageStringOf(x)
}

func (*EventualReplicaStatus) ProtoMessage() {}

func (x *EventualReplicaStatus) ProtoReflect() protoreflect.Message {
	mi := &file_amulet_v1_amulet_proto_msgTypes[83]
	if x != nil {
		ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
		if ms.LoadMessageInfo() == nil {
			ms.StoreMessageInfo(mi)
		}
		return ms
	}
	return mi.MessageOf(x)
}

// Deprecated: Use EventualReplicaStatus.ProtoReflect.Descriptor instead.
func (*EventualReplicaStatus) Descriptor() ([]byte, []int) {
	return file_amulet_v1_amulet_proto_rawDescGZIP(), []int{83}
}

func (x *EventualReplicaStatus) GetMap() string {
	if x != nil {
		return x.Map
	}
	return ""
}

func (x *EventualReplicaStatus) GetReplica() uint64 {
	if x != nil {
		return x.Replica
	}
	return 0
}

func (x *EventualReplicaStatus) GetKeys() uint64 {
	if x != nil {
		return x.Keys
	}
	return 0
}

func (x *EventualReplicaStatus) GetClockBitmapBits() uint64 {
	if x != nil {
		return x.ClockBitmapBits
	}
	return 0
}

func (x *EventualReplicaStatus) GetDotKeys() uint64 {
	if x != nil {
		return x.DotKeys
	}
	return 0
}

func (x *EventualReplicaStatus) GetNonStripped() uint64 {
	if x != nil {
		return x.NonStripped
	}
	return 0
}

func (x *EventualReplicaStatus) GetWatermarkLag() uint64 {
	if x != nil {
		return x.WatermarkLag
	}
	return 0
}

func (x *EventualReplicaStatus) GetCoordinated() uint64 {
	if x != nil {
		return x.Coordinated
	}
	return 0
}

func (x *EventualReplicaStatus) GetSyncBytesSent() uint64 {
	if x != nil {
		return x.SyncBytesSent
	}
	return 0
}

func (x *EventualReplicaStatus) GetSyncBytesReceived() uint64 {
	if x != nil {
		return x.SyncBytesReceived
	}
	return 0
}

func (x *EventualReplicaStatus) GetTombstones() uint64 {
	if x != nil {
		return x.Tombstones
	}
	return 0
}

func (x *EventualReplicaStatus) GetMetadataBytes() uint64 {
	if x != nil {
		return x.MetadataBytes
	}
	return 0
}

type ReplicaStatus struct {
	state     protoimpl.MessageState `protogen:"open.v1"`
	Partition uint32                 `protobuf:"varint,1,opt,name=partition,proto3" json:"partition,omitempty"`
	Stream    uint32                 `protobuf:"varint,2,opt,name=stream,proto3" json:"stream,omitempty"`
	// Global-stream values executed so far.
	GlobalPosition uint64 `protobuf:"varint,3,opt,name=global_position,json=globalPosition,proto3" json:"global_position,omitempty"`
	// Commands waiting for signals or for their turn.
	Queued   uint64   `protobuf:"varint,4,opt,name=queued,proto3" json:"queued,omitempty"`
	Sessions uint64   `protobuf:"varint,5,opt,name=sessions,proto3" json:"sessions,omitempty"`
	Maps     []string `protobuf:"bytes,6,rep,name=maps,proto3" json:"maps,omitempty"`
	// Global position of the last checkpoint written or restored (0: none);
	// a restarted replica continues from it.
	CheckpointGlobalPosition uint64 `protobuf:"varint,7,opt,name=checkpoint_global_position,json=checkpointGlobalPosition,proto3" json:"checkpoint_global_position,omitempty"`
	// Checkpoints written since the node started.
	CheckpointsWritten uint64 `protobuf:"varint,8,opt,name=checkpoints_written,json=checkpointsWritten,proto3" json:"checkpoints_written,omitempty"`
	unknownFields      protoimpl.UnknownFields
	sizeCache          protoimpl.SizeCache
}

func (x *ReplicaStatus) Reset() {
	*x = ReplicaStatus{}
	mi := &file_amulet_v1_amulet_proto_msgTypes[84]
	ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
	ms.StoreMessageInfo(mi)
}

func (x *ReplicaStatus) String() string {
	return protoimpl.X.MessageStringOf(x)
}

func (*ReplicaStatus) ProtoMessage() {}

func (x *ReplicaStatus) ProtoReflect() protoreflect.Message {
	mi := &file_amulet_v1_amulet_proto_msgTypes[84]
	if x != nil {
		ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
		if ms.LoadMessageInfo() == nil {
			ms.StoreMessageInfo(mi)
		}
		return ms
	}
	return mi.MessageOf(x)
}

// Deprecated: Use ReplicaStatus.ProtoReflect.Descriptor instead.
func (*ReplicaStatus) Descriptor() ([]byte, []int) {
	return file_amulet_v1_amulet_proto_rawDescGZIP(), []int{84}
}

func (x *ReplicaStatus) GetPartition() uint32 {
	if x != nil {
		return x.Partition
	}
	return 0
}

func (x *ReplicaStatus) GetStream() uint32 {
	if x != nil {
		return x.Stream
	}
	return 0
}

func (x *ReplicaStatus) GetGlobalPosition() uint64 {
	if x != nil {
		return x.GlobalPosition
	}
	return 0
}

func (x *ReplicaStatus) GetQueued() uint64 {
	if x != nil {
		return x.Queued
	}
	return 0
}

func (x *ReplicaStatus) GetSessions() uint64 {
	if x != nil {
		return x.Sessions
	}
	return 0
}

func (x *ReplicaStatus) GetMaps() []string {
	if x != nil {
		return x.Maps
	}
	return nil
}

func (x *ReplicaStatus) GetCheckpointGlobalPosition() uint64 {
	if x != nil {
		return x.CheckpointGlobalPosition
	}
	return 0
}

func (x *ReplicaStatus) GetCheckpointsWritten() uint64 {
	if x != nil {
		return x.CheckpointsWritten
	}
	return 0
}

type StreamStatus struct {
	state           protoimpl.MessageState `protogen:"open.v1"`
	Stream          uint32                 `protobuf:"varint,1,opt,name=stream,proto3" json:"stream,omitempty"`
	DecidedBelow    uint64                 `protobuf:"varint,2,opt,name=decided_below,json=decidedBelow,proto3" json:"decided_below,omitempty"`
	Coordinator     bool                   `protobuf:"varint,3,opt,name=coordinator,proto3" json:"coordinator,omitempty"`
	Voting          bool                   `protobuf:"varint,4,opt,name=voting,proto3" json:"voting,omitempty"`
	ValuesDelivered uint64                 `protobuf:"varint,5,opt,name=values_delivered,json=valuesDelivered,proto3" json:"values_delivered,omitempty"`
	// This node's acceptor log holds nothing below this instance (trimmed
	// once every replica holds a checkpoint past it).
	TrimmedBelow  uint64 `protobuf:"varint,6,opt,name=trimmed_below,json=trimmedBelow,proto3" json:"trimmed_below,omitempty"`
	unknownFields protoimpl.UnknownFields
	sizeCache     protoimpl.SizeCache
}

func (x *StreamStatus) Reset() {
	*x = StreamStatus{}
	mi := &file_amulet_v1_amulet_proto_msgTypes[85]
	ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
	ms.StoreMessageInfo(mi)
}

func (x *StreamStatus) String() string {
	return protoimpl.X.MessageStringOf(x)
}

func (*StreamStatus) ProtoMessage() {}

func (x *StreamStatus) ProtoReflect() protoreflect.Message {
	mi := &file_amulet_v1_amulet_proto_msgTypes[85]
	if x != nil {
		ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
		if ms.LoadMessageInfo() == nil {
			ms.StoreMessageInfo(mi)
		}
		return ms
	}
	return mi.MessageOf(x)
}

// Deprecated: Use StreamStatus.ProtoReflect.Descriptor instead.
func (*StreamStatus) Descriptor() ([]byte, []int) {
	return file_amulet_v1_amulet_proto_rawDescGZIP(), []int{85}
}

func (x *StreamStatus) GetStream() uint32 {
	if x != nil {
		return x.Stream
	}
	return 0
}

func (x *StreamStatus) GetDecidedBelow() uint64 {
	if x != nil {
		return x.DecidedBelow
	}
	return 0
}

func (x *StreamStatus) GetCoordinator() bool {
	if x != nil {
		return x.Coordinator
	}
	return false
}

func (x *StreamStatus) GetVoting() bool {
	if x != nil {
		return x.Voting
	}
	return false
}

func (x *StreamStatus) GetValuesDelivered() uint64 {
	if x != nil {
		return x.ValuesDelivered
	}
	return 0
}

func (x *StreamStatus) GetTrimmedBelow() uint64 {
	if x != nil {
		return x.TrimmedBelow
	}
	return 0
}

type MapRequestBatch struct {
	state         protoimpl.MessageState `protogen:"open.v1"`
	Requests      []*MapRequest          `protobuf:"bytes,1,rep,name=requests,proto3" json:"requests,omitempty"`
	unknownFields protoimpl.UnknownFields
	sizeCache     protoimpl.SizeCache
}

func (x *MapRequestBatch) Reset() {
	*x = MapRequestBatch{}
	mi := &file_amulet_v1_amulet_proto_msgTypes[86]
	ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
	ms.StoreMessageInfo(mi)
}

func (x *MapRequestBatch) String() string {
	return protoimpl.X.MessageStringOf(x)
}

func (*MapRequestBatch) ProtoMessage() {}

func (x *MapRequestBatch) ProtoReflect() protoreflect.Message {
	mi := &file_amulet_v1_amulet_proto_msgTypes[86]
	if x != nil {
		ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
		if ms.LoadMessageInfo() == nil {
			ms.StoreMessageInfo(mi)
		}
		return ms
	}
	return mi.MessageOf(x)
}

// Deprecated: Use MapRequestBatch.ProtoReflect.Descriptor instead.
func (*MapRequestBatch) Descriptor() ([]byte, []int) {
	return file_amulet_v1_amulet_proto_rawDescGZIP(), []int{86}
}

func (x *MapRequestBatch) GetRequests() []*MapRequest {
	if x != nil {
		return x.Requests
	}
	return nil
}

type MapResponseBatch struct {
	state         protoimpl.MessageState `protogen:"open.v1"`
	Outcomes      []*MapOutcome          `protobuf:"bytes,1,rep,name=outcomes,proto3" json:"outcomes,omitempty"`
	unknownFields protoimpl.UnknownFields
	sizeCache     protoimpl.SizeCache
}

func (x *MapResponseBatch) Reset() {
	*x = MapResponseBatch{}
	mi := &file_amulet_v1_amulet_proto_msgTypes[87]
	ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
	ms.StoreMessageInfo(mi)
}

func (x *MapResponseBatch) String() string {
	return protoimpl.X.MessageStringOf(x)
}

func (*MapResponseBatch) ProtoMessage() {}

func (x *MapResponseBatch) ProtoReflect() protoreflect.Message {
	mi := &file_amulet_v1_amulet_proto_msgTypes[87]
	if x != nil {
		ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
		if ms.LoadMessageInfo() == nil {
			ms.StoreMessageInfo(mi)
		}
		return ms
	}
	return mi.MessageOf(x)
}

// Deprecated: Use MapResponseBatch.ProtoReflect.Descriptor instead.
func (*MapResponseBatch) Descriptor() ([]byte, []int) {
	return file_amulet_v1_amulet_proto_rawDescGZIP(), []int{87}
}

func (x *MapResponseBatch) GetOutcomes() []*MapOutcome {
	if x != nil {
		return x.Outcomes
	}
	return nil
}

// What Execute would have returned for one request of a batch.
type MapOutcome struct {
	state protoimpl.MessageState `protogen:"open.v1"`
	// Types that are valid to be assigned to Outcome:
	//
	//	*MapOutcome_Response
	//	*MapOutcome_Failure
	Outcome       isMapOutcome_Outcome `protobuf_oneof:"outcome"`
	unknownFields protoimpl.UnknownFields
	sizeCache     protoimpl.SizeCache
}

func (x *MapOutcome) Reset() {
	*x = MapOutcome{}
	mi := &file_amulet_v1_amulet_proto_msgTypes[88]
	ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
	ms.StoreMessageInfo(mi)
}

func (x *MapOutcome) String() string {
	return protoimpl.X.MessageStringOf(x)
}

func (*MapOutcome) ProtoMessage() {}

func (x *MapOutcome) ProtoReflect() protoreflect.Message {
	mi := &file_amulet_v1_amulet_proto_msgTypes[88]
	if x != nil {
		ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
		if ms.LoadMessageInfo() == nil {
			ms.StoreMessageInfo(mi)
		}
		return ms
	}
	return mi.MessageOf(x)
}

// Deprecated: Use MapOutcome.ProtoReflect.Descriptor instead.
func (*MapOutcome) Descriptor() ([]byte, []int) {
	return file_amulet_v1_amulet_proto_rawDescGZIP(), []int{88}
}

func (x *MapOutcome) GetOutcome() isMapOutcome_Outcome {
	if x != nil {
		return x.Outcome
	}
	return nil
}

func (x *MapOutcome) GetResponse() *MapResponse {
	if x != nil {
		if x, ok := x.Outcome.(*MapOutcome_Response); ok {
			return x.Response
		}
	}
	return nil
}

func (x *MapOutcome) GetFailure() *Failure {
	if x != nil {
		if x, ok := x.Outcome.(*MapOutcome_Failure); ok {
			return x.Failure
		}
	}
	return nil
}

type isMapOutcome_Outcome interface {
	isMapOutcome_Outcome()
}

type MapOutcome_Response struct {
	Response *MapResponse `protobuf:"bytes,1,opt,name=response,proto3,oneof"`
}

type MapOutcome_Failure struct {
	Failure *Failure `protobuf:"bytes,2,opt,name=failure,proto3,oneof"`
}

func (*MapOutcome_Response) isMapOutcome_Outcome() {}

func (*MapOutcome_Failure) isMapOutcome_Outcome() {}

// A failed request of a batch: the gRPC status code (see the table above),
// its message, the `amulet-error` kind and the `amulet-reason` ("" when
// there is none).
type Failure struct {
	state   protoimpl.MessageState `protogen:"open.v1"`
	Code    uint32                 `protobuf:"varint,1,opt,name=code,proto3" json:"code,omitempty"`
	Message string                 `protobuf:"bytes,2,opt,name=message,proto3" json:"message,omitempty"`
	Error   string                 `protobuf:"bytes,3,opt,name=error,proto3" json:"error,omitempty"`
	Reason  string                 `protobuf:"bytes,4,opt,name=reason,proto3" json:"reason,omitempty"`
	// A transaction conflict's map and key (the amulet-conflict-map and
	// amulet-conflict-key-bin metadata of Execute's status).
	ConflictMap   string `protobuf:"bytes,5,opt,name=conflict_map,json=conflictMap,proto3" json:"conflict_map,omitempty"`
	ConflictKey   []byte `protobuf:"bytes,6,opt,name=conflict_key,json=conflictKey,proto3,oneof" json:"conflict_key,omitempty"`
	unknownFields protoimpl.UnknownFields
	sizeCache     protoimpl.SizeCache
}

func (x *Failure) Reset() {
	*x = Failure{}
	mi := &file_amulet_v1_amulet_proto_msgTypes[89]
	ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
	ms.StoreMessageInfo(mi)
}

func (x *Failure) String() string {
	return protoimpl.X.MessageStringOf(x)
}

func (*Failure) ProtoMessage() {}

func (x *Failure) ProtoReflect() protoreflect.Message {
	mi := &file_amulet_v1_amulet_proto_msgTypes[89]
	if x != nil {
		ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
		if ms.LoadMessageInfo() == nil {
			ms.StoreMessageInfo(mi)
		}
		return ms
	}
	return mi.MessageOf(x)
}

// Deprecated: Use Failure.ProtoReflect.Descriptor instead.
func (*Failure) Descriptor() ([]byte, []int) {
	return file_amulet_v1_amulet_proto_rawDescGZIP(), []int{89}
}

func (x *Failure) GetCode() uint32 {
	if x != nil {
		return x.Code
	}
	return 0
}

func (x *Failure) GetMessage() string {
	if x != nil {
		return x.Message
	}
	return ""
}

func (x *Failure) GetError() string {
	if x != nil {
		return x.Error
	}
	return ""
}

func (x *Failure) GetReason() string {
	if x != nil {
		return x.Reason
	}
	return ""
}

func (x *Failure) GetConflictMap() string {
	if x != nil {
		return x.ConflictMap
	}
	return ""
}

func (x *Failure) GetConflictKey() []byte {
	if x != nil {
		return x.ConflictKey
	}
	return nil
}

var File_amulet_v1_amulet_proto protoreflect.FileDescriptor

const file_amulet_v1_amulet_proto_rawDesc = "" +
	"\n" +
	"\x16amulet/v1/amulet.proto\x12\tamulet.v1\"F\n" +
	"\x12EventualGetRequest\x12\x10\n" +
	"\x03map\x18\x01 \x01(\tR\x03map\x12\x10\n" +
	"\x03key\x18\x02 \x01(\fR\x03key\x12\f\n" +
	"\x01r\x18\x03 \x01(\rR\x01r\"v\n" +
	"\x12EventualPutRequest\x12\x10\n" +
	"\x03map\x18\x01 \x01(\tR\x03map\x12\x10\n" +
	"\x03key\x18\x02 \x01(\fR\x03key\x12\x14\n" +
	"\x05value\x18\x03 \x01(\fR\x05value\x12\x18\n" +
	"\acontext\x18\x04 \x01(\fR\acontext\x12\f\n" +
	"\x01w\x18\x05 \x01(\rR\x01w\"c\n" +
	"\x15EventualDeleteRequest\x12\x10\n" +
	"\x03map\x18\x01 \x01(\tR\x03map\x12\x10\n" +
	"\x03key\x18\x02 \x01(\fR\x03key\x12\x18\n" +
	"\acontext\x18\x03 \x01(\fR\acontext\x12\f\n" +
	"\x01w\x18\x04 \x01(\rR\x01w\"=\n" +
	"\tVersioned\x12\x16\n" +
	"\x06values\x18\x01 \x03(\fR\x06values\x12\x18\n" +
	"\acontext\x18\x02 \x01(\fR\acontext\"\x99\x02\n" +
	"\x12ReconfigureRequest\x12\x1f\n" +
	"\vmap_version\x18\x01 \x01(\x04R\n" +
	"mapVersion\x121\n" +
	"\x05split\x18\x02 \x01(\v2\x19.amulet.v1.SplitPartitionH\x00R\x05split\x122\n" +
	"\x05merge\x18\x03 \x01(\v2\x1a.amulet.v1.MergePartitionsH\x00R\x05merge\x12A\n" +
	"\x0ereplace_stream\x18\x04 \x01(\v2\x18.amulet.v1.ReplaceStreamH\x00R\rreplaceStream\x12.\n" +
	"\x04move\x18\x05 \x01(\v2\x18.amulet.v1.MovePartitionH\x00R\x04moveB\b\n" +
	"\x06change\"x\n" +
	"\n" +
	"StreamSpec\x12\x16\n" +
	"\x06stream\x18\x01 \x01(\rR\x06stream\x12\x1c\n" +
	"\tacceptors\x18\x02 \x03(\rR\tacceptors\x12\x1a\n" +
	"\blearners\x18\x03 \x03(\rR\blearners\x12\x18\n" +
	"\astorage\x18\x04 \x01(\tR\astorage\"\xd7\x01\n" +
	"\x0eSplitPartition\x12\x16\n" +
	"\x06source\x18\x01 \x01(\rR\x06source\x12#\n" +
	"\rnew_partition\x18\x02 \x01(\rR\fnewPartition\x12-\n" +
	"\x06stream\x18\x03 \x01(\v2\x15.amulet.v1.StreamSpecR\x06stream\x12\x1e\n" +
	"\bat_token\x18\x04 \x01(\rH\x00R\aatToken\x88\x01\x01\x12,\n" +
	"\aat_keys\x18\x05 \x03(\v2\x13.amulet.v1.RangeCutR\x06atKeysB\v\n" +
	"\t_at_token\".\n" +
	"\bRangeCut\x12\x10\n" +
	"\x03map\x18\x01 \x01(\tR\x03map\x12\x10\n" +
	"\x03key\x18\x02 \x01(\fR\x03key\"=\n" +
	"\x0fMergePartitions\x12\x16\n" +
	"\x06source\x18\x01 \x01(\rR\x06source\x12\x12\n" +
	"\x04into\x18\x02 \x01(\rR\x04into\"\\\n" +
	"\rReplaceStream\x12\x1c\n" +
	"\tpartition\x18\x01 \x01(\rR\tpartition\x12-\n" +
	"\x06stream\x18\x02 \x01(\v2\x15.amulet.v1.StreamSpecR\x06stream\"x\n" +
	"\rMovePartition\x12\x1c\n" +
	"\tpartition\x18\x01 \x01(\rR\tpartition\x12\x1a\n" +
	"\breplicas\x18\x02 \x03(\rR\breplicas\x12-\n" +
	"\x06stream\x18\x03 \x01(\v2\x15.amulet.v1.StreamSpecR\x06stream\"\x15\n" +
	"\x13ReconfigureResponse\"\x18\n" +
	"\x16GetPartitionMapRequest\"\x9a\x02\n" +
	"\fPartitionMap\x12\x18\n" +
	"\aversion\x18\x01 \x01(\x04R\aversion\x12#\n" +
	"\rglobal_stream\x18\x02 \x01(\rR\fglobalStream\x124\n" +
	"\n" +
	"partitions\x18\x03 \x03(\v2\x14.amulet.v1.PartitionR\n" +
	"partitions\x124\n" +
	"\n" +
	"token_ring\x18\x04 \x03(\v2\x15.amulet.v1.TokenRangeR\ttokenRing\x121\n" +
	"\tkeyspaces\x18\x05 \x03(\v2\x13.amulet.v1.KeyspaceR\tkeyspaces\x12,\n" +
	"\x05nodes\x18\x06 \x03(\v2\x16.amulet.v1.NodeAddressR\x05nodes\"O\n" +
	"\tPartition\x12\x0e\n" +
	"\x02id\x18\x01 \x01(\rR\x02id\x12\x16\n" +
	"\x06stream\x18\x02 \x01(\rR\x06stream\x12\x1a\n" +
	"\breplicas\x18\x03 \x03(\rR\breplicas\"K\n" +
	"\n" +
	"TokenRange\x12\x1f\n" +
	"\vfirst_token\x18\x01 \x01(\rR\n" +
	"firstToken\x12\x1c\n" +
	"\tpartition\x18\x02 \x01(\rR\tpartition\"I\n" +
	"\bKeyspace\x12\x12\n" +
	"\x04name\x18\x01 \x01(\tR\x04name\x12)\n" +
	"\x06layout\x18\x02 \x01(\v2\x11.amulet.v1.LayoutR\x06layout\"\xa6\x01\n" +
	"\x06Layout\x12+\n" +
	"\x04hash\x18\x01 \x01(\v2\x15.amulet.v1.HashLayoutH\x00R\x04hash\x12.\n" +
	"\x05range\x18\x02 \x01(\v2\x16.amulet.v1.RangeLayoutH\x00R\x05range\x127\n" +
	"\beventual\x18\x03 \x01(\v2\x19.amulet.v1.EventualLayoutH\x00R\beventualB\x06\n" +
	"\x04kind\"\x8a\x01\n" +
	"\x0eEventualLayout\x12\x1a\n" +
	"\breplicas\x18\x01 \x01(\rR\breplicas\x12\x16\n" +
	"\x06vnodes\x18\x02 \x01(\rR\x06vnodes\x12,\n" +
	"\x04ring\x18\x03 \x03(\v2\x18.amulet.v1.EventualVnodeR\x04ring\x12\x16\n" +
	"\x06merkle\x18\x04 \x01(\bR\x06merkle\"=\n" +
	"\rEventualVnode\x12\x18\n" +
	"\areplica\x18\x01 \x01(\x04R\areplica\x12\x12\n" +
	"\x04node\x18\x02 \x01(\rR\x04node\"\f\n" +
	"\n" +
	"HashLayout\"<\n" +
	"\vRangeLayout\x12-\n" +
	"\x06splits\x18\x01 \x03(\v2\x15.amulet.v1.RangeSplitR\x06splits\"G\n" +
	"\n" +
	"RangeSplit\x12\x1b\n" +
	"\tstart_key\x18\x01 \x01(\fR\bstartKey\x12\x1c\n" +
	"\tpartition\x18\x02 \x01(\rR\tpartition\";\n" +
	"\vNodeAddress\x12\x12\n" +
	"\x04node\x18\x01 \x01(\rR\x04node\x12\x18\n" +
	"\aaddress\x18\x02 \x01(\tR\aaddress\"r\n" +
	"\x12OpenSessionRequest\x12\x18\n" +
	"\asession\x18\x01 \x01(\x04R\asession\x12!\n" +
	"\flease_micros\x18\x02 \x01(\x04R\vleaseMicros\x12\x1f\n" +
	"\vmap_version\x18\x03 \x01(\x04R\n" +
	"mapVersion\"P\n" +
	"\x13CloseSessionRequest\x12\x18\n" +
	"\asession\x18\x01 \x01(\x04R\asession\x12\x1f\n" +
	"\vmap_version\x18\x02 \x01(\x04R\n" +
	"mapVersion\"\x11\n" +
	"\x0fSessionResponse\"\x84\x01\n" +
	"\rRequestHeader\x12\x1f\n" +
	"\vmap_version\x18\x01 \x01(\x04R\n" +
	"mapVersion\x12\x1c\n" +
	"\tpartition\x18\x02 \x01(\rR\tpartition\x12\x18\n" +
	"\asession\x18\x03 \x01(\x04R\asession\x12\x1a\n" +
	"\bsequence\x18\x04 \x01(\x04R\bsequence\"\x9b\x0e\n" +
	"\n" +
	"MapRequest\x120\n" +
	"\x06header\x18\x01 \x01(\v2\x18.amulet.v1.RequestHeaderR\x06header\x125\n" +
	"\n" +
	"create_map\x18\n" +
	" \x01(\v2\x14.amulet.v1.CreateMapH\x00R\tcreateMap\x12/\n" +
	"\bdrop_map\x18\v \x01(\v2\x12.amulet.v1.DropMapH\x00R\adropMap\x12\"\n" +
	"\x03get\x18\f \x01(\v2\x0e.amulet.v1.GetH\x00R\x03get\x12;\n" +
	"\fcontains_key\x18\r \x01(\v2\x16.amulet.v1.ContainsKeyH\x00R\vcontainsKey\x12\"\n" +
	"\x03put\x18\x0e \x01(\v2\x0e.amulet.v1.PutH\x00R\x03put\x12+\n" +
	"\x06remove\x18\x0f \x01(\v2\x11.amulet.v1.RemoveH\x00R\x06remove\x12<\n" +
	"\rput_if_absent\x18\x10 \x01(\v2\x16.amulet.v1.PutIfAbsentH\x00R\vputIfAbsent\x12.\n" +
	"\areplace\x18\x11 \x01(\v2\x12.amulet.v1.ReplaceH\x00R\areplace\x12H\n" +
	"\x11replace_if_equals\x18\x12 \x01(\v2\x1a.amulet.v1.ReplaceIfEqualsH\x00R\x0freplaceIfEquals\x12E\n" +
	"\x10remove_if_equals\x18\x13 \x01(\v2\x19.amulet.v1.RemoveIfEqualsH\x00R\x0eremoveIfEquals\x12,\n" +
	"\aput_all\x18\x14 \x01(\v2\x11.amulet.v1.PutAllH\x00R\x06putAll\x12A\n" +
	"\x0econtains_value\x18\x15 \x01(\v2\x18.amulet.v1.ContainsValueH\x00R\rcontainsValue\x12%\n" +
	"\x04size\x18\x16 \x01(\v2\x0f.amulet.v1.SizeH\x00R\x04size\x12/\n" +
	"\bis_empty\x18\x17 \x01(\v2\x12.amulet.v1.IsEmptyH\x00R\aisEmpty\x12(\n" +
	"\x05clear\x18\x18 \x01(\v2\x10.amulet.v1.ClearH\x00R\x05clear\x128\n" +
	"\vfirst_entry\x18\x19 \x01(\v2\x15.amulet.v1.FirstEntryH\x00R\n" +
	"firstEntry\x125\n" +
	"\n" +
	"last_entry\x18\x1a \x01(\v2\x14.amulet.v1.LastEntryH\x00R\tlastEntry\x12>\n" +
	"\rnearest_entry\x18\x1b \x01(\v2\x17.amulet.v1.NearestEntryH\x00R\fnearestEntry\x12(\n" +
	"\x05range\x18\x1c \x01(\v2\x10.amulet.v1.RangeH\x00R\x05range\x12>\n" +
	"\ropen_snapshot\x18\x1d \x01(\v2\x17.amulet.v1.OpenSnapshotH\x00R\fopenSnapshot\x12G\n" +
	"\x10release_snapshot\x18\x1e \x01(\v2\x1a.amulet.v1.ReleaseSnapshotH\x00R\x0freleaseSnapshot\x12J\n" +
	"\x11begin_transaction\x18\x1f \x01(\v2\x1b.amulet.v1.BeginTransactionH\x00R\x10beginTransaction\x12D\n" +
	"\x0fend_transaction\x18  \x01(\v2\x19.amulet.v1.EndTransactionH\x00R\x0eendTransaction\x12+\n" +
	"\x06commit\x18! \x01(\v2\x11.amulet.v1.CommitH\x00R\x06commit\x12;\n" +
	"\fmerge_fields\x18\" \x01(\v2\x16.amulet.v1.MergeFieldsH\x00R\vmergeFields\x125\n" +
	"\n" +
	"create_log\x18# \x01(\v2\x14.amulet.v1.CreateLogH\x00R\tcreateLog\x12/\n" +
	"\bdrop_log\x18$ \x01(\v2\x12.amulet.v1.DropLogH\x00R\adropLog\x12+\n" +
	"\x06append\x18% \x01(\v2\x11.amulet.v1.AppendH\x00R\x06append\x12;\n" +
	"\fmulti_append\x18& \x01(\v2\x16.amulet.v1.MultiAppendH\x00R\vmultiAppend\x12/\n" +
	"\bread_log\x18' \x01(\v2\x12.amulet.v1.ReadLogH\x00R\areadLog\x12/\n" +
	"\btrim_log\x18( \x01(\v2\x12.amulet.v1.TrimLogH\x00R\atrimLog\x125\n" +
	"\n" +
	"log_bounds\x18) \x01(\v2\x14.amulet.v1.LogBoundsH\x00R\tlogBoundsB\x04\n" +
	"\x02op\"\x1d\n" +
	"\tCreateLog\x12\x10\n" +
	"\x03log\x18\x01 \x01(\tR\x03log\"\x1b\n" +
	"\aDropLog\x12\x10\n" +
	"\x03log\x18\x01 \x01(\tR\x03log\"0\n" +
	"\x06Append\x12\x10\n" +
	"\x03log\x18\x01 \x01(\tR\x03log\x12\x14\n" +
	"\x05value\x18\x02 \x01(\fR\x05value\"<\n" +
	"\vMultiAppend\x12-\n" +
	"\aentries\x18\x01 \x03(\v2\x13.amulet.v1.LogEntryR\aentries\"2\n" +
	"\bLogEntry\x12\x10\n" +
	"\x03log\x18\x01 \x01(\tR\x03log\x12\x14\n" +
	"\x05value\x18\x02 \x01(\fR\x05value\"P\n" +
	"\aReadLog\x12\x10\n" +
	"\x03log\x18\x01 \x01(\tR\x03log\x12\x12\n" +
	"\x04from\x18\x02 \x01(\x04R\x04from\x12\x1f\n" +
	"\vmax_entries\x18\x03 \x01(\rR\n" +
	"maxEntries\"1\n" +
	"\aTrimLog\x12\x10\n" +
	"\x03log\x18\x01 \x01(\tR\x03log\x12\x14\n" +
	"\x05below\x18\x02 \x01(\x04R\x05below\"\x1d\n" +
	"\tLogBounds\x12\x10\n" +
	"\x03log\x18\x01 \x01(\tR\x03log\"a\n" +
	"\x10BeginTransaction\x12!\n" +
	"\flease_micros\x18\x01 \x01(\x04R\vleaseMicros\x12*\n" +
	"\x11end_read_versions\x18\x02 \x03(\x04R\x0fendReadVersions\"3\n" +
	"\x0eEndTransaction\x12!\n" +
	"\fread_version\x18\x01 \x01(\x04R\vreadVersion\"X\n" +
	"\bKeyRange\x12'\n" +
	"\x04from\x18\x01 \x01(\v2\x13.amulet.v1.KeyBoundR\x04from\x12#\n" +
	"\x02to\x18\x02 \x01(\v2\x13.amulet.v1.KeyBoundR\x02to\"K\n" +
	"\fReadConflict\x12\x10\n" +
	"\x03map\x18\x01 \x01(\tR\x03map\x12)\n" +
	"\x05range\x18\x02 \x01(\v2\x13.amulet.v1.KeyRangeR\x05range\"S\n" +
	"\bTxnWrite\x12\x10\n" +
	"\x03map\x18\x01 \x01(\tR\x03map\x12\x10\n" +
	"\x03key\x18\x02 \x01(\fR\x03key\x12\x19\n" +
	"\x05value\x18\x03 \x01(\fH\x00R\x05value\x88\x01\x01B\b\n" +
	"\x06_value\"\x9d\x01\n" +
	"\x06Commit\x12&\n" +
	"\fread_version\x18\x01 \x01(\x04H\x00R\vreadVersion\x88\x01\x01\x12-\n" +
	"\x05reads\x18\x02 \x03(\v2\x17.amulet.v1.ReadConflictR\x05reads\x12+\n" +
	"\x06writes\x18\x03 \x03(\v2\x13.amulet.v1.TxnWriteR\x06writesB\x0f\n" +
	"\r_read_version\"c\n" +
	"\rReadAtRequest\x12!\n" +
	"\fread_version\x18\x01 \x01(\x04R\vreadVersion\x12/\n" +
	"\arequest\x18\x02 \x01(\v2\x15.amulet.v1.MapRequestR\arequest\"i\n" +
	"\x0eReadAtResponse\x122\n" +
	"\bresponse\x18\x01 \x01(\v2\x16.amulet.v1.MapResponseR\bresponse\x12#\n" +
	"\rwritten_since\x18\x02 \x01(\bR\fwrittenSince\"H\n" +
	"\tCreateMap\x12\x10\n" +
	"\x03map\x18\x01 \x01(\tR\x03map\x12)\n" +
	"\x06layout\x18\x02 \x01(\v2\x11.amulet.v1.LayoutR\x06layout\"\x1b\n" +
	"\aDropMap\x12\x10\n" +
	"\x03map\x18\x01 \x01(\tR\x03map\")\n" +
	"\x03Get\x12\x10\n" +
	"\x03map\x18\x01 \x01(\tR\x03map\x12\x10\n" +
	"\x03key\x18\x02 \x01(\fR\x03key\"1\n" +
	"\vContainsKey\x12\x10\n" +
	"\x03map\x18\x01 \x01(\tR\x03map\x12\x10\n" +
	"\x03key\x18\x02 \x01(\fR\x03key\"?\n" +
	"\x03Put\x12\x10\n" +
	"\x03map\x18\x01 \x01(\tR\x03map\x12\x10\n" +
	"\x03key\x18\x02 \x01(\fR\x03key\x12\x14\n" +
	"\x05value\x18\x03 \x01(\fR\x05value\",\n" +
	"\x06Remove\x12\x10\n" +
	"\x03map\x18\x01 \x01(\tR\x03map\x12\x10\n" +
	"\x03key\x18\x02 \x01(\fR\x03key\"G\n" +
	"\vPutIfAbsent\x12\x10\n" +
	"\x03map\x18\x01 \x01(\tR\x03map\x12\x10\n" +
	"\x03key\x18\x02 \x01(\fR\x03key\x12\x14\n" +
	"\x05value\x18\x03 \x01(\fR\x05value\"C\n" +
	"\aReplace\x12\x10\n" +
	"\x03map\x18\x01 \x01(\tR\x03map\x12\x10\n" +
	"\x03key\x18\x02 \x01(\fR\x03key\x12\x14\n" +
	"\x05value\x18\x03 \x01(\fR\x05value\"g\n" +
	"\x0fReplaceIfEquals\x12\x10\n" +
	"\x03map\x18\x01 \x01(\tR\x03map\x12\x10\n" +
	"\x03key\x18\x02 \x01(\fR\x03key\x12\x1a\n" +
	"\bexpected\x18\x03 \x01(\fR\bexpected\x12\x14\n" +
	"\x05value\x18\x04 \x01(\fR\x05value\"P\n" +
	"\x0eRemoveIfEquals\x12\x10\n" +
	"\x03map\x18\x01 \x01(\tR\x03map\x12\x10\n" +
	"\x03key\x18\x02 \x01(\fR\x03key\x12\x1a\n" +
	"\bexpected\x18\x03 \x01(\fR\bexpected\"F\n" +
	"\x06PutAll\x12\x10\n" +
	"\x03map\x18\x01 \x01(\tR\x03map\x12*\n" +
	"\aentries\x18\x02 \x03(\v2\x10.amulet.v1.EntryR\aentries\"[\n" +
	"\vMergeFields\x12\x10\n" +
	"\x03map\x18\x01 \x01(\tR\x03map\x12\x10\n" +
	"\x03key\x18\x02 \x01(\fR\x03key\x12(\n" +
	"\x06fields\x18\x03 \x03(\v2\x10.amulet.v1.FieldR\x06fields\"@\n" +
	"\x05Field\x12\x12\n" +
	"\x04name\x18\x01 \x01(\fR\x04name\x12\x19\n" +
	"\x05value\x18\x02 \x01(\fH\x00R\x05value\x88\x01\x01B\b\n" +
	"\x06_value\"7\n" +
	"\rContainsValue\x12\x10\n" +
	"\x03map\x18\x01 \x01(\tR\x03map\x12\x14\n" +
	"\x05value\x18\x02 \x01(\fR\x05value\"\x18\n" +
	"\x04Size\x12\x10\n" +
	"\x03map\x18\x01 \x01(\tR\x03map\"\x1b\n" +
	"\aIsEmpty\x12\x10\n" +
	"\x03map\x18\x01 \x01(\tR\x03map\"\x19\n" +
	"\x05Clear\x12\x10\n" +
	"\x03map\x18\x01 \x01(\tR\x03map\"\x1e\n" +
	"\n" +
	"FirstEntry\x12\x10\n" +
	"\x03map\x18\x01 \x01(\tR\x03map\"\x1d\n" +
	"\tLastEntry\x12\x10\n" +
	"\x03map\x18\x01 \x01(\tR\x03map\"`\n" +
	"\fNearestEntry\x12\x10\n" +
	"\x03map\x18\x01 \x01(\tR\x03map\x12\x10\n" +
	"\x03key\x18\x02 \x01(\fR\x03key\x12,\n" +
	"\anearest\x18\x03 \x01(\x0e2\x12.amulet.v1.NearestR\anearest\":\n" +
	"\bKeyBound\x12\x10\n" +
	"\x03key\x18\x01 \x01(\fR\x03key\x12\x1c\n" +
	"\tinclusive\x18\x02 \x01(\bR\tinclusive\"\x97\x01\n" +
	"\x05Range\x12\x10\n" +
	"\x03map\x18\x01 \x01(\tR\x03map\x12'\n" +
	"\x04from\x18\x02 \x01(\v2\x13.amulet.v1.KeyBoundR\x04from\x12#\n" +
	"\x02to\x18\x03 \x01(\v2\x13.amulet.v1.KeyBoundR\x02to\x12\x14\n" +
	"\x05limit\x18\x04 \x01(\rR\x05limit\x12\x18\n" +
	"\areverse\x18\x05 \x01(\bR\areverse\"C\n" +
	"\fOpenSnapshot\x12\x10\n" +
	"\x03map\x18\x01 \x01(\tR\x03map\x12!\n" +
	"\flease_micros\x18\x02 \x01(\x04R\vleaseMicros\"-\n" +
	"\x0fReleaseSnapshot\x12\x1a\n" +
	"\bsnapshot\x18\x01 \x01(\x04R\bsnapshot\"/\n" +
	"\x05Entry\x12\x10\n" +
	"\x03key\x18\x01 \x01(\fR\x03key\x12\x14\n" +
	"\x05value\x18\x02 \x01(\fR\x05value\"4\n" +
	"\rOptionalValue\x12\x19\n" +
	"\x05value\x18\x01 \x01(\fH\x00R\x05value\x88\x01\x01B\b\n" +
	"\x06_value\"7\n" +
	"\rOptionalEntry\x12&\n" +
	"\x05entry\x18\x01 \x01(\v2\x10.amulet.v1.EntryR\x05entry\"I\n" +
	"\aEntries\x12*\n" +
	"\aentries\x18\x01 \x03(\v2\x10.amulet.v1.EntryR\aentries\x12\x12\n" +
	"\x04more\x18\x02 \x01(\bR\x04more\"\x06\n" +
	"\x04Done\"\x8d\x04\n" +
	"\vMapResponse\x120\n" +
	"\x05value\x18\x01 \x01(\v2\x18.amulet.v1.OptionalValueH\x00R\x05value\x12\x14\n" +
	"\x04flag\x18\x02 \x01(\bH\x00R\x04flag\x12\x16\n" +
	"\x05count\x18\x03 \x01(\x04H\x00R\x05count\x120\n" +
	"\x05entry\x18\x04 \x01(\v2\x18.amulet.v1.OptionalEntryH\x00R\x05entry\x12.\n" +
	"\aentries\x18\x05 \x01(\v2\x12.amulet.v1.EntriesH\x00R\aentries\x12\x1c\n" +
	"\bsnapshot\x18\x06 \x01(\x04H\x00R\bsnapshot\x12%\n" +
	"\x04done\x18\a \x01(\v2\x0f.amulet.v1.DoneH\x00R\x04done\x12#\n" +
	"\fread_version\x18\b \x01(\x04H\x00R\vreadVersion\x12\x1c\n" +
	"\bposition\x18\t \x01(\x04H\x00R\bposition\x124\n" +
	"\tpositions\x18\n" +
	" \x01(\v2\x14.amulet.v1.PositionsH\x00R\tpositions\x128\n" +
	"\vlog_entries\x18\v \x01(\v2\x15.amulet.v1.LogEntriesH\x00R\n" +
	"logEntries\x12:\n" +
	"\n" +
	"log_bounds\x18\f \x01(\v2\x19.amulet.v1.LogBoundsReplyH\x00R\tlogBoundsB\b\n" +
	"\x06result\")\n" +
	"\tPositions\x12\x1c\n" +
	"\tpositions\x18\x01 \x03(\x04R\tpositions\"b\n" +
	"\n" +
	"LogEntries\x12\x12\n" +
	"\x04from\x18\x01 \x01(\x04R\x04from\x12\x18\n" +
	"\aentries\x18\x02 \x03(\fR\aentries\x12\x14\n" +
	"\x05first\x18\x03 \x01(\x04R\x05first\x12\x10\n" +
	"\x03end\x18\x04 \x01(\x04R\x03end\"8\n" +
	"\x0eLogBoundsReply\x12\x14\n" +
	"\x05first\x18\x01 \x01(\x04R\x05first\x12\x10\n" +
	"\x03end\x18\x02 \x01(\x04R\x03end\"t\n" +
	"\x0eTailLogRequest\x12\x10\n" +
	"\x03log\x18\x01 \x01(\tR\x03log\x12\x12\n" +
	"\x04from\x18\x02 \x01(\x04R\x04from\x12\x1b\n" +
	"\tmax_bytes\x18\x03 \x01(\rR\bmaxBytes\x12\x1f\n" +
	"\vmap_version\x18\x04 \x01(\x04R\n" +
	"mapVersion\"\x91\x01\n" +
	"\x13ReadSnapshotRequest\x12\x1c\n" +
	"\tpartition\x18\x01 \x01(\rR\tpartition\x12\x1a\n" +
	"\bsnapshot\x18\x02 \x01(\x04R\bsnapshot\x12\x19\n" +
	"\x05after\x18\x03 \x01(\fH\x00R\x05after\x88\x01\x01\x12\x1b\n" +
	"\tpage_size\x18\x04 \x01(\rR\bpageSizeB\b\n" +
	"\x06_after\"N\n" +
	"\fSnapshotPage\x12*\n" +
	"\aentries\x18\x01 \x03(\v2\x10.amulet.v1.EntryR\aentries\x12\x12\n" +
	"\x04last\x18\x02 \x01(\bR\x04last\"\x0f\n" +
	"\rStatusRequest\"\xec\x01\n" +
	"\x0eStatusResponse\x12\x12\n" +
	"\x04node\x18\x01 \x01(\rR\x04node\x12\x1f\n" +
	"\vmap_version\x18\x02 \x01(\x04R\n" +
	"mapVersion\x124\n" +
	"\breplicas\x18\x03 \x03(\v2\x18.amulet.v1.ReplicaStatusR\breplicas\x121\n" +
	"\astreams\x18\x04 \x03(\v2\x17.amulet.v1.StreamStatusR\astreams\x12<\n" +
	"\beventual\x18\x05 \x03(\v2 .amulet.v1.EventualReplicaStatusR\beventual\"\xa7\x03\n" +
	"\x15EventualReplicaStatus\x12\x10\n" +
	"\x03map\x18\x01 \x01(\tR\x03map\x12\x18\n" +
	"\areplica\x18\x02 \x01(\x04R\areplica\x12\x12\n" +
	"\x04keys\x18\x03 \x01(\x04R\x04keys\x12*\n" +
	"\x11clock_bitmap_bits\x18\x04 \x01(\x04R\x0fclockBitmapBits\x12\x19\n" +
	"\bdot_keys\x18\x05 \x01(\x04R\adotKeys\x12!\n" +
	"\fnon_stripped\x18\x06 \x01(\x04R\vnonStripped\x12#\n" +
	"\rwatermark_lag\x18\a \x01(\x04R\fwatermarkLag\x12 \n" +
	"\vcoordinated\x18\b \x01(\x04R\vcoordinated\x12&\n" +
	"\x0fsync_bytes_sent\x18\t \x01(\x04R\rsyncBytesSent\x12.\n" +
	"\x13sync_bytes_received\x18\n" +
	" \x01(\x04R\x11syncBytesReceived\x12\x1e\n" +
	"\n" +
	"tombstones\x18\v \x01(\x04R\n" +
	"tombstones\x12%\n" +
	"\x0emetadata_bytes\x18\f \x01(\x04R\rmetadataBytes\"\xa5\x02\n" +
	"\rReplicaStatus\x12\x1c\n" +
	"\tpartition\x18\x01 \x01(\rR\tpartition\x12\x16\n" +
	"\x06stream\x18\x02 \x01(\rR\x06stream\x12'\n" +
	"\x0fglobal_position\x18\x03 \x01(\x04R\x0eglobalPosition\x12\x16\n" +
	"\x06queued\x18\x04 \x01(\x04R\x06queued\x12\x1a\n" +
	"\bsessions\x18\x05 \x01(\x04R\bsessions\x12\x12\n" +
	"\x04maps\x18\x06 \x03(\tR\x04maps\x12<\n" +
	"\x1acheckpoint_global_position\x18\a \x01(\x04R\x18checkpointGlobalPosition\x12/\n" +
	"\x13checkpoints_written\x18\b \x01(\x04R\x12checkpointsWritten\"\xd5\x01\n" +
	"\fStreamStatus\x12\x16\n" +
	"\x06stream\x18\x01 \x01(\rR\x06stream\x12#\n" +
	"\rdecided_below\x18\x02 \x01(\x04R\fdecidedBelow\x12 \n" +
	"\vcoordinator\x18\x03 \x01(\bR\vcoordinator\x12\x16\n" +
	"\x06voting\x18\x04 \x01(\bR\x06voting\x12)\n" +
	"\x10values_delivered\x18\x05 \x01(\x04R\x0fvaluesDelivered\x12#\n" +
	"\rtrimmed_below\x18\x06 \x01(\x04R\ftrimmedBelow\"D\n" +
	"\x0fMapRequestBatch\x121\n" +
	"\brequests\x18\x01 \x03(\v2\x15.amulet.v1.MapRequestR\brequests\"E\n" +
	"\x10MapResponseBatch\x121\n" +
	"\boutcomes\x18\x01 \x03(\v2\x15.amulet.v1.MapOutcomeR\boutcomes\"}\n" +
	"\n" +
	"MapOutcome\x124\n" +
	"\bresponse\x18\x01 \x01(\v2\x16.amulet.v1.MapResponseH\x00R\bresponse\x12.\n" +
	"\afailure\x18\x02 \x01(\v2\x12.amulet.v1.FailureH\x00R\afailureB\t\n" +
	"\aoutcome\"\xc1\x01\n" +
	"\aFailure\x12\x12\n" +
	"\x04code\x18\x01 \x01(\rR\x04code\x12\x18\n" +
	"\amessage\x18\x02 \x01(\tR\amessage\x12\x14\n" +
	"\x05error\x18\x03 \x01(\tR\x05error\x12\x16\n" +
	"\x06reason\x18\x04 \x01(\tR\x06reason\x12!\n" +
	"\fconflict_map\x18\x05 \x01(\tR\vconflictMap\x12&\n" +
	"\fconflict_key\x18\x06 \x01(\fH\x00R\vconflictKey\x88\x01\x01B\x0f\n" +
	"\r_conflict_key*q\n" +
	"\aNearest\x12\x17\n" +
	"\x13NEAREST_UNSPECIFIED\x10\x00\x12\x11\n" +
	"\rNEAREST_FLOOR\x10\x01\x12\x13\n" +
	"\x0fNEAREST_CEILING\x10\x02\x12\x12\n" +
	"\x0eNEAREST_HIGHER\x10\x03\x12\x11\n" +
	"\rNEAREST_LOWER\x10\x042\xe0\a\n" +
	"\x06Amulet\x12M\n" +
	"\x0fGetPartitionMap\x12!.amulet.v1.GetPartitionMapRequest\x1a\x17.amulet.v1.PartitionMap\x12H\n" +
	"\vOpenSession\x12\x1d.amulet.v1.OpenSessionRequest\x1a\x1a.amulet.v1.SessionResponse\x12F\n" +
	"\tKeepAlive\x12\x1d.amulet.v1.OpenSessionRequest\x1a\x1a.amulet.v1.SessionResponse\x12J\n" +
	"\fCloseSession\x12\x1e.amulet.v1.CloseSessionRequest\x1a\x1a.amulet.v1.SessionResponse\x128\n" +
	"\aExecute\x12\x15.amulet.v1.MapRequest\x1a\x16.amulet.v1.MapResponse\x12G\n" +
	"\fExecuteBatch\x12\x1a.amulet.v1.MapRequestBatch\x1a\x1b.amulet.v1.MapResponseBatch\x12I\n" +
	"\fReadSnapshot\x12\x1e.amulet.v1.ReadSnapshotRequest\x1a\x17.amulet.v1.SnapshotPage0\x01\x12=\n" +
	"\aTailLog\x12\x19.amulet.v1.TailLogRequest\x1a\x15.amulet.v1.LogEntries0\x01\x12=\n" +
	"\x06ReadAt\x12\x18.amulet.v1.ReadAtRequest\x1a\x19.amulet.v1.ReadAtResponse\x12=\n" +
	"\x06Status\x12\x18.amulet.v1.StatusRequest\x1a\x19.amulet.v1.StatusResponse\x12L\n" +
	"\vReconfigure\x12\x1d.amulet.v1.ReconfigureRequest\x1a\x1e.amulet.v1.ReconfigureResponse\x12B\n" +
	"\vEventualGet\x12\x1d.amulet.v1.EventualGetRequest\x1a\x14.amulet.v1.Versioned\x12B\n" +
	"\vEventualPut\x12\x1d.amulet.v1.EventualPutRequest\x1a\x14.amulet.v1.Versioned\x12H\n" +
	"\x0eEventualDelete\x12 .amulet.v1.EventualDeleteRequest\x1a\x14.amulet.v1.Versionedb\x06proto3"

var (
	file_amulet_v1_amulet_proto_rawDescOnce sync.Once
	file_amulet_v1_amulet_proto_rawDescData []byte
)

func file_amulet_v1_amulet_proto_rawDescGZIP() []byte {
	file_amulet_v1_amulet_proto_rawDescOnce.Do(func() {
		file_amulet_v1_amulet_proto_rawDescData = protoimpl.X.CompressGZIP(unsafe.Slice(unsafe.StringData(file_amulet_v1_amulet_proto_rawDesc), len(file_amulet_v1_amulet_proto_rawDesc)))
	})
	return file_amulet_v1_amulet_proto_rawDescData
}

var file_amulet_v1_amulet_proto_enumTypes = make([]protoimpl.EnumInfo, 1)
var file_amulet_v1_amulet_proto_msgTypes = make([]protoimpl.MessageInfo, 90)
var file_amulet_v1_amulet_proto_goTypes = []any{
	(Nearest)(0),                   // 0: amulet.v1.Nearest
	(*EventualGetRequest)(nil),     // 1: amulet.v1.EventualGetRequest
	(*EventualPutRequest)(nil),     // 2: amulet.v1.EventualPutRequest
	(*EventualDeleteRequest)(nil),  // 3: amulet.v1.EventualDeleteRequest
	(*Versioned)(nil),              // 4: amulet.v1.Versioned
	(*ReconfigureRequest)(nil),     // 5: amulet.v1.ReconfigureRequest
	(*StreamSpec)(nil),             // 6: amulet.v1.StreamSpec
	(*SplitPartition)(nil),         // 7: amulet.v1.SplitPartition
	(*RangeCut)(nil),               // 8: amulet.v1.RangeCut
	(*MergePartitions)(nil),        // 9: amulet.v1.MergePartitions
	(*ReplaceStream)(nil),          // 10: amulet.v1.ReplaceStream
	(*MovePartition)(nil),          // 11: amulet.v1.MovePartition
	(*ReconfigureResponse)(nil),    // 12: amulet.v1.ReconfigureResponse
	(*GetPartitionMapRequest)(nil), // 13: amulet.v1.GetPartitionMapRequest
	(*PartitionMap)(nil),           // 14: amulet.v1.PartitionMap
	(*Partition)(nil),              // 15: amulet.v1.Partition
	(*TokenRange)(nil),             // 16: amulet.v1.TokenRange
	(*Keyspace)(nil),               // 17: amulet.v1.Keyspace
	(*Layout)(nil),                 // 18: amulet.v1.Layout
	(*EventualLayout)(nil),         // 19: amulet.v1.EventualLayout
	(*EventualVnode)(nil),          // 20: amulet.v1.EventualVnode
	(*HashLayout)(nil),             // 21: amulet.v1.HashLayout
	(*RangeLayout)(nil),            // 22: amulet.v1.RangeLayout
	(*RangeSplit)(nil),             // 23: amulet.v1.RangeSplit
	(*NodeAddress)(nil),            // 24: amulet.v1.NodeAddress
	(*OpenSessionRequest)(nil),     // 25: amulet.v1.OpenSessionRequest
	(*CloseSessionRequest)(nil),    // 26: amulet.v1.CloseSessionRequest
	(*SessionResponse)(nil),        // 27: amulet.v1.SessionResponse
	(*RequestHeader)(nil),          // 28: amulet.v1.RequestHeader
	(*MapRequest)(nil),             // 29: amulet.v1.MapRequest
	(*CreateLog)(nil),              // 30: amulet.v1.CreateLog
	(*DropLog)(nil),                // 31: amulet.v1.DropLog
	(*Append)(nil),                 // 32: amulet.v1.Append
	(*MultiAppend)(nil),            // 33: amulet.v1.MultiAppend
	(*LogEntry)(nil),               // 34: amulet.v1.LogEntry
	(*ReadLog)(nil),                // 35: amulet.v1.ReadLog
	(*TrimLog)(nil),                // 36: amulet.v1.TrimLog
	(*LogBounds)(nil),              // 37: amulet.v1.LogBounds
	(*BeginTransaction)(nil),       // 38: amulet.v1.BeginTransaction
	(*EndTransaction)(nil),         // 39: amulet.v1.EndTransaction
	(*KeyRange)(nil),               // 40: amulet.v1.KeyRange
	(*ReadConflict)(nil),           // 41: amulet.v1.ReadConflict
	(*TxnWrite)(nil),               // 42: amulet.v1.TxnWrite
	(*Commit)(nil),                 // 43: amulet.v1.Commit
	(*ReadAtRequest)(nil),          // 44: amulet.v1.ReadAtRequest
	(*ReadAtResponse)(nil),         // 45: amulet.v1.ReadAtResponse
	(*CreateMap)(nil),              // 46: amulet.v1.CreateMap
	(*DropMap)(nil),                // 47: amulet.v1.DropMap
	(*Get)(nil),                    // 48: amulet.v1.Get
	(*ContainsKey)(nil),            // 49: amulet.v1.ContainsKey
	(*Put)(nil),                    // 50: amulet.v1.Put
	(*Remove)(nil),                 // 51: amulet.v1.Remove
	(*PutIfAbsent)(nil),            // 52: amulet.v1.PutIfAbsent
	(*Replace)(nil),                // 53: amulet.v1.Replace
	(*ReplaceIfEquals)(nil),        // 54: amulet.v1.ReplaceIfEquals
	(*RemoveIfEquals)(nil),         // 55: amulet.v1.RemoveIfEquals
	(*PutAll)(nil),                 // 56: amulet.v1.PutAll
	(*MergeFields)(nil),            // 57: amulet.v1.MergeFields
	(*Field)(nil),                  // 58: amulet.v1.Field
	(*ContainsValue)(nil),          // 59: amulet.v1.ContainsValue
	(*Size)(nil),                   // 60: amulet.v1.Size
	(*IsEmpty)(nil),                // 61: amulet.v1.IsEmpty
	(*Clear)(nil),                  // 62: amulet.v1.Clear
	(*FirstEntry)(nil),             // 63: amulet.v1.FirstEntry
	(*LastEntry)(nil),              // 64: amulet.v1.LastEntry
	(*NearestEntry)(nil),           // 65: amulet.v1.NearestEntry
	(*KeyBound)(nil),               // 66: amulet.v1.KeyBound
	(*Range)(nil),                  // 67: amulet.v1.Range
	(*OpenSnapshot)(nil),           // 68: amulet.v1.OpenSnapshot
	(*ReleaseSnapshot)(nil),        // 69: amulet.v1.ReleaseSnapshot
	(*Entry)(nil),                  // 70: amulet.v1.Entry
	(*OptionalValue)(nil),          // 71: amulet.v1.OptionalValue
	(*OptionalEntry)(nil),          // 72: amulet.v1.OptionalEntry
	(*Entries)(nil),                // 73: amulet.v1.Entries
	(*Done)(nil),                   // 74: amulet.v1.Done
	(*MapResponse)(nil),            // 75: amulet.v1.MapResponse
	(*Positions)(nil),              // 76: amulet.v1.Positions
	(*LogEntries)(nil),             // 77: amulet.v1.LogEntries
	(*LogBoundsReply)(nil),         // 78: amulet.v1.LogBoundsReply
	(*TailLogRequest)(nil),         // 79: amulet.v1.TailLogRequest
	(*ReadSnapshotRequest)(nil),    // 80: amulet.v1.ReadSnapshotRequest
	(*SnapshotPage)(nil),           // 81: amulet.v1.SnapshotPage
	(*StatusRequest)(nil),          // 82: amulet.v1.StatusRequest
	(*StatusResponse)(nil),         // 83: amulet.v1.StatusResponse
	(*EventualReplicaStatus)(nil),  // 84: amulet.v1.EventualReplicaStatus
	(*ReplicaStatus)(nil),          // 85: amulet.v1.ReplicaStatus
	(*StreamStatus)(nil),           // 86: amulet.v1.StreamStatus
	(*MapRequestBatch)(nil),        // 87: amulet.v1.MapRequestBatch
	(*MapResponseBatch)(nil),       // 88: amulet.v1.MapResponseBatch
	(*MapOutcome)(nil),             // 89: amulet.v1.MapOutcome
	(*Failure)(nil),                // 90: amulet.v1.Failure
}
var file_amulet_v1_amulet_proto_depIdxs = []int32{
	7,  // 0: amulet.v1.ReconfigureRequest.split:type_name -> amulet.v1.SplitPartition
	9,  // 1: amulet.v1.ReconfigureRequest.merge:type_name -> amulet.v1.MergePartitions
	10, // 2: amulet.v1.ReconfigureRequest.replace_stream:type_name -> amulet.v1.ReplaceStream
	11, // 3: amulet.v1.ReconfigureRequest.move:type_name -> amulet.v1.MovePartition
	6,  // 4: amulet.v1.SplitPartition.stream:type_name -> amulet.v1.StreamSpec
	8,  // 5: amulet.v1.SplitPartition.at_keys:type_name -> amulet.v1.RangeCut
	6,  // 6: amulet.v1.ReplaceStream.stream:type_name -> amulet.v1.StreamSpec
	6,  // 7: amulet.v1.MovePartition.stream:type_name -> amulet.v1.StreamSpec
	15, // 8: amulet.v1.PartitionMap.partitions:type_name -> amulet.v1.Partition
	16, // 9: amulet.v1.PartitionMap.token_ring:type_name -> amulet.v1.TokenRange
	17, // 10: amulet.v1.PartitionMap.keyspaces:type_name -> amulet.v1.Keyspace
	24, // 11: amulet.v1.PartitionMap.nodes:type_name -> amulet.v1.NodeAddress
	18, // 12: amulet.v1.Keyspace.layout:type_name -> amulet.v1.Layout
	21, // 13: amulet.v1.Layout.hash:type_name -> amulet.v1.HashLayout
	22, // 14: amulet.v1.Layout.range:type_name -> amulet.v1.RangeLayout
	19, // 15: amulet.v1.Layout.eventual:type_name -> amulet.v1.EventualLayout
	20, // 16: amulet.v1.EventualLayout.ring:type_name -> amulet.v1.EventualVnode
	23, // 17: amulet.v1.RangeLayout.splits:type_name -> amulet.v1.RangeSplit
	28, // 18: amulet.v1.MapRequest.header:type_name -> amulet.v1.RequestHeader
	46, // 19: amulet.v1.MapRequest.create_map:type_name -> amulet.v1.CreateMap
	47, // 20: amulet.v1.MapRequest.drop_map:type_name -> amulet.v1.DropMap
	48, // 21: amulet.v1.MapRequest.get:type_name -> amulet.v1.Get
	49, // 22: amulet.v1.MapRequest.contains_key:type_name -> amulet.v1.ContainsKey
	50, // 23: amulet.v1.MapRequest.put:type_name -> amulet.v1.Put
	51, // 24: amulet.v1.MapRequest.remove:type_name -> amulet.v1.Remove
	52, // 25: amulet.v1.MapRequest.put_if_absent:type_name -> amulet.v1.PutIfAbsent
	53, // 26: amulet.v1.MapRequest.replace:type_name -> amulet.v1.Replace
	54, // 27: amulet.v1.MapRequest.replace_if_equals:type_name -> amulet.v1.ReplaceIfEquals
	55, // 28: amulet.v1.MapRequest.remove_if_equals:type_name -> amulet.v1.RemoveIfEquals
	56, // 29: amulet.v1.MapRequest.put_all:type_name -> amulet.v1.PutAll
	59, // 30: amulet.v1.MapRequest.contains_value:type_name -> amulet.v1.ContainsValue
	60, // 31: amulet.v1.MapRequest.size:type_name -> amulet.v1.Size
	61, // 32: amulet.v1.MapRequest.is_empty:type_name -> amulet.v1.IsEmpty
	62, // 33: amulet.v1.MapRequest.clear:type_name -> amulet.v1.Clear
	63, // 34: amulet.v1.MapRequest.first_entry:type_name -> amulet.v1.FirstEntry
	64, // 35: amulet.v1.MapRequest.last_entry:type_name -> amulet.v1.LastEntry
	65, // 36: amulet.v1.MapRequest.nearest_entry:type_name -> amulet.v1.NearestEntry
	67, // 37: amulet.v1.MapRequest.range:type_name -> amulet.v1.Range
	68, // 38: amulet.v1.MapRequest.open_snapshot:type_name -> amulet.v1.OpenSnapshot
	69, // 39: amulet.v1.MapRequest.release_snapshot:type_name -> amulet.v1.ReleaseSnapshot
	38, // 40: amulet.v1.MapRequest.begin_transaction:type_name -> amulet.v1.BeginTransaction
	39, // 41: amulet.v1.MapRequest.end_transaction:type_name -> amulet.v1.EndTransaction
	43, // 42: amulet.v1.MapRequest.commit:type_name -> amulet.v1.Commit
	57, // 43: amulet.v1.MapRequest.merge_fields:type_name -> amulet.v1.MergeFields
	30, // 44: amulet.v1.MapRequest.create_log:type_name -> amulet.v1.CreateLog
	31, // 45: amulet.v1.MapRequest.drop_log:type_name -> amulet.v1.DropLog
	32, // 46: amulet.v1.MapRequest.append:type_name -> amulet.v1.Append
	33, // 47: amulet.v1.MapRequest.multi_append:type_name -> amulet.v1.MultiAppend
	35, // 48: amulet.v1.MapRequest.read_log:type_name -> amulet.v1.ReadLog
	36, // 49: amulet.v1.MapRequest.trim_log:type_name -> amulet.v1.TrimLog
	37, // 50: amulet.v1.MapRequest.log_bounds:type_name -> amulet.v1.LogBounds
	34, // 51: amulet.v1.MultiAppend.entries:type_name -> amulet.v1.LogEntry
	66, // 52: amulet.v1.KeyRange.from:type_name -> amulet.v1.KeyBound
	66, // 53: amulet.v1.KeyRange.to:type_name -> amulet.v1.KeyBound
	40, // 54: amulet.v1.ReadConflict.range:type_name -> amulet.v1.KeyRange
	41, // 55: amulet.v1.Commit.reads:type_name -> amulet.v1.ReadConflict
	42, // 56: amulet.v1.Commit.writes:type_name -> amulet.v1.TxnWrite
	29, // 57: amulet.v1.ReadAtRequest.request:type_name -> amulet.v1.MapRequest
	75, // 58: amulet.v1.ReadAtResponse.response:type_name -> amulet.v1.MapResponse
	18, // 59: amulet.v1.CreateMap.layout:type_name -> amulet.v1.Layout
	70, // 60: amulet.v1.PutAll.entries:type_name -> amulet.v1.Entry
	58, // 61: amulet.v1.MergeFields.fields:type_name -> amulet.v1.Field
	0,  // 62: amulet.v1.NearestEntry.nearest:type_name -> amulet.v1.Nearest
	66, // 63: amulet.v1.Range.from:type_name -> amulet.v1.KeyBound
	66, // 64: amulet.v1.Range.to:type_name -> amulet.v1.KeyBound
	70, // 65: amulet.v1.OptionalEntry.entry:type_name -> amulet.v1.Entry
	70, // 66: amulet.v1.Entries.entries:type_name -> amulet.v1.Entry
	71, // 67: amulet.v1.MapResponse.value:type_name -> amulet.v1.OptionalValue
	72, // 68: amulet.v1.MapResponse.entry:type_name -> amulet.v1.OptionalEntry
	73, // 69: amulet.v1.MapResponse.entries:type_name -> amulet.v1.Entries
	74, // 70: amulet.v1.MapResponse.done:type_name -> amulet.v1.Done
	76, // 71: amulet.v1.MapResponse.positions:type_name -> amulet.v1.Positions
	77, // 72: amulet.v1.MapResponse.log_entries:type_name -> amulet.v1.LogEntries
	78, // 73: amulet.v1.MapResponse.log_bounds:type_name -> amulet.v1.LogBoundsReply
	70, // 74: amulet.v1.SnapshotPage.entries:type_name -> amulet.v1.Entry
	85, // 75: amulet.v1.StatusResponse.replicas:type_name -> amulet.v1.ReplicaStatus
	86, // 76: amulet.v1.StatusResponse.streams:type_name -> amulet.v1.StreamStatus
	84, // 77: amulet.v1.StatusResponse.eventual:type_name -> amulet.v1.EventualReplicaStatus
	29, // 78: amulet.v1.MapRequestBatch.requests:type_name -> amulet.v1.MapRequest
	89, // 79: amulet.v1.MapResponseBatch.outcomes:type_name -> amulet.v1.MapOutcome
	75, // 80: amulet.v1.MapOutcome.response:type_name -> amulet.v1.MapResponse
	90, // 81: amulet.v1.MapOutcome.failure:type_name -> amulet.v1.Failure
	13, // 82: amulet.v1.Amulet.GetPartitionMap:input_type -> amulet.v1.GetPartitionMapRequest
	25, // 83: amulet.v1.Amulet.OpenSession:input_type -> amulet.v1.OpenSessionRequest
	25, // 84: amulet.v1.Amulet.KeepAlive:input_type -> amulet.v1.OpenSessionRequest
	26, // 85: amulet.v1.Amulet.CloseSession:input_type -> amulet.v1.CloseSessionRequest
	29, // 86: amulet.v1.Amulet.Execute:input_type -> amulet.v1.MapRequest
	87, // 87: amulet.v1.Amulet.ExecuteBatch:input_type -> amulet.v1.MapRequestBatch
	80, // 88: amulet.v1.Amulet.ReadSnapshot:input_type -> amulet.v1.ReadSnapshotRequest
	79, // 89: amulet.v1.Amulet.TailLog:input_type -> amulet.v1.TailLogRequest
	44, // 90: amulet.v1.Amulet.ReadAt:input_type -> amulet.v1.ReadAtRequest
	82, // 91: amulet.v1.Amulet.Status:input_type -> amulet.v1.StatusRequest
	5,  // 92: amulet.v1.Amulet.Reconfigure:input_type -> amulet.v1.ReconfigureRequest
	1,  // 93: amulet.v1.Amulet.EventualGet:input_type -> amulet.v1.EventualGetRequest
	2,  // 94: amulet.v1.Amulet.EventualPut:input_type -> amulet.v1.EventualPutRequest
	3,  // 95: amulet.v1.Amulet.EventualDelete:input_type -> amulet.v1.EventualDeleteRequest
	14, // 96: amulet.v1.Amulet.GetPartitionMap:output_type -> amulet.v1.PartitionMap
	27, // 97: amulet.v1.Amulet.OpenSession:output_type -> amulet.v1.SessionResponse
	27, // 98: amulet.v1.Amulet.KeepAlive:output_type -> amulet.v1.SessionResponse
	27, // 99: amulet.v1.Amulet.CloseSession:output_type -> amulet.v1.SessionResponse
	75, // 100: amulet.v1.Amulet.Execute:output_type -> amulet.v1.MapResponse
	88, // 101: amulet.v1.Amulet.ExecuteBatch:output_type -> amulet.v1.MapResponseBatch
	81, // 102: amulet.v1.Amulet.ReadSnapshot:output_type -> amulet.v1.SnapshotPage
	77, // 103: amulet.v1.Amulet.TailLog:output_type -> amulet.v1.LogEntries
	45, // 104: amulet.v1.Amulet.ReadAt:output_type -> amulet.v1.ReadAtResponse
	83, // 105: amulet.v1.Amulet.Status:output_type -> amulet.v1.StatusResponse
	12, // 106: amulet.v1.Amulet.Reconfigure:output_type -> amulet.v1.ReconfigureResponse
	4,  // 107: amulet.v1.Amulet.EventualGet:output_type -> amulet.v1.Versioned
	4,  // 108: amulet.v1.Amulet.EventualPut:output_type -> amulet.v1.Versioned
	4,  // 109: amulet.v1.Amulet.EventualDelete:output_type -> amulet.v1.Versioned
	96, // [96:110] is the sub-list for method output_type
	82, // [82:96] is the sub-list for method input_type
	82, // [82:82] is the sub-list for extension type_name
	82, // [82:82] is the sub-list for extension extendee
	0,  // [0:82] is the sub-list for field type_name
}

func init() { file_amulet_v1_amulet_proto_init() }
func file_amulet_v1_amulet_proto_init() {
	if File_amulet_v1_amulet_proto != nil {
		return
	}
	file_amulet_v1_amulet_proto_msgTypes[4].OneofWrappers = []any{
		(*ReconfigureRequest_Split)(nil),
		(*ReconfigureRequest_Merge)(nil),
		(*ReconfigureRequest_ReplaceStream)(nil),
		(*ReconfigureRequest_Move)(nil),
	}
	file_amulet_v1_amulet_proto_msgTypes[6].OneofWrappers = []any{}
	file_amulet_v1_amulet_proto_msgTypes[17].OneofWrappers = []any{
		(*Layout_Hash)(nil),
		(*Layout_Range)(nil),
		(*Layout_Eventual)(nil),
	}
	file_amulet_v1_amulet_proto_msgTypes[28].OneofWrappers = []any{
		(*MapRequest_CreateMap)(nil),
		(*MapRequest_DropMap)(nil),
		(*MapRequest_Get)(nil),
		(*MapRequest_ContainsKey)(nil),
		(*MapRequest_Put)(nil),
		(*MapRequest_Remove)(nil),
		(*MapRequest_PutIfAbsent)(nil),
		(*MapRequest_Replace)(nil),
		(*MapRequest_ReplaceIfEquals)(nil),
		(*MapRequest_RemoveIfEquals)(nil),
		(*MapRequest_PutAll)(nil),
		(*MapRequest_ContainsValue)(nil),
		(*MapRequest_Size)(nil),
		(*MapRequest_IsEmpty)(nil),
		(*MapRequest_Clear)(nil),
		(*MapRequest_FirstEntry)(nil),
		(*MapRequest_LastEntry)(nil),
		(*MapRequest_NearestEntry)(nil),
		(*MapRequest_Range)(nil),
		(*MapRequest_OpenSnapshot)(nil),
		(*MapRequest_ReleaseSnapshot)(nil),
		(*MapRequest_BeginTransaction)(nil),
		(*MapRequest_EndTransaction)(nil),
		(*MapRequest_Commit)(nil),
		(*MapRequest_MergeFields)(nil),
		(*MapRequest_CreateLog)(nil),
		(*MapRequest_DropLog)(nil),
		(*MapRequest_Append)(nil),
		(*MapRequest_MultiAppend)(nil),
		(*MapRequest_ReadLog)(nil),
		(*MapRequest_TrimLog)(nil),
		(*MapRequest_LogBounds)(nil),
	}
	file_amulet_v1_amulet_proto_msgTypes[41].OneofWrappers = []any{}
	file_amulet_v1_amulet_proto_msgTypes[42].OneofWrappers = []any{}
	file_amulet_v1_amulet_proto_msgTypes[57].OneofWrappers = []any{}
	file_amulet_v1_amulet_proto_msgTypes[70].OneofWrappers = []any{}
	file_amulet_v1_amulet_proto_msgTypes[74].OneofWrappers = []any{
		(*MapResponse_Value)(nil),
		(*MapResponse_Flag)(nil),
		(*MapResponse_Count)(nil),
		(*MapResponse_Entry)(nil),
		(*MapResponse_Entries)(nil),
		(*MapResponse_Snapshot)(nil),
		(*MapResponse_Done)(nil),
		(*MapResponse_ReadVersion)(nil),
		(*MapResponse_Position)(nil),
		(*MapResponse_Positions)(nil),
		(*MapResponse_LogEntries)(nil),
		(*MapResponse_LogBounds)(nil),
	}
	file_amulet_v1_amulet_proto_msgTypes[79].OneofWrappers = []any{}
	file_amulet_v1_amulet_proto_msgTypes[88].OneofWrappers = []any{
		(*MapOutcome_Response)(nil),
		(*MapOutcome_Failure)(nil),
	}
	file_amulet_v1_amulet_proto_msgTypes[89].OneofWrappers = []any{}
	type x struct{}
	out := protoimpl.TypeBuilder{
		File: protoimpl.DescBuilder{
			GoPackagePath: reflect.TypeOf(x{}).PkgPath(),
			RawDescriptor: unsafe.Slice(unsafe.StringData(file_amulet_v1_amulet_proto_rawDesc), len(file_amulet_v1_amulet_proto_rawDesc)),
			NumEnums:      1,
			NumMessages:   90,
			NumExtensions: 0,
			NumServices:   1,
		},
		GoTypes:           file_amulet_v1_amulet_proto_goTypes,
		DependencyIndexes: file_amulet_v1_amulet_proto_depIdxs,
		EnumInfos:         file_amulet_v1_amulet_proto_enumTypes,
		MessageInfos:      file_amulet_v1_amulet_proto_msgTypes,
	}.Build()
	File_amulet_v1_amulet_proto = out.File
	file_amulet_v1_amulet_proto_goTypes = nil
	file_amulet_v1_amulet_proto_depIdxs = nil
}
