package main

// A small Amulet client for the workloads: the partition-map cache and
// routing of clients/python/src/amulet/routing.py (a hash map's key goes to
// the partition owning CRC-32C(key) on the token ring; an operation over
// the whole map goes to the lowest partition), one session per logical
// client with one operation in flight, and the retries the protocol allows
// (a resend keeps the session's sequence, so it applies at most once).

import (
	"context"
	"errors"
	"fmt"
	"hash/crc32"
	"math/rand"
	"sort"
	"sync"
	"time"

	"amuletfault/pb"

	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Routing is the cached partition map.
type Routing struct {
	Version    uint64
	Partitions map[uint32][]uint32
	Ring       []*pb.TokenRange
	Addresses  map[uint32]string
}

func routingFrom(m *pb.PartitionMap) (*Routing, error) {
	r := &Routing{Version: m.Version, Partitions: map[uint32][]uint32{}, Addresses: map[uint32]string{}}
	for _, p := range m.Partitions {
		r.Partitions[p.Id] = p.Replicas
	}
	r.Ring = append(r.Ring, m.TokenRing...)
	sort.Slice(r.Ring, func(i, j int) bool { return r.Ring[i].FirstToken < r.Ring[j].FirstToken })
	if len(r.Ring) == 0 || r.Ring[0].FirstToken != 0 || len(r.Partitions) == 0 {
		return nil, fmt.Errorf("bad partition map (version %d)", m.Version)
	}
	for _, n := range m.Nodes {
		r.Addresses[n.Node] = n.Address
	}
	return r, nil
}

// PartitionOf is the partition of a key of a hash map.
func (r *Routing) PartitionOf(key []byte) uint32 {
	tok := crc32.Checksum(key, castagnoli)
	i := sort.Search(len(r.Ring), func(i int) bool { return r.Ring[i].FirstToken > tok })
	return r.Ring[i-1].Partition
}

// AllPartitions is every partition of the token ring, sorted.
func (r *Routing) AllPartitions() []uint32 {
	seen := map[uint32]bool{}
	var out []uint32
	for _, t := range r.Ring {
		if !seen[t.Partition] {
			seen[t.Partition] = true
			out = append(out, t.Partition)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

func (r *Routing) replicaAddrs(p uint32) []string {
	var out []string
	for _, n := range r.Partitions[p] {
		if a, ok := r.Addresses[n]; ok {
			out = append(out, a)
		}
	}
	return out
}

// Cluster connections shared by all logical clients of a run.
type Conn struct {
	seeds   []string
	mu      sync.Mutex
	conns   map[string]*grpc.ClientConn
	routing *Routing
	rng     *rand.Rand
	Attempt time.Duration // one attempt
	OpLimit time.Duration // one operation with its retries
}

func NewConn(seeds []string, seed int64) *Conn {
	return &Conn{seeds: seeds, conns: map[string]*grpc.ClientConn{}, rng: rand.New(rand.NewSource(seed)),
		Attempt: 1500 * time.Millisecond, OpLimit: 8 * time.Second}
}

func (c *Conn) Close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, cc := range c.conns {
		cc.Close()
	}
	c.conns = map[string]*grpc.ClientConn{}
}

// reconnect is how soon a channel dials a node again after a refused
// dial. gRPC's default waits 1 s, then 1.6 s, 2.6 s, ...: a node
// restarted by the nemesis would answer for seconds before the harness
// saw it (one CI run measured a 6.9 s "convergence" that was 0.1 s of
// the store and the rest the client's backoff). The nemesis restarts
// nodes on purpose, so the harness retries a refused node every 50 ms
// to 500 ms.
var reconnect = grpc.ConnectParams{
	Backoff: backoff.Config{
		BaseDelay:  50 * time.Millisecond,
		Multiplier: 1.6,
		Jitter:     0.2,
		MaxDelay:   500 * time.Millisecond,
	},
	MinConnectTimeout: time.Second,
}

func (c *Conn) stub(addr string) pb.AmuletClient {
	c.mu.Lock()
	defer c.mu.Unlock()
	cc, ok := c.conns[addr]
	if !ok {
		var err error
		cc, err = grpc.NewClient(addr, grpc.WithTransportCredentials(ClientCredentials), grpc.WithConnectParams(reconnect))
		if err != nil {
			panic(err)
		}
		c.conns[addr] = cc
	}
	return pb.NewAmuletClient(cc)
}

func (c *Conn) intn(n int) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.rng.Intn(n)
}

func (c *Conn) pick(addrs []string) string { return addrs[c.intn(len(addrs))] }

// pickOther picks a replica other than failed (the one the last attempt
// failed at) when there is one: a replica that is down or catching up
// should not get the retry too.
func (c *Conn) pickOther(addrs []string, failed string) string {
	var others []string
	for _, a := range addrs {
		if a != failed {
			others = append(others, a)
		}
	}
	if len(others) == 0 {
		return c.pick(addrs)
	}
	return c.pick(others)
}

// Routing returns the cached map, fetching it first if there is none.
func (c *Conn) Routing(ctx context.Context) (*Routing, error) {
	c.mu.Lock()
	r := c.routing
	c.mu.Unlock()
	if r != nil {
		return r, nil
	}
	return c.Refresh(ctx)
}

// Refresh fetches the partition map from some node and keeps it unless it is older.
func (c *Conn) Refresh(ctx context.Context) (*Routing, error) {
	addrs := c.allAddrs()
	var last error
	for _, i := range c.perm(len(addrs)) {
		actx, cancel := context.WithTimeout(ctx, c.Attempt)
		m, err := c.stub(addrs[i]).GetPartitionMap(actx, &pb.GetPartitionMapRequest{})
		cancel()
		if err != nil {
			last = err
			continue
		}
		r, err := routingFrom(m)
		if err != nil {
			last = err
			continue
		}
		c.mu.Lock()
		if c.routing == nil || r.Version >= c.routing.Version {
			c.routing = r
		}
		r = c.routing
		c.mu.Unlock()
		return r, nil
	}
	return nil, fmt.Errorf("no node gave a partition map: %v", last)
}

func (c *Conn) perm(n int) []int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.rng.Perm(n)
}

func (c *Conn) allAddrs() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.routing != nil && len(c.routing.Addresses) > 0 {
		var out []string
		for _, a := range c.routing.Addresses {
			out = append(out, a)
		}
		sort.Strings(out)
		return out
	}
	return c.seeds
}

// Session is one logical client's session: one operation at a time.
type Session struct {
	ID      uint64
	Seq     uint64
	Open    bool
	Renewed time.Time
	Lease   time.Duration
}

func (c *Conn) NewSession() *Session {
	c.mu.Lock()
	id := c.rng.Uint64() | 1
	c.mu.Unlock()
	return &Session{ID: id, Seq: 1, Lease: 60 * time.Second}
}

// OpError is a failed operation; MaybeApplied says its effect is unknown.
// Kind and Code are those of the last answer when it ended the operation
// (a refusal: the amulet-error metadata and the gRPC code), else empty.
type OpError struct {
	Msg          string
	MaybeApplied bool
	Kind         string
	Code         codes.Code
}

func (e *OpError) Error() string { return e.Msg }

func errorKind(hdr, trl metadata.MD) string {
	for _, md := range []metadata.MD{trl, hdr} {
		if v := md.Get("amulet-error"); len(v) > 0 {
			return v[0]
		}
	}
	return ""
}

type retryErr struct {
	msg          string
	maybeApplied bool
	final        bool
	kind         string
	code         codes.Code
}

// classify turns a gRPC error into a retry decision (as client.py's _on_error).
func (c *Conn) classify(ctx context.Context, err error, kind string, s *Session, addr string) retryErr {
	re := c.classifyOnly(ctx, err, kind, s, addr)
	re.kind, re.code = kind, status.Code(err)
	return re
}

func (c *Conn) classifyOnly(ctx context.Context, err error, kind string, s *Session, addr string) retryErr {
	st, _ := status.FromError(err)
	msg := fmt.Sprintf("%s: %s %s: %s", addr, st.Code(), kind, st.Message())
	switch kind {
	case "stale-map", "not-a-replica":
		c.Refresh(ctx)
		return retryErr{msg: msg}
	case "session-expired":
		s.Open = false
		return retryErr{msg: msg}
	case "behind":
		return retryErr{msg: msg}
	case "stale-sequence":
		return retryErr{msg: msg, final: true, maybeApplied: true}
	case "reply-lost":
		return retryErr{msg: msg, final: true, maybeApplied: true}
	}
	switch st.Code() {
	case codes.DeadlineExceeded, codes.Unavailable, codes.Canceled, codes.Unknown:
		return retryErr{msg: msg, maybeApplied: true}
	}
	return retryErr{msg: msg, final: true}
}

func (c *Conn) ensureSession(ctx context.Context, s *Session) error {
	if s.Open && time.Since(s.Renewed) < s.Lease/2 {
		return nil
	}
	r, err := c.Routing(ctx)
	if err != nil {
		return err
	}
	addrs := c.allAddrs()
	addr := c.pick(addrs)
	req := &pb.OpenSessionRequest{Session: s.ID, LeaseMicros: uint64(s.Lease / time.Microsecond), MapVersion: r.Version}
	actx, cancel := context.WithTimeout(ctx, c.Attempt)
	defer cancel()
	sent := time.Now()
	var hdr, trl metadata.MD
	if s.Open {
		_, err = c.stub(addr).KeepAlive(actx, req, grpc.Header(&hdr), grpc.Trailer(&trl))
	} else {
		_, err = c.stub(addr).OpenSession(actx, req, grpc.Header(&hdr), grpc.Trailer(&trl))
	}
	if err != nil {
		kind := errorKind(hdr, trl)
		if kind == "stale-map" || kind == "not-a-replica" {
			c.Refresh(ctx)
		}
		if kind == "session-expired" {
			s.Open = false
		}
		return err
	}
	s.Open = true
	s.Renewed = sent
	return nil
}

// Execute runs one map operation in session s (all partitions: the lowest
// partition; one key: its partition) with retries, and uses up a sequence.
func (c *Conn) Execute(ctx context.Context, s *Session, key []byte, whole bool, build func(*pb.MapRequest)) (*pb.MapResponse, error) {
	return c.ExecuteOn(ctx, s, func(r *Routing) (uint32, error) {
		if whole {
			return r.AllPartitions()[0], nil
		}
		return r.PartitionOf(key), nil
	}, build)
}

// ExecuteOn is Execute sent to a replica of the partition route picks from
// the current partition map (asked again at every attempt: the map may
// change between them).
func (c *Conn) ExecuteOn(ctx context.Context, s *Session, route func(*Routing) (uint32, error), build func(*pb.MapRequest)) (*pb.MapResponse, error) {
	defer func() { s.Seq++ }()
	deadline := time.Now().Add(c.OpLimit)
	backoff := 10 * time.Millisecond
	maybe := false
	last := "no attempt"
	failed := ""
	for {
		if err := c.ensureSession(ctx, s); err != nil {
			last = "session: " + err.Error()
		} else {
			r, err := c.Routing(ctx)
			var part uint32
			if err == nil {
				part, err = route(r)
			}
			if err != nil {
				last = err.Error()
			} else {
				addrs := r.replicaAddrs(part)
				addr := c.pickOther(addrs, failed)
				req := &pb.MapRequest{Header: &pb.RequestHeader{MapVersion: r.Version, Partition: part, Session: s.ID, Sequence: s.Seq}}
				build(req)
				actx, cancel := context.WithTimeout(ctx, c.Attempt)
				var hdr, trl metadata.MD
				resp, err := c.stub(addr).Execute(actx, req, grpc.Header(&hdr), grpc.Trailer(&trl))
				cancel()
				if err == nil {
					return resp, nil
				}
				failed = addr
				re := c.classify(ctx, err, errorKind(hdr, trl), s, addr)
				maybe = maybe || re.maybeApplied
				last = re.msg
				if re.final {
					return nil, &OpError{Msg: re.msg, MaybeApplied: maybe, Kind: re.kind, Code: re.code}
				}
				if !s.Open && maybe {
					// A new session could apply it a second time.
					return nil, &OpError{Msg: "session expired after a maybe-applied attempt: " + re.msg, MaybeApplied: true}
				}
			}
		}
		if ctx.Err() != nil || time.Now().Add(backoff).After(deadline) {
			return nil, &OpError{Msg: "gave up: " + last, MaybeApplied: maybe}
		}
		time.Sleep(backoff)
		backoff = min(backoff*2, 400*time.Millisecond)
	}
}

// CreateMap creates a hash map; it exists already is fine.
func (c *Conn) CreateMap(ctx context.Context, name string) error {
	s := c.NewSession()
	_, err := c.Execute(ctx, s, nil, true, func(r *pb.MapRequest) {
		r.Op = &pb.MapRequest_CreateMap{CreateMap: &pb.CreateMap{Map: name}}
	})
	if err != nil && !isCode(err, "AlreadyExists") {
		return err
	}
	c.Refresh(ctx)
	return nil
}

func isCode(err error, code string) bool {
	var oe *OpError
	if errors.As(err, &oe) {
		return containsStr(oe.Msg, code)
	}
	return false
}

func containsStr(s, sub string) bool {
	for i := 0; i+len(sub) <= len(s); i++ {
		if s[i:i+len(sub)] == sub {
			return true
		}
	}
	return false
}

// ReadSnapshot reads one partition's part of a snapshot from a replica,
// resuming elsewhere if a stream breaks.
func (c *Conn) ReadSnapshot(ctx context.Context, part uint32, snap uint64) ([]*pb.Entry, error) {
	deadline := time.Now().Add(c.OpLimit)
	var out []*pb.Entry
	var after []byte
	backoff := 10 * time.Millisecond
	failed := ""
	for {
		r, err := c.Routing(ctx)
		if err != nil {
			return nil, err
		}
		addr := c.pickOther(r.replicaAddrs(part), failed)
		req := &pb.ReadSnapshotRequest{Partition: part, Snapshot: snap}
		if after != nil {
			req.After = after
		}
		sctx, cancel := context.WithTimeout(ctx, 3*c.Attempt)
		stream, err := c.stub(addr).ReadSnapshot(sctx, req)
		done := false
		if err == nil {
			for {
				page, rerr := stream.Recv()
				if rerr != nil {
					err = rerr
					break
				}
				for _, e := range page.Entries {
					out = append(out, e)
					after = e.Key
				}
				if page.Last {
					done = true
					break
				}
			}
		}
		cancel()
		if done {
			return out, nil
		}
		failed = addr
		if st, ok := status.FromError(err); ok && (st.Code() == codes.NotFound || st.Code() == codes.InvalidArgument) {
			return nil, fmt.Errorf("snapshot %d partition %d: %v", snap, part, err)
		}
		if time.Now().Add(backoff).After(deadline) {
			return nil, fmt.Errorf("snapshot %d partition %d: gave up: %v", snap, part, err)
		}
		time.Sleep(backoff)
		backoff = min(backoff*2, 400*time.Millisecond)
	}
}

// Status asks one node for its view.
func (c *Conn) Status(ctx context.Context, addr string) (*pb.StatusResponse, error) {
	actx, cancel := context.WithTimeout(ctx, c.Attempt)
	defer cancel()
	return c.stub(addr).Status(actx, &pb.StatusRequest{})
}

func crc32cOf(b []byte) uint32 { return crc32.Checksum(b, castagnoli) }
