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
//
// Routing: a log L lives in the partition owning the key "L" of the hash
// keyspace L, so Append, ReadLog, TrimLog and LogBounds go where a
// single-key operation on key L goes; a MultiAppend goes to a replica of
// the lowest partition among those of its logs (the cluster orders it on
// the global stream); CreateLog, like CreateMap, to the lowest partition.

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/anishathalye/porcupine"
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

// ---- the model ---------------------------------------------------------------

// logState is one log: entries at first, first+1, ... Never changed in
// place (porcupine keeps old states): a step copies what it changes.
type logState struct {
	first   uint64
	entries []string
}

func (l logState) end() uint64 { return l.first + uint64(len(l.entries)) }

// logsState is every log of the history, by name.
type logsState map[string]logState

func (s logsState) with(name string, l logState) logsState {
	n := make(logsState, len(s)+1)
	for k, v := range s {
		n[k] = v
	}
	n[name] = l
	return n
}

func (l logState) appended(v string) logState {
	es := make([]string, len(l.entries)+1)
	copy(es, l.entries)
	es[len(l.entries)] = v
	return logState{first: l.first, entries: es}
}

func sameStrings(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// logStep is the sequential specification (docs/logs.md, the comments of
// proto/amulet/v1/amulet.proto). An operation whose outcome is unknown
// takes effect at its linearization point (porcupine puts it anywhere
// after its call, the end meaning never).
func logStep(s logsState, o *LogOp) (bool, logsState) {
	known := o.Status == "ok"
	if o.Kind == "multi" {
		if known && (o.OutOfRange != "" || len(o.Positions) != len(o.Entries)) {
			return false, s
		}
		n := s
		for i, e := range o.Entries {
			l := n[e.Log]
			if known && o.Positions[i] != l.end() {
				return false, s
			}
			n = n.with(e.Log, l.appended(e.Value))
		}
		return true, n
	}
	l := s[o.Log]
	end := l.end()
	switch o.Kind {
	case "append":
		if !known {
			return true, s.with(o.Log, l.appended(o.Value))
		}
		if o.OutOfRange != "" || o.Position == nil || *o.Position != end {
			return false, s
		}
		return true, s.with(o.Log, l.appended(o.Value))
	case "trim":
		if o.Below > end {
			// Refused: nothing changes.
			if !known {
				return true, s
			}
			return o.OutOfRange == "past-end" && (o.At == nil || *o.At == end), s
		}
		n := l
		if o.Below > l.first {
			n = logState{first: o.Below, entries: l.entries[o.Below-l.first:]}
		}
		if !known {
			return true, s.with(o.Log, n)
		}
		if o.OutOfRange != "" || o.First == nil || o.End == nil || *o.First != n.first || *o.End != end {
			return false, s
		}
		return true, s.with(o.Log, n)
	case "bounds":
		if !known {
			return true, s
		}
		return o.OutOfRange == "" && o.First != nil && o.End != nil && *o.First == l.first && *o.End == end, s
	case "read":
		if !known {
			return true, s
		}
		if o.From < l.first {
			return o.OutOfRange == "trimmed" && (o.At == nil || *o.At == l.first), s
		}
		if o.From > end {
			return o.OutOfRange == "past-end" && (o.At == nil || *o.At == end), s
		}
		if o.OutOfRange != "" || o.First == nil || o.End == nil || *o.First != l.first || *o.End != end {
			return false, s
		}
		lo := o.From - l.first
		hi := min(lo+uint64(o.Max), uint64(len(l.entries)))
		return sameStrings(o.Read, l.entries[lo:hi]), s
	}
	return false, s
}

func describeLogs(s logsState) string {
	var names []string
	for k := range s {
		names = append(names, k)
	}
	sort.Strings(names)
	var parts []string
	for _, k := range names {
		l := s[k]
		shown := l.entries
		prefix := ""
		if len(shown) > 6 {
			prefix = "... "
			shown = shown[len(shown)-6:]
		}
		parts = append(parts, fmt.Sprintf("%s [%d, %d): %s%s", k, l.first, l.end(), prefix, strings.Join(shown, " ")))
	}
	return strings.Join(parts, "; ")
}

// LogModel is the model of the logs. Its history is partitioned into
// groups of logs that no multi-append couples (with multi-appends over
// both logs in the mix, that is one group).
var LogModel = porcupine.Model{
	Partition: func(history []porcupine.Operation) [][]porcupine.Operation {
		parent := map[string]string{}
		var find func(string) string
		find = func(x string) string {
			p, ok := parent[x]
			if !ok || p == x {
				parent[x] = x
				return x
			}
			r := find(p)
			parent[x] = r
			return r
		}
		for _, op := range history {
			ls := op.Input.(*LogOp).logs()
			for _, l := range ls[1:] {
				parent[find(l)] = find(ls[0])
			}
		}
		groups := map[string][]porcupine.Operation{}
		var roots []string
		for _, op := range history {
			r := find(op.Input.(*LogOp).logs()[0])
			if _, ok := groups[r]; !ok {
				roots = append(roots, r)
			}
			groups[r] = append(groups[r], op)
		}
		sort.Strings(roots)
		var out [][]porcupine.Operation
		for _, r := range roots {
			out = append(out, groups[r])
		}
		return out
	},
	Init: func() interface{} { return logsState{} },
	Step: func(state, input, output interface{}) (bool, interface{}) {
		return logStep(state.(logsState), input.(*LogOp))
	},
	Equal: func(a, b interface{}) bool {
		x, y := a.(logsState), b.(logsState)
		// A log absent from a state is an empty log at 0.
		for k, l := range x {
			m := y[k]
			if l.first != m.first || !sameStrings(l.entries, m.entries) {
				return false
			}
		}
		for k, m := range y {
			if _, ok := x[k]; !ok && (m.first != 0 || len(m.entries) != 0) {
				return false
			}
		}
		return true
	},
	DescribeOperation: func(input, output interface{}) string { return input.(*LogOp).String() },
	DescribeState:     func(s interface{}) string { return describeLogs(s.(logsState)) },
}

// LogToPorcupine turns a log history into porcupine operations (failed
// operations did not apply and constrain nothing).
func LogToPorcupine(ops []*LogOp) []porcupine.Operation {
	out := make([]porcupine.Operation, 0, len(ops))
	for _, o := range ops {
		if o.Status == "fail" {
			continue
		}
		ret := o.Return
		if o.Status != "ok" {
			ret = Pending
		}
		out = append(out, porcupine.Operation{ClientId: o.Client, Input: o, Call: o.Call, Output: o, Return: ret})
	}
	return out
}

// ---- the final check -----------------------------------------------------------

// LogFinalCheck checks the final reads (the history's Final reads: each
// log read whole from its first position after the last heal): the pages
// are contiguous and cover [first, end); every acknowledged append (or
// multi-append entry) at a position not trimmed is there, with its value;
// no acknowledged position is past the end; no value appears twice; every
// value held was appended (acknowledged or unknown) to that log.
func LogFinalCheck(ops []*LogOp) []string {
	type final struct {
		first, end uint64
		entries    []string
		ok         bool
	}
	finals := map[string]*final{}
	var problems []string
	for _, o := range ops {
		if !o.Final || o.Kind != "read" || o.Status != "ok" {
			continue
		}
		// The pages of one whole read (Final records only the pages of
		// the attempt that read the log to its end), in call order.
		f := finals[o.Log]
		if o.OutOfRange != "" || o.First == nil || o.End == nil {
			problems = append(problems, fmt.Sprintf("log %s: final read %s", o.Log, o.String()))
			if f != nil {
				f.ok = false
			}
			continue
		}
		if f == nil {
			f = &final{first: *o.First, end: *o.End, ok: true}
			finals[o.Log] = f
		}
		if !f.ok {
			continue
		}
		if *o.First != f.first || *o.End != f.end || o.From != f.first+uint64(len(f.entries)) {
			problems = append(problems, fmt.Sprintf("log %s: final read pages do not join: after [%d, %d) of a log [%d, %d), %s",
				o.Log, f.first, f.first+uint64(len(f.entries)), f.first, f.end, o.String()))
			f.ok = false
			continue
		}
		f.entries = append(f.entries, o.Read...)
	}
	var names []string
	for k, f := range finals {
		if f.ok {
			names = append(names, k)
			if got := f.first + uint64(len(f.entries)); got != f.end {
				problems = append(problems, fmt.Sprintf("log %s: final read stops at %d, end %d", k, got, f.end))
			}
		}
	}
	sort.Strings(names)
	if len(names) == 0 {
		return problems
	}
	// Values appended, by log: acknowledged at a position, or unknown.
	type appended struct {
		pos   *uint64
		op    *LogOp
		acked bool
	}
	writes := map[string]map[string]appended{} // log -> value -> append
	put := func(log, value string, a appended) {
		if writes[log] == nil {
			writes[log] = map[string]appended{}
		}
		writes[log][value] = a
	}
	for _, o := range ops {
		if o.Status == "fail" {
			continue
		}
		acked := o.Status == "ok" && o.OutOfRange == ""
		switch o.Kind {
		case "append":
			a := appended{op: o, acked: acked}
			if acked {
				a.pos = o.Position
			}
			put(o.Log, o.Value, a)
		case "multi":
			for i, e := range o.Entries {
				a := appended{op: o, acked: acked}
				if acked && i < len(o.Positions) {
					a.pos = ptr(o.Positions[i])
				}
				put(e.Log, e.Value, a)
			}
		}
	}
	// Acknowledged positions: present (or trimmed), unique, below the end.
	for _, name := range names {
		f := finals[name]
		at := map[uint64]string{}
		var vals []string
		for v := range writes[name] {
			vals = append(vals, v)
		}
		sort.Strings(vals)
		lost := 0
		for _, v := range vals {
			a := writes[name][v]
			if !a.acked || a.pos == nil {
				continue
			}
			p := *a.pos
			if other, dup := at[p]; dup {
				problems = append(problems, fmt.Sprintf("log %s: position %d acknowledged to two appends, %s and %s", name, p, other, v))
			}
			at[p] = v
			switch {
			case p >= f.end:
				problems = append(problems, fmt.Sprintf("log %s: %s acknowledged at %d, but the log ends at %d", name, a.op.String(), p, f.end))
			case p >= f.first && f.entries[p-f.first] != v:
				lost++
				if lost <= 10 {
					problems = append(problems, fmt.Sprintf("log %s: acknowledged append %s (client %d, returned at %.3fs) but position %d holds %s",
						name, a.op.String(), a.op.Client, float64(a.op.Return)/1e9, p, f.entries[p-f.first]))
				}
			}
		}
		if lost > 10 {
			problems = append(problems, fmt.Sprintf("log %s: %d acknowledged appends not at their positions in all", name, lost))
		}
	}
	// Every value held once, and appended to that log.
	seen := map[string]string{}
	for _, name := range names {
		f := finals[name]
		for i, v := range f.entries {
			p := f.first + uint64(i)
			where := fmt.Sprintf("%s@%d", name, p)
			if prev, dup := seen[v]; dup {
				problems = append(problems, fmt.Sprintf("value %s appears twice: at %s and at %s", v, prev, where))
			}
			seen[v] = where
			if _, ok := writes[name][v]; !ok {
				problems = append(problems, fmt.Sprintf("log %s: position %d holds %s, which no append to this log wrote", name, p, v))
			}
		}
	}
	return problems
}

// LogBoundsInRealTime names the answers that went back in time: a log's
// first position and end only grow, so an operation must not see a first
// or an end below one that an operation which returned before it was
// called saw (an acknowledged append at P means the end was at least
// P + 1). Each such answer is a violation by itself (porcupine rejects the
// history too); unlike porcupine's verdict, this says which operation.
func LogBoundsInRealTime(ops []*LogOp) []string {
	// What each operation saw of each log: lower bounds it proves for
	// operations called after it returned, and the values to check.
	type obs struct {
		log                  string
		first, end           *uint64 // to check: at least the bounds before the call
		leastFirst, leastEnd uint64  // proved from its return on
	}
	observe := func(o *LogOp) []obs {
		if o.Status != "ok" {
			return nil
		}
		switch {
		case o.OutOfRange == "trimmed" && o.At != nil:
			return []obs{{log: o.Log, first: o.At, leastFirst: *o.At}}
		case o.OutOfRange == "past-end" && o.At != nil:
			return []obs{{log: o.Log, end: o.At, leastEnd: *o.At}}
		case o.OutOfRange != "":
			return nil
		case o.Kind == "append" && o.Position != nil:
			return []obs{{log: o.Log, end: o.Position, leastEnd: *o.Position + 1}}
		case o.Kind == "multi" && len(o.Positions) == len(o.Entries):
			// Per log: its first entry's position is the end before the
			// multi-append; after it, the end passes its last entry.
			var out []obs
			at := map[string]int{}
			for i, e := range o.Entries {
				k, ok := at[e.Log]
				if !ok {
					at[e.Log] = len(out)
					out = append(out, obs{log: e.Log, end: ptr(o.Positions[i])})
					k = len(out) - 1
				}
				out[k].leastEnd = max(out[k].leastEnd, o.Positions[i]+1)
			}
			return out
		case o.First != nil && o.End != nil:
			return []obs{{log: o.Log, first: o.First, end: o.End, leastFirst: *o.First, leastEnd: *o.End}}
		}
		return nil
	}
	type retd struct {
		at int64
		ob obs
		op *LogOp
	}
	var rets []retd
	for _, o := range ops {
		for _, ob := range observe(o) {
			rets = append(rets, retd{at: o.Return, ob: ob, op: o})
		}
	}
	sort.SliceStable(rets, func(i, j int) bool { return rets[i].at < rets[j].at })
	calls := make([]*LogOp, 0, len(ops))
	for _, o := range ops {
		if o.Status == "ok" {
			calls = append(calls, o)
		}
	}
	sort.SliceStable(calls, func(i, j int) bool { return calls[i].Call < calls[j].Call })
	type best struct {
		first, end     uint64
		byFirst, byEnd *LogOp
	}
	bounds := map[string]*best{}
	var problems []string
	count := map[string]int{}
	j := 0
	for _, o := range calls {
		for ; j < len(rets) && rets[j].at < o.Call; j++ {
			r := rets[j]
			b := bounds[r.ob.log]
			if b == nil {
				b = &best{}
				bounds[r.ob.log] = b
			}
			if r.ob.leastFirst > b.first {
				b.first, b.byFirst = r.ob.leastFirst, r.op
			}
			if r.ob.leastEnd > b.end {
				b.end, b.byEnd = r.ob.leastEnd, r.op
			}
		}
		for _, ob := range observe(o) {
			b := bounds[ob.log]
			if b == nil {
				continue
			}
			var what string
			switch {
			case ob.first != nil && *ob.first < b.first:
				what = fmt.Sprintf("saw first %d, but %s (client %d) returned first %d before it was called", *ob.first, b.byFirst.String(), b.byFirst.Client, b.first)
			case ob.end != nil && *ob.end < b.end:
				what = fmt.Sprintf("saw end %d, but %s (client %d) had returned (end at least %d) before it was called", *ob.end, b.byEnd.String(), b.byEnd.Client, b.end)
			default:
				continue
			}
			count[ob.log]++
			if count[ob.log] <= 5 {
				problems = append(problems, fmt.Sprintf("log %s: %s (client %d, called at %.3fs) %s", ob.log, o.String(), o.Client, float64(o.Call)/1e9, what))
			}
		}
	}
	var names []string
	for k := range count {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		if count[k] > 5 {
			problems = append(problems, fmt.Sprintf("log %s: %d answers behind an earlier one in all", k, count[k]))
		}
	}
	return problems
}

// CheckLogHistory runs porcupine on a log history (a visualisation goes
// to html when it is not linearizable), the real-time bounds check and
// the final check.
func CheckLogHistory(ops []*LogOp, timeout time.Duration, html string) (string, []string) {
	var problems []string
	res, info := porcupine.CheckOperationsVerbose(LogModel, LogToPorcupine(ops), timeout)
	verdict := "linearizable"
	switch res {
	case porcupine.Illegal:
		verdict = "NOT-linearizable"
		if err := porcupine.VisualizePath(LogModel, info, html); err == nil {
			problems = append(problems, "porcupine: not linearizable; see "+html)
		} else {
			problems = append(problems, "porcupine: not linearizable (visualisation failed: "+err.Error()+")")
		}
	case porcupine.Unknown:
		verdict = "check-timeout"
	}
	problems = append(problems, LogBoundsInRealTime(ops)...)
	problems = append(problems, LogFinalCheck(ops)...)
	return verdict, problems
}

func WriteLogHistory(path string, ops []*LogOp) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	defer f.Close()
	w := bufio.NewWriter(f)
	enc := json.NewEncoder(w)
	for _, o := range ops {
		enc.Encode(o)
	}
	return w.Flush()
}

func ReadLogHistory(path string) ([]*LogOp, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var ops []*LogOp
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		var o LogOp
		if err := json.Unmarshal(sc.Bytes(), &o); err != nil {
			return nil, err
		}
		ops = append(ops, &o)
	}
	return ops, sc.Err()
}

// checkLogFile checks a recorded log.history.jsonl (-check FILE -model log).
func checkLogFile(path string) int {
	ops, err := ReadLogHistory(path)
	if err != nil {
		fmt.Println(err)
		return 2
	}
	verdict, problems := CheckLogHistory(ops, 5*time.Minute, strings.TrimSuffix(path, ".jsonl")+".porcupine.html")
	fmt.Printf("%s: %d ops, %s\n", path, len(ops), verdict)
	for _, p := range problems {
		fmt.Println("  " + p)
	}
	if len(problems) > 0 || verdict != "linearizable" {
		return 1
	}
	return 0
}

// ---- the workload --------------------------------------------------------------

type logRun struct {
	names []string
	start time.Time

	mu       sync.Mutex
	ops      []*LogOp
	clients  int
	problems []string
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
				}
			case "multi":
				for i, e := range o.Entries {
					views[e.Log].saw(nil, ptr(o.Positions[i]+1))
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
	return verdict, append(problems, more...), logDetails(ops)
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
