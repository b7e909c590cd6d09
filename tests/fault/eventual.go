package main

// The `eventual` workload (eventual maps, docs/eventual-maps.md): one map
// created with an EventualLayout (3 replicas per key), 8 keys, and
// sequential clients that read-modify-write (a read with r = 0, a
// majority, then a write of a unique value "w<worker>-<n>" with the
// read's context), write blind (an empty context: a sibling), delete with
// a read's context, and read. Every request goes to a random node (any
// node takes it and forwards it to the key's replicas). One line per
// operation in eventual.history.jsonl, with the values the operation's
// read returned (what its context covers, so what it supersedes).
//
// After the last heal the workload waits for its clients to stop and
// polls every node's Status until every virtual node of the map reports
// watermark_lag 0 and dot_keys 0 (every peer holds every dot): the time
// from the heal must be at most 5 s. Then every key is read with r = 3
// from every node (all must answer the same siblings), and once every
// replica's strip passes are done (non_stripped 0) the objects stored must
// be exactly 3 per key that still has values (no tombstones). The checks
// are in eventual_check.go.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"amuletfault/pb"
)

const (
	eventualMap      = "ev"
	eventualKeyCount = 8
	eventualReplicas = 3
	// The acceptance: replicas equal within 5 s of the heal.
	eventualConvergeLimit = 5 * time.Second
	// How long the workload polls for convergence (after its clients
	// stopped) before it gives up, and for the strip passes after that.
	eventualConvergeWait = 60 * time.Second
	eventualStripWait    = 10 * time.Second
	eventualPoll         = 100 * time.Millisecond
	// One attempt of an eventual request: the server answers
	// quorum-not-reached after 2 s (2.5 s for a forwarded write).
	eventualAttempt = 4 * time.Second
)

// EvOp is one operation of an eventual history, one JSON line of
// eventual.history.jsonl.
type EvOp struct {
	Client int    `json:"client"`
	Kind   string `json:"op"` // read | rmw | write | delete | final
	Key    string `json:"key"`
	// The node asked (for rmw and delete: the write's; the read's is
	// ReadNode).
	Node     string `json:"node,omitempty"`
	ReadNode string `json:"read_node,omitempty"`
	R        uint32 `json:"r,omitempty"` // 0: a majority
	W        uint32 `json:"w,omitempty"` // 0: a majority
	// read, final: the values returned. rmw, delete: the values their read
	// returned, which the context sent with the write covers (what the
	// write supersedes). write: none (an empty context).
	Read []string `json:"read,omitempty"`
	// rmw, delete: when their read returned (0: it failed, and nothing was
	// written).
	ReadReturn int64  `json:"read_return,omitempty"`
	Value      string `json:"value,omitempty"` // rmw, write: the value written
	// rmw, write, delete (ok): the values at the replica that took the
	// write, after it.
	Reply  []string `json:"reply,omitempty"`
	Call   int64    `json:"call"`   // ns since the run started
	Return int64    `json:"return"` // ns; -1: unknown outcome
	// ok; unknown (a write that may have taken effect: a timeout,
	// quorum-not-reached, a broken connection); fail (a read that failed,
	// or a write that certainly did not take effect: refused, or never
	// sent because its read failed).
	Status string `json:"status"`
	Err    string `json:"error,omitempty"`
	Final  bool   `json:"final,omitempty"`
}

func (o *EvOp) isWrite() bool { return o.Kind == "rmw" || o.Kind == "write" || o.Kind == "delete" }

// sent says whether a write was sent (an rmw or delete whose read failed
// was not).
func (o *EvOp) sent() bool {
	if o.Kind == "write" {
		return true
	}
	return o.isWrite() && o.ReadReturn > 0
}

// readPart is the read an operation holds: its values and when it was
// called and returned (ok false: none, or it failed).
func (o *EvOp) readPart() (values []string, call, ret int64, ok bool) {
	switch o.Kind {
	case "read", "final":
		return o.Read, o.Call, o.Return, o.Status == "ok"
	case "rmw", "delete":
		return o.Read, o.Call, o.ReadReturn, o.ReadReturn > 0
	}
	return nil, 0, 0, false
}

// sentAt is when a write was sent at the earliest (after its read).
func (o *EvOp) sentAt() int64 {
	if o.Kind == "write" {
		return o.Call
	}
	return o.ReadReturn
}

func (o *EvOp) String() string {
	var call string
	switch o.Kind {
	case "read", "final":
		call = fmt.Sprintf("%s(%s, r=%d) at %s", o.Kind, o.Key, o.R, o.Node)
	case "rmw":
		call = fmt.Sprintf("rmw(%s, read [%s], write %s)", o.Key, strings.Join(o.Read, " "), o.Value)
	case "write":
		call = fmt.Sprintf("write(%s, %s, empty context)", o.Key, o.Value)
	case "delete":
		call = fmt.Sprintf("delete(%s, read [%s])", o.Key, strings.Join(o.Read, " "))
	default:
		call = o.Kind + "(?)"
	}
	at := fmt.Sprintf(" (client %d, called at %.3fs", o.Client, float64(o.Call)/1e9)
	if o.Return > 0 {
		at += fmt.Sprintf(", returned at %.3fs", float64(o.Return)/1e9)
	}
	at += ")"
	switch {
	case o.Status != "ok":
		return call + " -> " + o.Status + at
	case o.Kind == "read" || o.Kind == "final":
		return call + " -> [" + strings.Join(o.Read, " ") + "]" + at
	default:
		return call + " -> ok [" + strings.Join(o.Reply, " ") + "]" + at
	}
}

// EvFinal is what the workload saw after the last heal besides the final
// reads (eventual.final.json).
type EvFinal struct {
	Replicas int `json:"replicas"`
	// Seconds from the last heal (and from the last operation's return)
	// until every virtual node reported watermark_lag 0 and dot_keys 0;
	// -1: not within the wait.
	ConvergedSeconds     float64 `json:"converged_seconds"`
	ConvergedAfterLastOp float64 `json:"converged_after_last_op_seconds"`
	ConvergeLimitSeconds float64 `json:"converge_limit_seconds"`
	ConvergeProblem      string  `json:"converge_problem,omitempty"`
	LastStatus           string  `json:"last_status,omitempty"`
	StrippedSeconds      float64 `json:"stripped_seconds"` // after convergence; -1: not within the wait
	KeysStored           int64   `json:"keys_stored"`      // the sum of `keys` over every virtual node, once stripped
	Vnodes               int     `json:"vnodes"`
	ClockBitmapBits      int64   `json:"clock_bitmap_bits"`
	Tombstones           int64   `json:"tombstones"` // objects stored without a value, as the nodes count them
	// What the convergence poll saw whenever it changed: seconds from the
	// heal, then the state.
	Timeline          []string `json:"timeline,omitempty"`
	FinalReadFailures []string `json:"final_read_failures,omitempty"`
}

// ---- the workload ------------------------------------------------------------

type eventualRun struct {
	keys   []string
	start  time.Time
	vnodes int // the ring's virtual nodes (from the partition map; 0: unknown)

	mu       sync.Mutex
	ops      []*EvOp
	clients  int
	problems []string
	lastOp   int64

	healOnce sync.Once
	healAt   time.Time
	conv     chan struct{} // closed when the convergence poll is done
	fin      EvFinal
}

func newEventualRun(conn *Conn, logf func(string, ...any), seed int64) (TxnWorkload, error) {
	e := &eventualRun{keys: keys("e", eventualKeyCount), start: time.Now(), conv: make(chan struct{})}
	e.fin.Replicas = eventualReplicas
	e.fin.ConvergeLimitSeconds = eventualConvergeLimit.Seconds()
	if err := waitUntil(60*time.Second, func() error { return conn.CreateEventualMap(context.Background(), eventualMap, eventualReplicas) }); err != nil {
		return nil, fmt.Errorf("create eventual map %s: %v", eventualMap, err)
	}
	e.vnodes = conn.eventualVnodes(context.Background(), eventualMap)
	// Every node serves the map (a read of all replicas answers) before
	// the clients start.
	for _, addr := range conn.allAddrs() {
		if err := waitUntil(60*time.Second, func() error {
			_, err := conn.eventualGetAt(context.Background(), addr, eventualMap, e.keys[0], eventualReplicas)
			return err
		}); err != nil {
			return nil, fmt.Errorf("eventual map %s at %s: %v", eventualMap, addr, err)
		}
	}
	logf("eventual: map %s, %d keys, %d replicas, %d virtual nodes", eventualMap, len(e.keys), eventualReplicas, e.vnodes)
	return e, nil
}

// CreateEventualMap creates an eventual map with `replicas` replicas per
// key; it exists already is fine.
func (c *Conn) CreateEventualMap(ctx context.Context, name string, replicas uint32) error {
	s := c.NewSession()
	_, err := c.Execute(ctx, s, nil, true, func(r *pb.MapRequest) {
		r.Op = &pb.MapRequest_CreateMap{CreateMap: &pb.CreateMap{Map: name,
			Layout: &pb.Layout{Kind: &pb.Layout_Eventual{Eventual: &pb.EventualLayout{Replicas: replicas}}}}}
	})
	if err != nil && !isCode(err, "AlreadyExists") {
		return err
	}
	c.Refresh(ctx)
	return nil
}

// eventualVnodes is the size of the map's ring in the partition map (0
// when no node says).
func (c *Conn) eventualVnodes(ctx context.Context, name string) int {
	for _, addr := range c.allAddrs() {
		actx, cancel := context.WithTimeout(ctx, c.Attempt)
		m, err := c.stub(addr).GetPartitionMap(actx, &pb.GetPartitionMapRequest{})
		cancel()
		if err != nil {
			continue
		}
		for _, ks := range m.Keyspaces {
			if ks.Name == name {
				if ev := ks.GetLayout().GetEventual(); ev != nil {
					return len(ev.Ring)
				}
			}
		}
	}
	return 0
}

// evError is a failed eventual request: the gRPC code, the amulet-reason
// metadata, and whether the request certainly changed nothing.
type evError struct {
	msg        string
	code       codes.Code
	reason     string
	definitely bool // refused: it took no effect
}

func (e *evError) Error() string { return e.msg }

// notSent says whether a gRPC error means the request never left this
// client (no connection to the node could be made).
func notSent(err error) bool {
	if status.Code(err) != codes.Unavailable {
		return false
	}
	m := status.Convert(err).Message()
	return strings.Contains(m, "Error while dialing") || strings.Contains(m, "connect: connection refused")
}

// eventualCall sends one eventual request to addr, or to other nodes when
// no connection to it can be made (the request was not sent): up to one
// try per node. It returns the reply and the node that answered (or
// failed).
func (c *Conn) eventualCall(ctx context.Context, addr string,
	call func(pb.AmuletClient, context.Context, ...grpc.CallOption) (*pb.Versioned, error)) (*pb.Versioned, string, error) {
	tried := map[string]bool{}
	for {
		tried[addr] = true
		actx, cancel := context.WithTimeout(ctx, eventualAttempt)
		var hdr, trl metadata.MD
		resp, err := call(c.stub(addr), actx, grpc.Header(&hdr), grpc.Trailer(&trl))
		cancel()
		if err == nil {
			return resp, addr, nil
		}
		if notSent(err) {
			var others []string
			for _, a := range c.allAddrs() {
				if !tried[a] {
					others = append(others, a)
				}
			}
			if len(others) > 0 {
				addr = c.pick(others)
				continue
			}
		}
		st, _ := status.FromError(err)
		reason := ""
		for _, md := range []metadata.MD{trl, hdr} {
			if v := md.Get("amulet-reason"); len(v) > 0 {
				reason = v[0]
				break
			}
		}
		ee := &evError{code: st.Code(), reason: reason}
		ee.msg = fmt.Sprintf("%s: %s %s: %s", addr, st.Code(), reason, st.Message())
		switch st.Code() {
		case codes.InvalidArgument, codes.NotFound, codes.FailedPrecondition:
			ee.definitely = true // documented refusals: nothing changed
		}
		if notSent(err) {
			ee.definitely = true
		}
		return nil, addr, ee
	}
}

func (c *Conn) eventualGetAt(ctx context.Context, addr, m, key string, r uint32) (*pb.Versioned, error) {
	resp, _, err := c.eventualCall(ctx, addr, func(s pb.AmuletClient, ctx context.Context, o ...grpc.CallOption) (*pb.Versioned, error) {
		return s.EventualGet(ctx, &pb.EventualGetRequest{Map: m, Key: []byte(key), R: r}, o...)
	})
	return resp, err
}

func values(v *pb.Versioned) []string {
	out := []string{}
	for _, b := range v.GetValues() {
		out = append(out, string(b))
	}
	return out
}

func (e *eventualRun) now() int64 { return int64(time.Since(e.start)) }

func (e *eventualRun) newClient() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.clients++
	return e.clients - 1
}

func (e *eventualRun) record(o *EvOp) {
	e.mu.Lock()
	e.ops = append(e.ops, o)
	if o.Return > e.lastOp {
		e.lastOp = o.Return
	}
	e.mu.Unlock()
}

// outcome sets a write's status from its error.
func (o *EvOp) outcome(err error) {
	if err == nil {
		o.Status = "ok"
		return
	}
	o.Err = err.Error()
	o.Return = -1
	var ee *evError
	if errors.As(err, &ee) && ee.definitely {
		o.Status = "fail"
	} else {
		o.Status = "unknown"
	}
}

// Worker runs one sequential client until stop closes.
func (e *eventualRun) Worker(stop <-chan struct{}, conn *Conn, seed int64) {
	rng := rand.New(rand.NewSource(seed))
	client := e.newClient()
	n := 0
	ctx := context.Background()
	for {
		select {
		case <-stop:
			return
		default:
		}
		addrs := conn.allAddrs()
		node := func() string { return addrs[rng.Intn(len(addrs))] }
		kind := pickKind(rng, map[string]int{"rmw": 35, "write": 15, "delete": 15, "read": 35})
		o := &EvOp{Client: client, Kind: kind, Key: e.keys[rng.Intn(len(e.keys))]}
		if kind == "rmw" || kind == "write" {
			n++
			o.Value = fmt.Sprintf("w%d-%d", client, n)
		}
		o.Call = e.now()
		var readCtx []byte
		if kind != "write" {
			// The read (a read op, or the read of an rmw or delete).
			o.ReadNode = node()
			resp, at, err := conn.eventualCall(ctx, o.ReadNode, func(s pb.AmuletClient, ctx context.Context, opts ...grpc.CallOption) (*pb.Versioned, error) {
				return s.EventualGet(ctx, &pb.EventualGetRequest{Map: eventualMap, Key: []byte(o.Key)}, opts...)
			})
			o.ReadNode = at
			if err != nil {
				o.Err = "read: " + err.Error()
				o.Status, o.Return = "fail", -1 // nothing was written
				if kind == "read" {
					o.Node, o.ReadNode = at, ""
				}
				e.record(o)
				pauseAfterFailure(rng)
				continue
			}
			o.Read = values(resp)
			readCtx = resp.GetContext()
			if kind == "read" {
				o.Node, o.ReadNode = at, ""
				o.Status, o.Return = "ok", e.now()
				e.record(o)
				time.Sleep(time.Duration(rng.Int63n(int64(10 * time.Millisecond))))
				continue
			}
			o.ReadReturn = e.now()
			if kind == "delete" && InjectBug == "eventual-blind-deletes" {
				// The injected bug: the delete is sent with the fresh
				// read's context, but the history says it saw nothing (a
				// client that deletes more than it read): the oracle must
				// find the values it removed lost.
				o.Read = nil
			}
		}
		var resp *pb.Versioned
		var err error
		o.Node = node()
		switch kind {
		case "rmw", "write":
			resp, o.Node, err = conn.eventualCall(ctx, o.Node, func(s pb.AmuletClient, ctx context.Context, opts ...grpc.CallOption) (*pb.Versioned, error) {
				return s.EventualPut(ctx, &pb.EventualPutRequest{Map: eventualMap, Key: []byte(o.Key), Value: []byte(o.Value), Context: readCtx}, opts...)
			})
		case "delete":
			resp, o.Node, err = conn.eventualCall(ctx, o.Node, func(s pb.AmuletClient, ctx context.Context, opts ...grpc.CallOption) (*pb.Versioned, error) {
				return s.EventualDelete(ctx, &pb.EventualDeleteRequest{Map: eventualMap, Key: []byte(o.Key), Context: readCtx}, opts...)
			})
		}
		o.outcome(err)
		if err == nil {
			o.Return = e.now()
			o.Reply = values(resp)
		}
		e.record(o)
		if err != nil {
			pauseAfterFailure(rng)
			continue
		}
		time.Sleep(time.Duration(rng.Int63n(int64(10 * time.Millisecond))))
	}
}

// pauseAfterFailure waits 50-150 ms after a failed request: with every
// node down (kill-majority, or nodes crashing) requests fail at once, and
// a client would otherwise spin.
func pauseAfterFailure(rng *rand.Rand) {
	time.Sleep(50*time.Millisecond + time.Duration(rng.Int63n(int64(100*time.Millisecond))))
}

// Healed starts the convergence poll: every node's Status every 100 ms
// until every virtual node of the map reports watermark_lag 0 and
// dot_keys 0. main.go calls it once the clients have stopped, with the
// time the nemesis healed for the last time.
func (e *eventualRun) Healed(conn *Conn, at time.Time) {
	e.healOnce.Do(func() {
		e.healAt = at
		go func() {
			defer close(e.conv)
			e.converge(conn)
		}()
	})
}

// eventualStatuses is every virtual node's status of the map, from every
// node (an error if a node does not answer).
func (c *Conn) eventualStatuses(ctx context.Context, m string) ([]*pb.EventualReplicaStatus, error) {
	var out []*pb.EventualReplicaStatus
	for _, addr := range c.allAddrs() {
		st, err := c.Status(ctx, addr)
		if err != nil {
			return nil, fmt.Errorf("%s: status: %v", addr, err)
		}
		for _, r := range st.Eventual {
			if r.Map == m {
				out = append(out, r)
			}
		}
	}
	return out, nil
}

func describeStatuses(sts []*pb.EventualReplicaStatus) string {
	var parts []string
	for _, s := range sts {
		parts = append(parts, fmt.Sprintf("%d: keys %d lag %d dot_keys %d non_stripped %d bits %d tombstones %d", s.Replica, s.Keys, s.WatermarkLag, s.DotKeys, s.NonStripped, s.ClockBitmapBits, s.Tombstones))
	}
	return strings.Join(parts, "; ")
}

func (e *eventualRun) converge(conn *Conn) {
	stopped := time.Now()
	e.mu.Lock()
	lastOp := e.start.Add(time.Duration(e.lastOp))
	e.mu.Unlock()
	if lastOp.Before(e.healAt) {
		lastOp = e.healAt
	}
	e.fin.ConvergedSeconds, e.fin.ConvergedAfterLastOp = -1, -1
	var why, phase string
	for time.Since(stopped) < eventualConvergeWait {
		sts, err := conn.eventualStatuses(context.Background(), eventualMap)
		now := phase
		switch {
		case err != nil:
			why = err.Error()
			now = "a node does not answer Status (" + why + ")"
		case len(sts) == 0 || (e.vnodes > 0 && len(sts) != e.vnodes):
			why = fmt.Sprintf("%d virtual nodes report, the ring has %d", len(sts), e.vnodes)
			now = why
		default:
			why = ""
			var lag, dots, laggards uint64
			for _, s := range sts {
				lag += s.WatermarkLag
				dots += s.DotKeys
				if s.WatermarkLag != 0 || s.DotKeys != 0 {
					laggards++
				}
			}
			if laggards > 0 {
				why = "not converged: " + describeStatuses(sts)
				now = fmt.Sprintf("%d of %d virtual nodes not converged (watermark lag %d, dot-key entries %d in all)", laggards, len(sts), lag, dots)
			} else {
				now = "converged"
			}
		}
		if now != phase && len(e.fin.Timeline) < 40 {
			// What the poll saw, when it changed (seconds from the heal).
			e.fin.Timeline = append(e.fin.Timeline, fmt.Sprintf("%.2fs %s", time.Since(e.healAt).Seconds(), now))
			phase = now
		}
		if why == "" {
			now := time.Now()
			e.fin.ConvergedSeconds = now.Sub(e.healAt).Seconds()
			e.fin.ConvergedAfterLastOp = now.Sub(lastOp).Seconds()
			e.fin.LastStatus = describeStatuses(sts)
			return
		}
		time.Sleep(eventualPoll)
	}
	e.fin.ConvergeProblem = fmt.Sprintf("not converged %s after the clients stopped: %s", eventualConvergeWait, why)
}

// Final waits for convergence, reads every key with r = 3 from every node,
// then waits for the strip passes and counts the objects stored.
func (e *eventualRun) Final(conn *Conn) error {
	e.Healed(conn, time.Now()) // no-op if main.go called it at the heal
	select {
	case <-e.conv:
	case <-time.After(eventualConvergeWait + 2*time.Minute):
		return fmt.Errorf("the convergence poll did not end")
	}
	var errs []string
	client := e.newClient()
	for _, addr := range conn.allAddrs() {
		for _, k := range e.keys {
			var last error
			for attempt := 0; attempt < 5; attempt++ {
				o := &EvOp{Client: client, Kind: "final", Key: k, Node: addr, R: eventualReplicas, Final: true, Call: e.now()}
				resp, err := conn.eventualGetAt(context.Background(), addr, eventualMap, k, eventualReplicas)
				if err == nil {
					o.Status, o.Return, o.Read = "ok", e.now(), values(resp)
					e.record(o)
					last = nil
					break
				}
				last = err
				time.Sleep(time.Second)
			}
			if last != nil {
				msg := fmt.Sprintf("final read of %s at %s: %v", k, addr, last)
				errs = append(errs, msg)
				e.fin.FinalReadFailures = append(e.fin.FinalReadFailures, msg)
			}
		}
	}
	// The strip passes: every replica's stored contexts stripped.
	began := time.Now()
	e.fin.StrippedSeconds = -1
	for time.Since(began) < eventualStripWait {
		sts, err := conn.eventualStatuses(context.Background(), eventualMap)
		if err == nil && len(sts) > 0 && (e.vnodes == 0 || len(sts) == e.vnodes) {
			done := true
			var keys, bits, tombs int64
			for _, s := range sts {
				keys += int64(s.Keys)
				bits += int64(s.ClockBitmapBits)
				tombs += int64(s.Tombstones)
				if s.NonStripped != 0 {
					done = false
				}
			}
			e.fin.KeysStored, e.fin.ClockBitmapBits, e.fin.Tombstones, e.fin.Vnodes = keys, bits, tombs, len(sts)
			e.fin.LastStatus = describeStatuses(sts)
			if done {
				e.fin.StrippedSeconds = time.Since(began).Seconds()
				break
			}
		}
		time.Sleep(eventualPoll)
	}
	if len(errs) > 0 {
		return fmt.Errorf("%s", strings.Join(errs, "; "))
	}
	return nil
}

func (e *eventualRun) history() []*EvOp {
	e.mu.Lock()
	defer e.mu.Unlock()
	out := append([]*EvOp(nil), e.ops...)
	sort.SliceStable(out, func(i, j int) bool { return out[i].Call < out[j].Call })
	return out
}

func (e *eventualRun) Summary() []*Op {
	var out []*Op
	for _, o := range e.history() {
		out = append(out, &Op{Client: o.Client, Kind: o.Kind, Key: o.Key, Call: o.Call, Return: o.Return, Status: o.Status, Err: o.Err, Final: o.Final})
	}
	return out
}

func (e *eventualRun) Check(dir string, timeout time.Duration) (string, []string, string) {
	ops := e.history()
	e.mu.Lock()
	problems := append([]string(nil), e.problems...)
	e.mu.Unlock()
	if err := writeJSONL(filepath.Join(dir, "eventual.history.jsonl"), ops); err != nil {
		problems = append(problems, err.Error())
	}
	if b, err := json.MarshalIndent(&e.fin, "", "  "); err == nil {
		os.WriteFile(filepath.Join(dir, "eventual.final.json"), b, 0o644)
	}
	more, sum := CheckEventual(ops, &e.fin)
	problems = append(problems, more...)
	return sum.Verdict(len(problems)), problems, sum.String()
}
