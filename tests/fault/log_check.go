package main

// The log workload's checks: the porcupine model of the logs, the final
// read-back and the bounds-only-grow check (log.go records the history).

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/anishathalye/porcupine"
)

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

// logFinal is one log as the final read found it: entries at first,
// first+1, ..., up to end.
type logFinal struct {
	first, end uint64
	entries    []string
	ok         bool
}

// at is the value the final read found at position p, if it holds p.
func (f *logFinal) at(p uint64) (string, bool) {
	if p < f.first || p >= f.first+uint64(len(f.entries)) {
		return "", false
	}
	return f.entries[p-f.first], true
}

// logFinals joins each log's final read pages (the history's Final reads,
// in call order): the logs whose pages join and cover [first, end), and
// the problems with the others.
func logFinals(ops []*LogOp) (map[string]*logFinal, []string) {
	finals := map[string]*logFinal{}
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
			f = &logFinal{first: *o.First, end: *o.End, ok: true}
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
	good := map[string]*logFinal{}
	var names []string
	for k := range finals {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		f := finals[k]
		if !f.ok {
			continue
		}
		good[k] = f
		if got := f.first + uint64(len(f.entries)); got != f.end {
			problems = append(problems, fmt.Sprintf("log %s: final read stops at %d, end %d", k, got, f.end))
		}
	}
	return good, problems
}

// logAppended is one value appended to a log: by an acknowledged append
// or multi-append (at its position), or by one of unknown outcome.
type logAppended struct {
	pos   *uint64
	op    *LogOp
	acked bool
}

// logWrites is every value appended by an operation that did not fail,
// by log and value (values are unique).
func logWrites(ops []*LogOp) map[string]map[string]logAppended {
	writes := map[string]map[string]logAppended{}
	put := func(log, value string, a logAppended) {
		if writes[log] == nil {
			writes[log] = map[string]logAppended{}
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
			a := logAppended{op: o, acked: acked}
			if acked {
				a.pos = o.Position
			}
			put(o.Log, o.Value, a)
		case "multi":
			for i, e := range o.Entries {
				a := logAppended{op: o, acked: acked}
				if acked && i < len(o.Positions) {
					a.pos = ptr(o.Positions[i])
				}
				put(e.Log, e.Value, a)
			}
		}
	}
	return writes
}

// LogFinalCheck checks the final reads (the history's Final reads: each
// log read whole from its first position after the last heal): the pages
// are contiguous and cover [first, end); every acknowledged append (or
// multi-append entry) at a position not trimmed is there, with its value;
// no acknowledged position is past the end; no value appears twice; every
// value held was appended (acknowledged or unknown) to that log.
func LogFinalCheck(ops []*LogOp) []string {
	finals, problems := logFinals(ops)
	var names []string
	for k := range finals {
		names = append(names, k)
	}
	sort.Strings(names)
	if len(names) == 0 {
		return problems
	}
	writes := logWrites(ops)
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
			case p >= f.first:
				held, ok := f.at(p)
				if ok && held == v {
					break
				}
				lost++
				if lost <= 10 {
					problems = append(problems, fmt.Sprintf("log %s: acknowledged append %s (client %d, returned at %.3fs) but position %d holds %s",
						name, a.op.String(), a.op.Client, float64(a.op.Return)/1e9, p, held))
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

func WriteLogHistory(path string, ops []*LogOp) error { return writeJSONL(path, ops) }

func ReadLogHistory(path string) ([]*LogOp, error) { return readJSONL[LogOp](path) }

// checkLogFile checks a recorded log.history.jsonl (-check FILE -model log).
func checkLogFile(path string) int {
	ops, err := ReadLogHistory(path)
	if err != nil {
		fmt.Println(err)
		return 2
	}
	verdict, problems := CheckLogHistory(ops, 5*time.Minute, strings.TrimSuffix(path, ".jsonl")+".porcupine.html")
	fmt.Printf("%s: %d ops, %s\n", path, len(ops), verdict)
	// The tailers' events, when they were recorded next to it.
	if tails, err := ReadTailHistory(tailsPathFor(path)); err == nil {
		tp, sum := CheckTails(ops, tails)
		fmt.Printf("%s: %s; %s\n", tailsPathFor(path), sum.Verdict(len(tp)), sum.String())
		for _, p := range tp {
			problems = append(problems, "tail: "+p)
		}
	}
	for _, p := range problems {
		fmt.Println("  " + p)
	}
	if len(problems) > 0 || verdict != "linearizable" {
		return 1
	}
	return 0
}
