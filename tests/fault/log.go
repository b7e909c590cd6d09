package main

// The `log` workload (DLog, docs/logs.md): two named logs, created at
// set-up and chosen to live in different partitions, and sequential
// clients (each with its own session) that append unique values
// ("c<client>-<n>"), multi-append over both logs (one log sometimes named
// twice), read a few entries from recent positions, ask for the bounds,
// and now and then trim (which keeps the logs short). Every operation is
// one line of log.history.jsonl; the history is checked with porcupine
// against a model of the logs (each a first position and the entries
// held), and after the last heal a fresh client reads both logs whole from
// their first position: every acknowledged append that was not trimmed must
// be at the position it was given, positions dense, no value twice.
// Meanwhile two tailers per log follow it with TailLog, reconnecting at
// other replicas as streams break (log_tail.go; log.tails.jsonl, checked
// by log_tail_check.go).
//
// Routing: a log L lives in the partition owning the key "L" of the hash
// keyspace L, so Append, ReadLog, TrimLog and LogBounds go where a
// single-key operation on key L goes; a MultiAppend goes to a replica of
// the lowest partition among those of its logs (the cluster orders it on
// the global stream); CreateLog, like CreateMap, to the lowest partition.

import (
	"context"
	"errors"
	"fmt"
	"math/rand"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc/codes"

	"amuletfault/pb"
)

const (
	logCount        = 2  // logs of the workload (in different partitions when the ring allows)
	logReadMax      = 8  // entries a workload read asks for at most
	logRecent       = 12 // workload reads start at most this far below the end the client knows
	logKeepMin      = 8  // a trim keeps at least this many of the entries the client knows of
	logHeldMax      = 48 // a client that knows of more entries held trims at once
	logFinalPage    = 200
	logFinalPagesMx = 10_000
)

// LogEntryIn is one entry of a multi-append.
type LogEntryIn struct {
	Log   string `json:"log"`
	Value string `json:"value"`
}

// LogOp is one operation of a log history, one JSON line of
// log.history.jsonl.
type LogOp struct {
	Client int    `json:"client"`
	Kind   string `json:"op"`            // append | multi | read | bounds | trim
	Log    string `json:"log,omitempty"` // append, read, bounds, trim
	Value  string `json:"value,omitempty"`
	// multi: the entries, in the order sent.
	Entries []LogEntryIn `json:"entries,omitempty"`
	From    uint64       `json:"from,omitempty"`  // read
	Max     uint32       `json:"max,omitempty"`   // read
	Below   uint64       `json:"below,omitempty"` // trim
	Call    int64        `json:"call"`            // ns since the run started
	Return  int64        `json:"return"`          // ns; -1: never returned
	Status  string       `json:"status"`          // ok | unknown (may or may not have applied) | fail (did not apply, or a read that failed)
	// Results (status ok). An OUT_OF_RANGE answer is a result: OutOfRange
	// is "trimmed" (a read below the first position; At: that first
	// position) or "past-end" (a read or trim past the end; At: the end),
	// and nothing else is set.
	Position   *uint64  `json:"position,omitempty"`  // append
	Positions  []uint64 `json:"positions,omitempty"` // multi
	Read       []string `json:"read,omitempty"`      // read: the entries from From
	First      *uint64  `json:"first,omitempty"`     // read, bounds, trim (after it)
	End        *uint64  `json:"end,omitempty"`       // read, bounds, trim
	OutOfRange string   `json:"out_of_range,omitempty"`
	At         *uint64  `json:"at,omitempty"`
	Err        string   `json:"error,omitempty"`
	Final      bool     `json:"final,omitempty"` // a read of the final check
}

func (o *LogOp) isWrite() bool { return o.Kind == "append" || o.Kind == "multi" || o.Kind == "trim" }

// logs is every log the operation names, in order (a multi-append's once each).
func (o *LogOp) logs() []string {
	if o.Kind != "multi" {
		return []string{o.Log}
	}
	var out []string
	for _, e := range o.Entries {
		if !containsString(out, e.Log) {
			out = append(out, e.Log)
		}
	}
	return out
}

func containsString(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

func u64(p *uint64) string {
	if p == nil {
		return "?"
	}
	return strconv.FormatUint(*p, 10)
}

func (o *LogOp) String() string {
	var call string
	switch o.Kind {
	case "append":
		call = fmt.Sprintf("append(%s, %s)", o.Log, o.Value)
	case "multi":
		var parts []string
		for _, e := range o.Entries {
			parts = append(parts, e.Log+":"+e.Value)
		}
		call = "multiAppend(" + strings.Join(parts, ", ") + ")"
	case "read":
		call = fmt.Sprintf("read(%s, from %d, max %d)", o.Log, o.From, o.Max)
	case "bounds":
		call = fmt.Sprintf("bounds(%s)", o.Log)
	case "trim":
		call = fmt.Sprintf("trim(%s, below %d)", o.Log, o.Below)
	default:
		call = o.Kind + "(?)"
	}
	if o.Status != "ok" {
		return call + " -> ?"
	}
	if o.OutOfRange != "" {
		return fmt.Sprintf("%s -> OUT_OF_RANGE %s (%s)", call, o.OutOfRange, u64(o.At))
	}
	switch o.Kind {
	case "append":
		return call + " -> " + u64(o.Position)
	case "multi":
		return fmt.Sprintf("%s -> %v", call, o.Positions)
	case "read":
		return fmt.Sprintf("%s -> [%s] first %s end %s", call, strings.Join(o.Read, " "), u64(o.First), u64(o.End))
	default:
		return fmt.Sprintf("%s -> first %s end %s", call, u64(o.First), u64(o.End))
	}
}

func ptr(v uint64) *uint64 { return &v }

// ---- the workload --------------------------------------------------------------

type logRun struct {
	names []string
	start time.Time

	mu       sync.Mutex
	ops      []*LogOp
	clients  int
	problems []string

	// The tailers (log_tail.go): their events, and the ends acknowledged
	// operations proved (a tailer behind them for long leaves its replica).
	tailMu sync.Mutex
	tails  []*TailEvent
	acked  ackedEnds
	// The tailers' check, for the scenario's checks and details.
	tailVerdict, tailDetails string
}

// newLogRun picks two log names in different partitions and creates the
// logs (retrying for up to 60 s; one that exists already is fine).
func newLogRun(conn *Conn, logf func(string, ...any), seed int64) (TxnWorkload, error) {
	l := &logRun{start: time.Now()}
	r, err := conn.Routing(context.Background())
	if err != nil {
		return nil, err
	}
	used := map[uint32]bool{}
	var spare []string
	for i := 0; len(l.names) < logCount && i < 1000; i++ {
		name := "dlog" + strconv.Itoa(i)
		p := r.PartitionOf([]byte(name))
		if used[p] {
			spare = append(spare, name)
			continue
		}
		used[p] = true
		l.names = append(l.names, name)
	}
	for len(l.names) < logCount && len(spare) > 0 {
		l.names, spare = append(l.names, spare[0]), spare[1:]
	}
	var parts []uint32
	for _, n := range l.names {
		parts = append(parts, r.PartitionOf([]byte(n)))
	}
	logf("log: logs %v in partitions %v", l.names, parts)
	for _, name := range l.names {
		if err := waitUntil(60*time.Second, func() error { return conn.CreateLog(context.Background(), name) }); err != nil {
			return nil, fmt.Errorf("create log %s: %v", name, err)
		}
	}
	return l, nil
}

// CreateLog creates a log; it exists already is fine.
func (c *Conn) CreateLog(ctx context.Context, name string) error {
	s := c.NewSession()
	_, err := c.Execute(ctx, s, nil, true, func(r *pb.MapRequest) {
		r.Op = &pb.MapRequest_CreateLog{CreateLog: &pb.CreateLog{Log: name}}
	})
	if err != nil && !isCode(err, "AlreadyExists") {
		return err
	}
	c.Refresh(ctx)
	return nil
}

func (l *logRun) now() int64 { return int64(time.Since(l.start)) }

func (l *logRun) newClient() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.clients++
	return l.clients - 1
}

func (l *logRun) record(o *LogOp) {
	l.mu.Lock()
	l.ops = append(l.ops, o)
	l.mu.Unlock()
}

func (l *logRun) problem(format string, args ...any) {
	l.mu.Lock()
	l.problems = append(l.problems, fmt.Sprintf(format, args...))
	l.mu.Unlock()
}

// logView is what one client knows of a log: bounds it has seen (they only
// grow), and its last read and bounds answers (for the injected bug).
type logView struct {
	first, end uint64
	lastRead   *LogOp
	lastBounds *LogOp
}

func (v *logView) saw(first, end *uint64) {
	if first != nil && *first > v.first {
		v.first = *first
	}
	if end != nil && *end > v.end {
		v.end = *end
	}
	if v.end < v.first {
		v.end = v.first
	}
}

var outOfRangeAt = regexp.MustCompile(`trimmed below position (\d+)|next append: (\d+)`)

// doLogOp sends o in session s and fills in its result; an OUT_OF_RANGE
// answer is a result (nil error).
func doLogOp(ctx context.Context, conn *Conn, s *Session, o *LogOp) error {
	var resp *pb.MapResponse
	var err error
	one := func(build func(*pb.MapRequest)) {
		resp, err = conn.Execute(ctx, s, []byte(o.Log), false, build)
	}
	switch o.Kind {
	case "append":
		one(func(r *pb.MapRequest) {
			r.Op = &pb.MapRequest_Append{Append: &pb.Append{Log: o.Log, Value: []byte(o.Value)}}
		})
	case "read":
		one(func(r *pb.MapRequest) {
			r.Op = &pb.MapRequest_ReadLog{ReadLog: &pb.ReadLog{Log: o.Log, From: o.From, MaxEntries: o.Max}}
		})
	case "bounds":
		one(func(r *pb.MapRequest) { r.Op = &pb.MapRequest_LogBounds{LogBounds: &pb.LogBounds{Log: o.Log}} })
	case "trim":
		one(func(r *pb.MapRequest) {
			r.Op = &pb.MapRequest_TrimLog{TrimLog: &pb.TrimLog{Log: o.Log, Below: o.Below}}
		})
	case "multi":
		var entries []*pb.LogEntry
		for _, e := range o.Entries {
			entries = append(entries, &pb.LogEntry{Log: e.Log, Value: []byte(e.Value)})
		}
		resp, err = conn.ExecuteOn(ctx, s, func(r *Routing) (uint32, error) {
			first := true
			var lowest uint32
			for _, e := range o.Entries {
				if p := r.PartitionOf([]byte(e.Log)); first || p < lowest {
					lowest, first = p, false
				}
			}
			return lowest, nil
		}, func(r *pb.MapRequest) {
			r.Op = &pb.MapRequest_MultiAppend{MultiAppend: &pb.MultiAppend{Entries: entries}}
		})
	default:
		return fmt.Errorf("unknown log op %q", o.Kind)
	}
	if err != nil {
		var oe *OpError
		if errors.As(err, &oe) && oe.Code == codes.OutOfRange && oe.Kind == "" {
			o.OutOfRange = "past-end"
			if strings.Contains(oe.Msg, "trimmed") {
				o.OutOfRange = "trimmed"
			}
			if m := outOfRangeAt.FindStringSubmatch(oe.Msg); m != nil {
				n := m[1] + m[2]
				if v, perr := strconv.ParseUint(n, 10, 64); perr == nil {
					o.At = &v
				}
			}
			return nil
		}
		return err
	}
	bad := func() error { return &OpError{Msg: fmt.Sprintf("%s: unexpected reply %v", o.Kind, resp)} }
	switch o.Kind {
	case "append":
		p, ok := resp.Result.(*pb.MapResponse_Position)
		if !ok {
			return bad()
		}
		o.Position = ptr(p.Position)
	case "multi":
		ps := resp.GetPositions()
		if ps == nil || len(ps.Positions) != len(o.Entries) {
			return bad()
		}
		o.Positions = ps.Positions
	case "read":
		es := resp.GetLogEntries()
		if es == nil {
			return bad()
		}
		if es.From != o.From {
			return &OpError{Msg: fmt.Sprintf("read from %d answered entries from %d", o.From, es.From)}
		}
		for _, e := range es.Entries {
			o.Read = append(o.Read, string(e))
		}
		o.First, o.End = ptr(es.First), ptr(es.End)
	case "bounds", "trim":
		b := resp.GetLogBounds()
		if b == nil {
			return bad()
		}
		o.First, o.End = ptr(b.First), ptr(b.End)
	}
	return nil
}

// gen draws the next operation of a client from what it knows.
func (l *logRun) gen(rng *rand.Rand, client int, n *int, views map[string]*logView) *LogOp {
	name := l.names[rng.Intn(len(l.names))]
	v := views[name]
	kind := pickKind(rng, map[string]int{"append": 35, "multi": 12, "read": 33, "bounds": 10, "trim": 10})
	if v.end-v.first > logHeldMax {
		kind = "trim" // keep the logs (and the model's states) short
	}
	value := func() string {
		*n++
		return fmt.Sprintf("c%d-%d", client, *n)
	}
	o := &LogOp{Client: client, Kind: kind, Log: name}
	switch kind {
	case "append":
		o.Value = value()
	case "multi":
		o.Log = ""
		var logs []string
		for _, i := range rng.Perm(len(l.names)) {
			logs = append(logs, l.names[i])
		}
		if rng.Intn(4) == 0 {
			// One log twice: it gets consecutive positions.
			logs = append([]string{logs[0]}, logs...)
		}
		for _, name := range logs {
			o.Entries = append(o.Entries, LogEntryIn{Log: name, Value: value()})
		}
	case "read":
		o.Max = uint32(1 + rng.Intn(logReadMax))
		switch x := rng.Intn(20); {
		case x == 0 && v.first > 0:
			o.From = v.first - 1 - uint64(rng.Intn(int(min(v.first, 4)))) // trimmed
		case x == 1:
			o.From = v.end + 1 + uint64(rng.Intn(4)) // past the end (unless it grew)
		default:
			lo := v.first
			if v.end > lo+logRecent {
				lo = v.end - logRecent
			}
			o.From = lo + uint64(rng.Int63n(int64(v.end-lo+1)))
		}
	case "trim":
		held := v.end - v.first
		switch {
		case held > logKeepMin+4:
			o.Below = v.end - logKeepMin - uint64(rng.Intn(int(min(held-logKeepMin, 16))))
		case rng.Intn(5) == 0:
			o.Below = v.end + 100 // past the end: OUT_OF_RANGE (unless it grew that much)
		default:
			o.Below = v.first / 2 // at or below the first position: changes nothing
		}
	}
	return o
}

func (l *logRun) Worker(stop <-chan struct{}, conn *Conn, seed int64) {
	rng := rand.New(rand.NewSource(seed))
	client := l.newClient()
	sess := conn.NewSession()
	views := map[string]*logView{}
	for _, name := range l.names {
		views[name] = &logView{}
	}
	n := 0
	for {
		select {
		case <-stop:
			return
		default:
		}
		o := l.gen(rng, client, &n, views)
		o.Call = l.now()
		var err error
		v := views[o.Log]
		if InjectBug == "stale-reads" && v != nil && rng.Intn(4) == 0 &&
			(o.Kind == "read" && v.lastRead != nil || o.Kind == "bounds" && v.lastBounds != nil) {
			// The injected bug: answer from this client's own earlier view
			// (a replica serving local state without ordering the read),
			// after a pause as long as a real read.
			time.Sleep(5 * time.Millisecond)
			old := v.lastRead
			if o.Kind == "bounds" {
				old = v.lastBounds
			}
			o.From, o.Max = old.From, old.Max
			o.Read, o.First, o.End, o.OutOfRange, o.At = old.Read, old.First, old.End, old.OutOfRange, old.At
		} else {
			err = doLogOp(context.Background(), conn, sess, o)
		}
		if err == nil {
			o.Status = "ok"
			o.Return = l.now()
			switch o.Kind {
			case "append":
				if o.Position != nil {
					v.saw(nil, ptr(*o.Position+1))
					l.acked.note(o.Log, *o.Position+1)
				}
			case "multi":
				for i, e := range o.Entries {
					views[e.Log].saw(nil, ptr(o.Positions[i]+1))
					l.acked.note(e.Log, o.Positions[i]+1)
				}
			default:
				v.saw(o.First, o.End)
				switch o.OutOfRange {
				case "trimmed":
					v.saw(o.At, nil)
				case "past-end":
					v.saw(nil, o.At)
				}
				if o.Kind == "read" && o.OutOfRange == "" {
					v.lastRead = o
				}
				if o.Kind == "bounds" {
					v.lastBounds = o
				}
			}
		} else {
			o.Err = err.Error()
			o.Return = -1
			var oe *OpError
			isOp := errors.As(err, &oe)
			if isOp && oe.Code == codes.NotFound {
				l.problem("client %d: %s answered NOT_FOUND (the log exists): %s", client, o.String(), oe.Msg)
			}
			if o.isWrite() && (!isOp || oe.MaybeApplied) {
				o.Status = "unknown"
			} else {
				o.Status = "fail"
			}
			client = l.newClient()
			sess = conn.NewSession()
		}
		l.record(o)
		time.Sleep(time.Duration(rng.Int63n(int64(10 * time.Millisecond))))
	}
}

// Final reads each log whole from its first position with a fresh client
// (pages of logFinalPage entries; up to 3 tries per log).
func (l *logRun) Final(conn *Conn) error {
	var errs []string
	for _, name := range l.names {
		var last error
		for attempt := 0; attempt < 3; attempt++ {
			if last = l.readWhole(conn, name); last == nil {
				break
			}
			time.Sleep(time.Second)
		}
		if last != nil {
			errs = append(errs, fmt.Sprintf("log %s: %v", name, last))
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("%s", strings.Join(errs, "; "))
	}
	return nil
}

func (l *logRun) readWhole(conn *Conn, name string) error {
	client := l.newClient()
	sess := conn.NewSession()
	b := &LogOp{Client: client, Kind: "bounds", Log: name, Final: true, Call: l.now()}
	if err := doLogOp(context.Background(), conn, sess, b); err != nil {
		return fmt.Errorf("bounds: %v", err)
	}
	b.Status, b.Return = "ok", l.now()
	l.record(b)
	var pages []*LogOp
	from := *b.First
	for i := 0; i < logFinalPagesMx; i++ {
		o := &LogOp{Client: client, Kind: "read", Log: name, From: from, Max: logFinalPage, Final: true, Call: l.now()}
		if err := doLogOp(context.Background(), conn, sess, o); err != nil {
			return fmt.Errorf("read from %d: %v", from, err)
		}
		o.Status, o.Return = "ok", l.now()
		pages = append(pages, o)
		if o.OutOfRange != "" || len(o.Read) == 0 || o.End == nil || from+uint64(len(o.Read)) >= *o.End {
			break
		}
		from += uint64(len(o.Read))
	}
	for _, p := range pages {
		l.record(p)
	}
	return nil
}

func (l *logRun) history() []*LogOp {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := append([]*LogOp(nil), l.ops...)
	sort.SliceStable(out, func(i, j int) bool { return out[i].Call < out[j].Call })
	return out
}

func (l *logRun) Summary() []*Op {
	var out []*Op
	for _, o := range l.history() {
		out = append(out, &Op{Client: o.Client, Kind: o.Kind, Call: o.Call, Return: o.Return, Status: o.Status, Err: o.Err, Final: o.Final})
	}
	return out
}

func (l *logRun) Check(dir string, timeout time.Duration) (string, []string, string) {
	ops := l.history()
	l.mu.Lock()
	problems := append([]string(nil), l.problems...)
	l.mu.Unlock()
	path := filepath.Join(dir, "log.history.jsonl")
	if err := WriteLogHistory(path, ops); err != nil {
		problems = append(problems, err.Error())
	}
	verdict, more := CheckLogHistory(ops, timeout, filepath.Join(dir, "log.porcupine.html"))
	problems = append(problems, more...)
	// The tailers (log_tail.go, log_tail_check.go).
	tails := l.tailHistory()
	if err := writeJSONL(filepath.Join(dir, "log.tails.jsonl"), tails); err != nil {
		problems = append(problems, err.Error())
	}
	tailProblems, sum := CheckTails(ops, tails)
	for _, p := range tailProblems {
		problems = append(problems, "tail: "+p)
	}
	l.tailVerdict, l.tailDetails = sum.Verdict(len(tailProblems)), sum.String()
	return verdict, problems, logDetails(ops)
}

// Extra is the tailers' verdict and details (main.go adds them to the
// scenario's checks and details as "log-tail").
func (l *logRun) Extra() (map[string]string, map[string]string) {
	return map[string]string{"log-tail": l.tailVerdict}, map[string]string{"log-tail": l.tailDetails}
}

// logDetails counts a log history's operations by kind and outcome, and
// says what the final reads found.
func logDetails(ops []*LogOp) string {
	type count struct{ ok, unknown, fail, oor int }
	counts := map[string]*count{}
	finals := map[string][2]uint64{}
	for _, o := range ops {
		if o.Final {
			if o.Kind == "bounds" && o.Status == "ok" && o.First != nil && o.End != nil {
				finals[o.Log] = [2]uint64{*o.First, *o.End}
			}
			continue
		}
		c := counts[o.Kind]
		if c == nil {
			c = &count{}
			counts[o.Kind] = c
		}
		switch {
		case o.Status == "ok" && o.OutOfRange != "":
			c.oor++
		case o.Status == "ok":
			c.ok++
		case o.Status == "unknown":
			c.unknown++
		default:
			c.fail++
		}
	}
	var parts []string
	for _, k := range []string{"append", "multi", "read", "bounds", "trim"} {
		c := counts[k]
		if c == nil {
			continue
		}
		s := fmt.Sprintf("%s ok %d", k, c.ok)
		if c.oor > 0 {
			s += fmt.Sprintf(" out-of-range %d", c.oor)
		}
		s += fmt.Sprintf(" unknown %d fail %d", c.unknown, c.fail)
		parts = append(parts, s)
	}
	var names []string
	for k := range finals {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		parts = append(parts, fmt.Sprintf("final %s [%d, %d)", k, finals[k][0], finals[k][1]))
	}
	return strings.Join(parts, "; ")
}
