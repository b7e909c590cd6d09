package main

// The eventual workload's checks (eventual.go records the history).
//
// A write or delete W supersedes value v iff v was among the values W's
// read returned (the context it sent covers exactly those, and values
// already superseded). With S the siblings of a key after convergence
// (read with r = 3):
//
//   - no lost write: every write acknowledged ok whose value no ok or
//     unknown write/delete read is in S (and every write of unknown
//     outcome that some read or reply returned: it took effect);
//   - no resurrection: no value in S was read by an ok write/delete;
//   - no invented value: every value in S was written to that key by an
//     ok or unknown write (a write refused for certain must not appear);
//   - every node returns the same S;
//
// and while the clients ran, with r + w above the replica count (a
// majority each), every read's quorum meets every acknowledged write's:
//
//   - a read called after a write of v was acknowledged returns v, unless
//     a write/delete that read v was sent before the read returned (the
//     first read that misses v is reported);
//   - a read called after an acknowledged write/delete that read v does
//     not return v;
//   - a read returns only values written to the key by writes sent before
//     it returned, and no value twice;
//   - a write's reply (the values at the replica that took it) holds its
//     value and none of the values it superseded.
//
// Besides: convergence (watermark_lag and dot_keys 0 everywhere) within
// 5 s of the heal, and no tombstones once stripped (the objects stored
// are replicas x keys with values).

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

const evProblemsShown = 8 // problems listed per kind, then a count

// evProblems collects problems by kind, keeping the first few of each.
type evProblems struct {
	order  []string
	shown  map[string][]string
	counts map[string]int
}

func (p *evProblems) add(kind, format string, args ...any) {
	if p.shown == nil {
		p.shown, p.counts = map[string][]string{}, map[string]int{}
	}
	if p.counts[kind] == 0 {
		p.order = append(p.order, kind)
	}
	p.counts[kind]++
	if len(p.shown[kind]) < evProblemsShown {
		p.shown[kind] = append(p.shown[kind], kind+": "+fmt.Sprintf(format, args...))
	}
}

func (p *evProblems) list() []string {
	var out []string
	for _, k := range p.order {
		out = append(out, p.shown[k]...)
		if n := p.counts[k] - len(p.shown[k]); n > 0 {
			out = append(out, fmt.Sprintf("%s: %d more (%d in all)", k, n, p.counts[k]))
		}
	}
	return out
}

// evSummary is what the check found, for the verdict and the details.
type evSummary struct {
	counts    map[string][3]int // kind -> ok, unknown, fail
	keys      int
	live      int // keys with values after convergence
	siblings  int // the most siblings a final read returned
	readsChkd int
	fin       *EvFinal
	kinds     map[string]int
}

func (s *evSummary) Verdict(problems int) string {
	conv := "not converged"
	if s.fin != nil && s.fin.ConvergedSeconds >= 0 {
		conv = fmt.Sprintf("converged in %.1fs", s.fin.ConvergedSeconds)
	}
	if problems > 0 {
		var ks []string
		for k, n := range s.kinds {
			ks = append(ks, fmt.Sprintf("%s %d", k, n))
		}
		sort.Strings(ks)
		return fmt.Sprintf("VIOLATED (%s; %s)", strings.Join(ks, ", "), conv)
	}
	return fmt.Sprintf("ok (%s, %d live keys)", conv, s.live)
}

func (s *evSummary) String() string {
	var parts []string
	for _, k := range []string{"rmw", "write", "delete", "read"} {
		c := s.counts[k]
		parts = append(parts, fmt.Sprintf("%s ok %d unknown %d fail %d", k, c[0], c[1], c[2]))
	}
	parts = append(parts, fmt.Sprintf("%d reads checked against the acknowledged writes", s.readsChkd))
	if f := s.fin; f != nil {
		if f.ConvergedSeconds >= 0 {
			parts = append(parts, fmt.Sprintf("converged %.2fs after the heal (%.2fs after the last operation returned; limit %.0fs)",
				f.ConvergedSeconds, f.ConvergedAfterLastOp, f.ConvergeLimitSeconds))
		} else {
			parts = append(parts, "not converged: "+f.ConvergeProblem)
		}
		if f.StrippedSeconds >= 0 {
			parts = append(parts, fmt.Sprintf("stripped %.2fs after that", f.StrippedSeconds))
		} else {
			parts = append(parts, "not stripped within the wait")
		}
		parts = append(parts, fmt.Sprintf("%d objects stored on %d virtual nodes for %d live keys of %d (x%d replicas), %d tombstones, %d clock bitmap bits", f.KeysStored, f.Vnodes, s.live, s.keys, f.Replicas, f.Tombstones, f.ClockBitmapBits))
	}
	parts = append(parts, fmt.Sprintf("at most %d siblings at the end", s.siblings))
	return strings.Join(parts, "; ")
}

func quorumOf(x uint32, replicas int) int {
	if x == 0 {
		return replicas/2 + 1
	}
	return int(x)
}

func sameSet(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	x := append([]string(nil), a...)
	y := append([]string(nil), b...)
	sort.Strings(x)
	sort.Strings(y)
	for i := range x {
		if x[i] != y[i] {
			return false
		}
	}
	return true
}

func setText(vs []string) string {
	x := append([]string(nil), vs...)
	sort.Strings(x)
	return "[" + strings.Join(x, " ") + "]"
}

// CheckEventual checks an eventual history (its final reads included)
// and what the workload saw after the heal (nil: the history's checks
// only).
func CheckEventual(ops []*EvOp, fin *EvFinal) ([]string, *evSummary) {
	var p evProblems
	sum := &evSummary{counts: map[string][3]int{}, fin: fin}
	replicas := eventualReplicas
	if fin != nil && fin.Replicas > 0 {
		replicas = fin.Replicas
	}
	byKey := map[string][]*EvOp{}
	var keyNames []string
	for _, o := range ops {
		if _, ok := byKey[o.Key]; !ok {
			keyNames = append(keyNames, o.Key)
		}
		byKey[o.Key] = append(byKey[o.Key], o)
		if !o.Final {
			c := sum.counts[o.Kind]
			switch o.Status {
			case "ok":
				c[0]++
			case "unknown":
				c[1]++
			default:
				c[2]++
			}
			sum.counts[o.Kind] = c
		}
	}
	sort.Strings(keyNames)
	sum.keys = len(keyNames)
	// Values are unique per write: one writer per value, across keys.
	writer := map[string]*EvOp{}
	for _, o := range ops {
		if o.Kind != "rmw" && o.Kind != "write" {
			continue
		}
		if w := writer[o.Value]; w != nil {
			p.add("harness", "value %s written twice: %s and %s", o.Value, w, o)
			continue
		}
		writer[o.Value] = o
	}
	for _, k := range keyNames {
		checkEventualKey(&p, sum, k, byKey[k], writer, replicas)
	}
	if fin != nil {
		for _, f := range fin.FinalReadFailures {
			p.add("final-read", "%s", f)
		}
		if fin.ConvergedSeconds < 0 {
			p.add("convergence", "%s", fin.ConvergeProblem)
		} else if fin.ConvergedSeconds > fin.ConvergeLimitSeconds {
			p.add("convergence", "replicas converged %.2fs after the heal (%.2fs after the last operation), more than %.0fs; the poll saw: %s",
				fin.ConvergedSeconds, fin.ConvergedAfterLastOp, fin.ConvergeLimitSeconds, strings.Join(fin.Timeline, "; "))
		}
		if fin.StrippedSeconds < 0 {
			p.add("strip", "some replica still had unstripped keys %s after convergence: %s", eventualStripWait, fin.LastStatus)
		}
		if want := int64(replicas * sum.live); fin.Vnodes > 0 && fin.KeysStored != want {
			p.add("tombstones", "%d objects stored, want %d (%d keys with values x %d replicas): %s",
				fin.KeysStored, want, sum.live, replicas, fin.LastStatus)
		}
		if fin.Tombstones != 0 {
			p.add("tombstones", "the nodes count %d objects without a value: %s", fin.Tombstones, fin.LastStatus)
		}
	}
	sum.kinds = p.counts
	return p.list(), sum
}

func checkEventualKey(p *evProblems, sum *evSummary, key string, ops []*EvOp, writer map[string]*EvOp, replicas int) {
	// Who read (so superseded) each value: ok and unknown writes/deletes.
	type sup struct {
		firstSent int64 // the earliest send of an ok-or-unknown write that read it (-1: none)
		firstOK   int64 // the earliest return of an ok write that read it (-1: none)
		okBy      *EvOp // that write
		anyBy     *EvOp // some ok-or-unknown write that read it
	}
	sups := map[string]*sup{}
	get := func(v string) *sup {
		s := sups[v]
		if s == nil {
			s = &sup{firstSent: -1, firstOK: -1}
			sups[v] = s
		}
		return s
	}
	for _, o := range ops {
		if !o.isWrite() || !o.sent() || o.Status == "fail" {
			continue
		}
		for _, v := range o.Read {
			s := get(v)
			if s.firstSent < 0 || o.sentAt() < s.firstSent {
				s.firstSent, s.anyBy = o.sentAt(), o
			}
			if o.Status == "ok" && (s.firstOK < 0 || o.Return < s.firstOK) {
				s.firstOK, s.okBy = o.Return, o
			}
		}
	}
	superseded := func(v string) *sup {
		if s := sups[v]; s != nil && s.firstSent >= 0 {
			return s
		}
		return nil
	}
	// A value a read or reply returned: written to this key, by a write
	// that was sent before the read returned and not refused.
	checkValue := func(where *EvOp, v string, ret int64) {
		w := writer[v]
		switch {
		case w == nil:
			p.add("invented", "%s returned %s, which no operation wrote", where, v)
		case w.Key != key:
			p.add("invented", "%s returned %s, written to key %s: %s", where, v, w.Key, w)
		case !w.sent():
			p.add("invented", "%s returned %s, whose write was never sent: %s", where, v, w)
		case w.Status == "fail":
			p.add("refused-write-seen", "%s returned %s, whose write was refused: %s", where, v, w)
		case ret > 0 && w.sentAt() > ret:
			p.add("future-read", "%s returned %s before its write was sent: %s", where, v, w)
		}
	}
	// Reads while the clients ran (and the final ones): values, quorum
	// intersection with the acknowledged writes and supersessions.
	var acked []*EvOp // ok writes of a value, by return
	for _, o := range ops {
		if (o.Kind == "rmw" || o.Kind == "write") && o.Status == "ok" {
			acked = append(acked, o)
		}
	}
	sort.Slice(acked, func(i, j int) bool { return acked[i].Return < acked[j].Return })
	type readRef struct {
		o         *EvOp
		vals      []string
		call, ret int64
		r         uint32
	}
	var reads []readRef
	for _, o := range ops {
		if vals, call, ret, ok := o.readPart(); ok {
			r := o.R
			reads = append(reads, readRef{o, vals, call, ret, r})
		}
	}
	sort.Slice(reads, func(i, j int) bool { return reads[i].call < reads[j].call })
	observed := map[string]bool{} // values some read or reply returned
	active := map[string]*EvOp{}  // acknowledged, not yet superseded as of the current read's call
	next := 0
	for _, rd := range reads {
		seen := map[string]bool{}
		for _, v := range rd.vals {
			if seen[v] {
				p.add("duplicate", "%s returned %s twice", rd.o, v)
			}
			seen[v] = true
			observed[v] = true
			checkValue(rd.o, v, rd.ret)
			if s := sups[v]; !rd.o.Final && s != nil && s.firstOK >= 0 && s.firstOK < rd.call && quorumOf(rd.r, replicas)+quorumOf(s.okBy.W, replicas) > replicas {
				p.add("superseded-read", "%s returned %s, superseded by %s, acknowledged before the read was called", rd.o, v, s.okBy)
			}
		}
		if rd.o.Final {
			continue // the oracle below judges the final reads
		}
		for next < len(acked) && acked[next].Return < rd.call {
			active[acked[next].Value] = acked[next]
			next++
		}
		for v, w := range active {
			s := superseded(v)
			if s != nil && s.firstSent < rd.call {
				delete(active, v) // superseded before every later read too
				continue
			}
			if seen[v] || (s != nil && s.firstSent < rd.ret) {
				continue
			}
			if quorumOf(rd.r, replicas)+quorumOf(w.W, replicas) > replicas {
				// Reported at the first read that missed it only (a lost
				// write is missed by every later read).
				p.add("stale-read", "%s missed %s, acknowledged before the read was called (%s) and superseded by nothing sent before the read returned", rd.o, v, w)
				delete(active, v)
			}
		}
		sum.readsChkd++
	}
	// Replies of acknowledged writes: the values at the replica that took
	// the write, after it.
	for _, o := range ops {
		if !o.isWrite() || o.Status != "ok" {
			continue
		}
		in := map[string]bool{}
		for _, v := range o.Reply {
			in[v] = true
			observed[v] = true
			if v != o.Value {
				checkValue(o, v, o.Return)
			}
		}
		if o.Kind != "delete" && !in[o.Value] {
			p.add("reply", "%s: the reply does not hold the value written", o)
		}
		for _, v := range o.Read {
			if in[v] {
				p.add("reply", "%s: the reply still holds %s, which the write superseded", o, v)
			}
		}
	}
	// The final reads: one per node, all equal; the oracle on each.
	var finals []*EvOp
	for _, o := range ops {
		if o.Final && o.Status == "ok" {
			finals = append(finals, o)
		}
	}
	if len(finals) == 0 {
		return
	}
	distinct := [][]string{finals[0].Read}
	for _, f := range finals[1:] {
		if !sameSet(f.Read, finals[0].Read) {
			p.add("divergent", "key %s: %s at %s but %s at %s after convergence", key, setText(finals[0].Read), finals[0].Node, setText(f.Read), f.Node)
			dup := false
			for _, d := range distinct {
				if sameSet(d, f.Read) {
					dup = true
				}
			}
			if !dup {
				distinct = append(distinct, f.Read)
			}
		}
	}
	if len(finals[0].Read) > 0 {
		sum.live++
	}
	if len(finals[0].Read) > sum.siblings {
		sum.siblings = len(finals[0].Read)
	}
	for _, S := range distinct {
		in := map[string]bool{}
		for _, v := range S {
			in[v] = true
			if s := sups[v]; s != nil && s.okBy != nil {
				p.add("resurrection", "key %s: %s is in the final siblings %s, but %s superseded it", key, v, setText(S), s.okBy)
			}
		}
		for _, w := range acked {
			if !in[w.Value] && superseded(w.Value) == nil {
				p.add("lost-write", "key %s: %s was acknowledged and nothing superseded it, but the final siblings are %s", key, w, setText(S))
			}
		}
		// A write of unknown outcome that some read or reply returned took
		// effect (a replica journals a write before it answers or
		// replicates it): it must stay unless superseded, like an
		// acknowledged one.
		for _, w := range ops {
			if (w.Kind == "rmw" || w.Kind == "write") && w.Status == "unknown" && observed[w.Value] && !in[w.Value] && superseded(w.Value) == nil {
				p.add("lost-write", "key %s: %s (outcome unknown) was seen applied and nothing superseded it, but the final siblings are %s", key, w, setText(S))
			}
		}
	}
}

// checkEventualFile checks a recorded eventual.history.jsonl (and the
// eventual.final.json beside it, if any).
func checkEventualFile(path string) int {
	ops, err := readJSONL[EvOp](path)
	if err != nil {
		fmt.Println(err)
		return 2
	}
	var fin *EvFinal
	if b, err := os.ReadFile(filepath.Join(filepath.Dir(path), "eventual.final.json")); err == nil {
		fin = &EvFinal{}
		if err := json.Unmarshal(b, fin); err != nil {
			fmt.Println(err)
			return 2
		}
	}
	problems, sum := CheckEventual(ops, fin)
	fmt.Printf("%s: %d ops, %s\n  %s\n", path, len(ops), sum.Verdict(len(problems)), sum.String())
	for _, p := range problems {
		fmt.Println("  " + p)
	}
	if len(problems) > 0 {
		return 1
	}
	return 0
}
