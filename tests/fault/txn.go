package main

// The transactional client (docs/transactions.md), as the reference client
// crates/amulet-client/src/transaction.rs does it:
//
//   - the read version is taken lazily at the first read, with
//     BeginTransaction through the session path (Execute, ordered on the
//     global stream; sent to the lowest partition), ending in it the
//     versions this client is done with;
//   - reads are ReadAt at a replica of the key's partition (header: the
//     client's map version and the partition; no session), retried at
//     another replica on UNAVAILABLE (read-version-elsewhere, behind) and
//     timeouts; a transaction reads its own buffered writes;
//   - writes are buffered; the commit is one Commit command in the session
//     (a resend keeps its sequence, so it applies at most once), sent to a
//     replica of the lowest partition it involves (the partitions of every
//     written key and every read key, amulet-dmap's smr_machine.rs);
//   - a transaction without writes sends no commit.
//
// A transaction's outcome is ok, fail (it certainly changed nothing: it
// never sent a commit, or the commit was answered conflict,
// read-version-too-old or refused) or info (the commit's outcome is
// unknown).

import (
	"context"
	"fmt"
	"sort"
	"time"

	"amuletfault/pb"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

// TxnLease is the read versions' lease (the node allows up to 60 s).
var TxnLease = 30 * time.Second

// TxnOutcome is what became of a transaction.
type TxnOutcome int

const (
	TxnOK   TxnOutcome = iota
	TxnFail            // certainly changed nothing
	TxnInfo            // the commit may or may not have applied
)

func (o TxnOutcome) String() string {
	return [...]string{"ok", "fail", "info"}[o]
}

// TxnError ends a transaction that did not commit.
type TxnError struct {
	Outcome TxnOutcome // TxnFail or TxnInfo
	Kind    string     // amulet-error of the answer, if any (conflict, read-version-too-old, ...)
	Stage   string     // begin, read, commit, doomed
	Msg     string
}

func (e *TxnError) Error() string {
	k := ""
	if e.Kind != "" {
		k = " [" + e.Kind + "]"
	}
	return fmt.Sprintf("%s %s%s: %s", e.Stage, e.Outcome, k, e.Msg)
}

// TxnClient is one sequential client's transactions: its session and the
// read versions it is done with (ended in its next begin).
type TxnClient struct {
	Conn *Conn
	Sess *Session
	done []uint64
	// CommitDoomed: send the commit even when a read said a key it covered
	// was written since the read version (the reference client gives up at
	// once); the cluster must then answer conflict. Lets the suite check the
	// cluster's vote, not only the client's early abort.
	CommitDoomed bool
	// Counters of the doomed commits sent and of those acknowledged (each
	// one a server bug: the read said the commit must conflict).
	DoomedSent, DoomedAcked int
}

func NewTxnClient(conn *Conn) *TxnClient {
	return &TxnClient{Conn: conn, Sess: conn.NewSession()}
}

// NewSession replaces the session (after a commit whose outcome is unknown:
// the old session may still apply it).
func (c *TxnClient) NewSession() { c.Sess = c.Conn.NewSession() }

type txnKey struct{ Map, Key string }

// Txn is one transaction.
type Txn struct {
	c       *TxnClient
	ctx     context.Context
	version uint64
	began   bool
	reads   []txnKey          // conflict ranges: single keys, in read order
	readSet map[txnKey]bool   // dedup
	writes  map[txnKey][]byte // nil value: removed (not used by the workloads)
	doomed  bool              // a read found a covered key written since the version
	// Stats of the reads: attempts retried, by the answer that made them
	// retry.
	ReadRetries map[string]int
	// Partitions the commit involved (0: no commit sent).
	Involved int
}

func (c *TxnClient) Begin(ctx context.Context) *Txn {
	return &Txn{c: c, ctx: ctx, readSet: map[txnKey]bool{}, writes: map[txnKey][]byte{}, ReadRetries: map[string]int{}}
}

// Version is the read version (0 before the first read).
func (t *Txn) Version() uint64 { return t.version }

func (t *Txn) begin() error {
	if t.began {
		return nil
	}
	end := t.c.done
	resp, err := t.c.Conn.Execute(t.ctx, t.c.Sess, nil, true, func(r *pb.MapRequest) {
		r.Op = &pb.MapRequest_BeginTransaction{BeginTransaction: &pb.BeginTransaction{
			LeaseMicros: uint64(TxnLease / time.Microsecond), EndReadVersions: end}}
	})
	if err != nil {
		// Nothing written yet: the transaction changed nothing whatever
		// became of the begin.
		return &TxnError{Outcome: TxnFail, Stage: "begin", Kind: opKind(err), Msg: err.Error()}
	}
	rv, ok := resp.Result.(*pb.MapResponse_ReadVersion)
	if !ok {
		return &TxnError{Outcome: TxnFail, Stage: "begin", Msg: fmt.Sprintf("a begin answered %v", resp)}
	}
	t.c.done = nil // ended by this begin (it was ordered)
	t.version = rv.ReadVersion
	t.began = true
	return nil
}

func opKind(err error) string {
	if oe, ok := err.(*OpError); ok {
		return oe.Kind
	}
	return ""
}

// Finish gives the read version back: the client ends it in its next begin.
func (t *Txn) finish() {
	if t.began {
		t.c.done = append(t.c.done, t.version)
		if len(t.c.done) > 64 {
			t.c.done = t.c.done[len(t.c.done)-64:] // the rest end by their lease
		}
		t.began = false
	}
}

// Get reads key of map at the read version (or this transaction's own
// write of it). ok is false for an absent key.
func (t *Txn) Get(mapName, key string) (value []byte, ok bool, err error) {
	k := txnKey{mapName, key}
	if v, w := t.writes[k]; w {
		return v, v != nil, nil
	}
	if err := t.begin(); err != nil {
		return nil, false, err
	}
	resp, since, err := t.c.Conn.ReadAt(t.ctx, t.version, []byte(key), t.ReadRetries, func(r *pb.MapRequest) {
		r.Op = &pb.MapRequest_Get{Get: &pb.Get{Map: mapName, Key: []byte(key)}}
	})
	if err != nil {
		return nil, false, err
	}
	if !t.readSet[k] {
		t.readSet[k] = true
		t.reads = append(t.reads, k)
	}
	if since {
		t.doomed = true
	}
	ov := resp.GetValue()
	if ov == nil {
		return nil, false, &TxnError{Outcome: TxnFail, Stage: "read", Msg: fmt.Sprintf("a get answered %v", resp)}
	}
	if ov.Value == nil {
		return nil, false, nil
	}
	return ov.Value, true, nil
}

// Put buffers a write.
func (t *Txn) Put(mapName, key string, value []byte) {
	if value == nil {
		value = []byte{}
	}
	t.writes[txnKey{mapName, key}] = value
}

// Abandon ends a transaction without committing.
func (t *Txn) Abandon() { t.finish() }

// Commit commits: nothing to send without writes; otherwise one Commit
// command in the session, at the lowest partition involved.
func (t *Txn) Commit() error {
	defer t.finish()
	if len(t.writes) == 0 {
		return nil
	}
	if t.doomed {
		if !t.c.CommitDoomed {
			return &TxnError{Outcome: TxnFail, Stage: "doomed", Kind: "written-since",
				Msg: "a key read was written since the read version (given up before the commit)"}
		}
		t.c.DoomedSent++
	}
	commit := &pb.Commit{}
	if t.began {
		v := t.version
		commit.ReadVersion = &v
	}
	for _, k := range t.reads {
		key := []byte(k.Key)
		commit.Reads = append(commit.Reads, &pb.ReadConflict{Map: k.Map, Range: &pb.KeyRange{
			From: &pb.KeyBound{Key: key, Inclusive: true}, To: &pb.KeyBound{Key: key, Inclusive: true}}})
	}
	var ws []txnKey
	for k := range t.writes {
		ws = append(ws, k)
	}
	sort.Slice(ws, func(i, j int) bool {
		if ws[i].Map != ws[j].Map {
			return ws[i].Map < ws[j].Map
		}
		return ws[i].Key < ws[j].Key
	})
	for _, k := range ws {
		commit.Writes = append(commit.Writes, &pb.TxnWrite{Map: k.Map, Key: []byte(k.Key), Value: t.writes[k]})
	}
	involved := append(append([]txnKey(nil), t.reads...), ws...)
	route := func(r *Routing) (uint32, error) {
		first := uint32(0)
		parts := map[uint32]bool{}
		for i, k := range involved {
			p := r.PartitionOf([]byte(k.Key))
			parts[p] = true
			if i == 0 || p < first {
				first = p
			}
		}
		t.Involved = len(parts)
		return first, nil
	}
	resp, err := t.c.Conn.ExecuteOn(t.ctx, t.c.Sess, route, func(r *pb.MapRequest) {
		r.Op = &pb.MapRequest_Commit{Commit: commit}
	})
	if err == nil {
		if _, ok := resp.Result.(*pb.MapResponse_Done); !ok {
			return &TxnError{Outcome: TxnInfo, Stage: "commit", Msg: fmt.Sprintf("a commit answered %v", resp)}
		}
		if t.doomed {
			t.c.DoomedAcked++
		}
		return nil
	}
	oe, _ := err.(*OpError)
	if oe == nil {
		return &TxnError{Outcome: TxnInfo, Stage: "commit", Msg: err.Error()}
	}
	switch {
	case oe.Kind == "conflict" || oe.Kind == "read-version-too-old":
		// The answer to this session's sequence: whichever attempt was
		// ordered first was executed and voted no; resends are answered
		// with that first answer.
		return &TxnError{Outcome: TxnFail, Stage: "commit", Kind: oe.Kind, Msg: oe.Msg}
	case !oe.MaybeApplied && (oe.Kind == "" || oe.Kind == "retryable") && isRefusal(oe.Code):
		return &TxnError{Outcome: TxnFail, Stage: "commit", Kind: oe.Code.String(), Msg: oe.Msg}
	}
	return &TxnError{Outcome: TxnInfo, Stage: "commit", Kind: oe.Kind, Msg: oe.Msg}
}

// isRefusal: a status a replica or node answers for a request it did not
// carry out (and no earlier attempt may have).
func isRefusal(c codes.Code) bool {
	switch c {
	case codes.InvalidArgument, codes.NotFound, codes.FailedPrecondition, codes.ResourceExhausted, codes.Aborted:
		return true
	}
	return false
}

// ReadAt runs one read at read version v at a replica of key's partition,
// retrying at another replica on UNAVAILABLE (read-version-elsewhere,
// behind), timeouts and stale maps until c.OpLimit. It returns the reply
// and written_since; a TxnError (fail: reads change nothing) otherwise.
func (c *Conn) ReadAt(ctx context.Context, v uint64, key []byte, retries map[string]int, build func(*pb.MapRequest)) (*pb.MapResponse, bool, error) {
	deadline := time.Now().Add(c.OpLimit)
	backoff := 10 * time.Millisecond
	failed := ""
	last := "no attempt"
	for {
		r, err := c.Routing(ctx)
		if err != nil {
			last = err.Error()
			if retries != nil {
				retries["routing"]++
			}
		} else {
			part := r.PartitionOf(key)
			addr := c.pickOther(r.replicaAddrs(part), failed)
			req := &pb.ReadAtRequest{ReadVersion: v, Request: &pb.MapRequest{
				Header: &pb.RequestHeader{MapVersion: r.Version, Partition: part}}}
			build(req.Request)
			actx, cancel := context.WithTimeout(ctx, c.Attempt)
			var hdr, trl metadata.MD
			resp, err := c.stub(addr).ReadAt(actx, req, grpc.Header(&hdr), grpc.Trailer(&trl))
			cancel()
			if err == nil {
				if resp.Response == nil {
					return nil, false, &TxnError{Outcome: TxnFail, Stage: "read", Msg: addr + ": ReadAt answered no response"}
				}
				return resp.Response, resp.WrittenSince, nil
			}
			failed = addr
			kind := errorKind(hdr, trl)
			st, _ := status.FromError(err)
			last = fmt.Sprintf("%s: %s %s: %s", addr, st.Code(), kind, st.Message())
			if retries != nil {
				why := kind
				if why == "" {
					why = st.Code().String()
				}
				retries[why]++
			}
			switch {
			case kind == "stale-map" || kind == "not-a-replica":
				c.Refresh(ctx)
			case kind == "read-version-elsewhere" || kind == "behind":
			case kind == "read-version-too-old" || kind == "conflict":
				return nil, false, &TxnError{Outcome: TxnFail, Stage: "read", Kind: kind, Msg: last}
			case st.Code() == codes.DeadlineExceeded || st.Code() == codes.Unavailable ||
				st.Code() == codes.Canceled || st.Code() == codes.Unknown:
			default:
				return nil, false, &TxnError{Outcome: TxnFail, Stage: "read", Kind: kind, Msg: last}
			}
		}
		if ctx.Err() != nil || time.Now().Add(backoff).After(deadline) {
			return nil, false, &TxnError{Outcome: TxnFail, Stage: "read", Msg: "gave up: " + last}
		}
		time.Sleep(backoff)
		backoff = min(backoff*2, 400*time.Millisecond)
	}
}
