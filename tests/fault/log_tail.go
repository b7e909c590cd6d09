package main

// The log workload's tailers: while the writers run, every log is
// followed by tailersPerLog goroutines through TailLog (a server stream
// from one replica of the log's partition, docs/logs.md), as the
// reference client does (crates/amulet-client/src/log.rs, Tail::next):
// from the log's first position at start, at a random replica, and when
// the stream breaks (the node was killed, stopped answering: no message
// for tailIdle; fell behind the acknowledged appends for tailLagging, as a
// node cut off from its peers does; is catching up; no longer holds the
// log: refetch the map), again at another random replica from the
// position after the last entry received. A tailer trimmed past
// (OUT_OF_RANGE "trimmed below position N") records a jump and goes on
// from N. Every message, connection, break and jump is one line of
// log.tails.jsonl; log_tail_check.go checks them against the workload's
// history and the final read.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand"
	"regexp"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"amuletfault/pb"
)

const (
	tailersPerLog = 2
	// A stream without any message this long is dead (the node sends a
	// heartbeat about every second): the reference client's TAIL_IDLE.
	tailIdle = 5 * time.Second
	// A stream whose position has not moved for this long while an
	// append past it was acknowledged at least this long ago is served by
	// a replica that is not executing (cut off from its peers): leave it.
	tailLagging = 5 * time.Second
	// The second tailer of a log starts this much later (at most).
	tailLateStart = 6 * time.Second
	// Pauses between reconnections.
	tailBackoffMin = 10 * time.Millisecond
	tailBackoffMax = 400 * time.Millisecond
	// Besides, a tailer leaves its stream of its own accord every
	// tailRotateMin to tailRotateMax and resumes at another replica (every
	// resumption is one more chance for a server to resume wrongly, also
	// in the families that do not break streams); one time in
	// tailAwayOneIn it stays away tailAway first, as a consumer that went
	// away does, and usually finds its position trimmed.
	tailRotateMin = 2 * time.Second
	tailRotateMax = 6 * time.Second
	tailAwayOneIn = 4
	tailAway      = 1500 * time.Millisecond
)

// TailEvent is one line of log.tails.jsonl: what one tailer did or got.
//
//	start     the tailer begins at From (the log's first position then, or 0)
//	connect   stream number Conn opened at Node from From
//	entries   a message of stream Conn: Entries at From, From+1, ...; First
//	          and End are the log's bounds at that replica
//	heartbeat a message without entries (From: the stream's position)
//	break     stream Conn ended: Reason (idle, lagging, unavailable,
//	          behind, not-a-replica, past-end, not-found, ended, error;
//	          rotate and away: the tailer left of its own accord) and Err
//	jump      OUT_OF_RANGE: the tailer at From was trimmed past; it goes on
//	          from To, the first position the replica reported
//	stop      the workload stopped; From is the tailer's next position
type TailEvent struct {
	Tailer  int      `json:"tailer"`
	Log     string   `json:"log"`
	Event   string   `json:"event"`
	At      int64    `json:"at"` // ns since the run began
	Conn    int      `json:"conn,omitempty"`
	Node    string   `json:"node,omitempty"`
	From    uint64   `json:"from"`
	To      *uint64  `json:"to,omitempty"`
	Entries []string `json:"entries,omitempty"`
	First   *uint64  `json:"first,omitempty"`
	End     *uint64  `json:"end,omitempty"`
	Reason  string   `json:"reason,omitempty"`
	Err     string   `json:"error,omitempty"`
}

// ackedEnds is, per log, the ends proved by acknowledged operations, in
// the order they grew, with the time each was first known (for the
// lagging test).
type ackedEnds struct {
	mu   sync.Mutex
	ends map[string][]endAt
}

type endAt struct {
	end uint64
	at  time.Time
}

func (a *ackedEnds) note(log string, end uint64) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.ends == nil {
		a.ends = map[string][]endAt{}
	}
	es := a.ends[log]
	if len(es) == 0 || end > es[len(es)-1].end {
		a.ends[log] = append(es, endAt{end: end, at: time.Now()})
	}
}

// pastSince is when an acknowledged operation first proved the log to
// reach past position next (zero time: none did).
func (a *ackedEnds) pastSince(log string, next uint64) time.Time {
	a.mu.Lock()
	defer a.mu.Unlock()
	es := a.ends[log]
	i := sort.Search(len(es), func(i int) bool { return es[i].end > next })
	if i == len(es) {
		return time.Time{}
	}
	return es[i].at
}

func (l *logRun) recordTail(e *TailEvent) {
	e.At = l.now()
	l.tailMu.Lock()
	l.tails = append(l.tails, e)
	l.tailMu.Unlock()
}

// tailHistory is every tailer's events, tailer by tailer, each in the
// order it recorded them.
func (l *logRun) tailHistory() []*TailEvent {
	l.tailMu.Lock()
	out := append([]*TailEvent(nil), l.tails...)
	l.tailMu.Unlock()
	sort.SliceStable(out, func(i, j int) bool { return out[i].Tailer < out[j].Tailer })
	return out
}

// Background runs the tailers until stop closes (main.go runs it next to
// the workers).
func (l *logRun) Background(stop <-chan struct{}, conn *Conn, seed int64) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-stop:
			cancel()
		case <-ctx.Done():
		}
	}()
	var wg sync.WaitGroup
	id := 0
	for _, name := range l.names {
		for k := 0; k < tailersPerLog; k++ {
			rng := rand.New(rand.NewSource(seed + int64(id)*131))
			delay := time.Duration(0)
			if k > 0 {
				delay = time.Second + time.Duration(rng.Int63n(int64(tailLateStart-time.Second)))
			}
			// One tailer of each log takes the whole stream in big
			// messages, the other a few entries per message.
			maxBytes := uint32(0)
			if k%2 == 1 {
				maxBytes = 48
			}
			t := &tailer{l: l, conn: conn, id: id, log: name, rng: rng, maxBytes: maxBytes}
			wg.Add(1)
			go func() {
				defer wg.Done()
				t.run(ctx, delay)
			}()
			id++
		}
	}
	wg.Wait()
}

type tailer struct {
	l        *logRun
	conn     *Conn
	id       int
	log      string
	rng      *rand.Rand
	maxBytes uint32
	next     uint64
	conns    int
}

func (t *tailer) rec(e *TailEvent) {
	e.Tailer, e.Log = t.id, t.log
	t.l.recordTail(e)
}

// start is the log's first position now (a bounds operation, recorded in
// the workload's history), or 0 if that fails.
func (t *tailer) start(ctx context.Context) uint64 {
	o := &LogOp{Client: t.l.newClient(), Kind: "bounds", Log: t.log, Call: t.l.now()}
	if err := doLogOp(ctx, t.conn, t.conn.NewSession(), o); err != nil {
		o.Status, o.Return, o.Err = "fail", -1, err.Error()
		t.l.record(o)
		return 0
	}
	o.Status, o.Return = "ok", t.l.now()
	t.l.record(o)
	if o.OutOfRange != "" || o.First == nil {
		return 0
	}
	return *o.First
}

func (t *tailer) run(ctx context.Context, delay time.Duration) {
	sleepCtx(ctx, delay)
	if ctx.Err() != nil {
		return
	}
	t.next = t.start(ctx)
	t.rec(&TailEvent{Event: "start", From: t.next})
	failed := ""
	backoff := tailBackoffMin
	for ctx.Err() == nil {
		r, err := t.conn.Routing(ctx)
		if err != nil {
			sleepCtx(ctx, backoff)
			backoff = min(2*backoff, tailBackoffMax)
			continue
		}
		addr := t.conn.pickOther(r.replicaAddrs(r.PartitionOf([]byte(t.log))), failed)
		t.conns++
		t.rec(&TailEvent{Event: "connect", Conn: t.conns, Node: addr, From: t.next})
		got, b := t.follow(ctx, addr, r.Version)
		if got {
			backoff = tailBackoffMin
		}
		if b.reason == "stopped" {
			break
		}
		failed = addr
		if b.trimmedTo != nil {
			// Trimmed past: go on from the first position held.
			to := *b.trimmedTo
			t.rec(&TailEvent{Event: "jump", Conn: t.conns, From: t.next, To: &to, Err: b.msg})
			if to > t.next {
				t.next = to
				continue
			}
			// A refusal that does not move the tailer forward is the
			// server's mistake (the checker reports the jump); reconnect
			// after a pause like any break.
		} else {
			t.rec(&TailEvent{Event: "break", Conn: t.conns, From: t.next, Reason: b.reason, Err: b.msg})
		}
		switch b.reason {
		case "rotate":
			continue
		case "away":
			sleepCtx(ctx, tailAway)
			continue
		case "not-a-replica":
			t.conn.Refresh(ctx)
		case "not-found":
			t.l.problem("tailer %d: TailLog(%s, from %d) at %s answered NOT_FOUND (the log exists): %s", t.id, t.log, t.next, addr, b.msg)
		case "invalid-argument":
			t.l.problem("tailer %d: TailLog(%s, from %d) at %s answered INVALID_ARGUMENT: %s", t.id, t.log, t.next, addr, b.msg)
			backoff = time.Second
		}
		sleepCtx(ctx, backoff)
		backoff = min(2*backoff, tailBackoffMax)
	}
	t.rec(&TailEvent{Event: "stop", From: t.next})
}

type tailBreak struct {
	reason    string
	msg       string
	trimmedTo *uint64
}

var trimmedBelow = regexp.MustCompile(`trimmed below position (\d+)`)

// follow opens a stream at addr from t.next (routed by map version
// version: a replica with an older map waits for it) and records its
// messages until it breaks; got says whether it delivered an entry.
func (t *tailer) follow(ctx context.Context, addr string, version uint64) (bool, tailBreak) {
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var why atomic.Value // "idle" or "lagging" when the tailer cut the stream
	idle := time.AfterFunc(tailIdle, func() { why.CompareAndSwap(nil, "idle"); cancel() })
	defer idle.Stop()
	got := false
	stream, err := t.conn.stub(addr).TailLog(sctx, &pb.TailLogRequest{Log: t.log, From: t.next, MaxBytes: t.maxBytes, MapVersion: version})
	moved := time.Now()
	rotate := moved.Add(tailRotateMin + time.Duration(t.rng.Int63n(int64(tailRotateMax-tailRotateMin))))
	for err == nil {
		var m *pb.LogEntries
		m, err = stream.Recv()
		if err != nil {
			break
		}
		idle.Reset(tailIdle)
		e := &TailEvent{Event: "heartbeat", Conn: t.conns, From: m.From, First: ptr(m.First), End: ptr(m.End)}
		if len(m.Entries) > 0 {
			e.Event = "entries"
			for _, v := range m.Entries {
				e.Entries = append(e.Entries, string(v))
			}
		}
		t.rec(e)
		// The checker judges a message that is not at the tailer's
		// position (a gap or a repeat); the tailer goes on after it.
		t.next = m.From + uint64(len(m.Entries))
		if len(m.Entries) > 0 {
			got = true
			moved = time.Now()
		}
		if since := t.l.acked.pastSince(t.log, t.next); !since.IsZero() &&
			time.Since(since) > tailLagging && time.Since(moved) > tailLagging {
			why.CompareAndSwap(nil, "lagging")
			return got, tailBreak{reason: "lagging", msg: fmt.Sprintf(
				"at %d for %.1fs, this replica's end %d, an append past it acknowledged %.1fs ago",
				t.next, time.Since(moved).Seconds(), m.End, time.Since(since).Seconds())}
		}
		if time.Now().After(rotate) {
			if t.rng.Intn(tailAwayOneIn) == 0 {
				return got, tailBreak{reason: "away", msg: fmt.Sprintf("leaves for %s", tailAway)}
			}
			return got, tailBreak{reason: "rotate"}
		}
	}
	if ctx.Err() != nil {
		return got, tailBreak{reason: "stopped"}
	}
	if w, ok := why.Load().(string); ok {
		return got, tailBreak{reason: w, msg: fmt.Sprintf("no message for %s", tailIdle)}
	}
	if errors.Is(err, io.EOF) {
		return got, tailBreak{reason: "ended", msg: "the stream ended without a status"}
	}
	kind := ""
	if stream != nil {
		kind = errorKind(nil, stream.Trailer())
	}
	st, _ := status.FromError(err)
	b := tailBreak{reason: "error", msg: fmt.Sprintf("%s: %s %s: %s", addr, st.Code(), kind, st.Message())}
	switch {
	case st.Code() == codes.OutOfRange:
		b.reason = "past-end"
		if m := trimmedBelow.FindStringSubmatch(st.Message()); m != nil {
			if v, perr := strconv.ParseUint(m[1], 10, 64); perr == nil {
				b.reason, b.trimmedTo = "trimmed", &v
			}
		}
	case kind == "not-a-replica":
		b.reason = "not-a-replica"
	case kind == "behind":
		b.reason = "behind"
	case st.Code() == codes.NotFound:
		b.reason = "not-found"
	case st.Code() == codes.InvalidArgument:
		b.reason = "invalid-argument"
	case st.Code() == codes.Unavailable, st.Code() == codes.Canceled, st.Code() == codes.DeadlineExceeded:
		b.reason = "unavailable"
	}
	return got, b
}
