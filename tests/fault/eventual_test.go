package main

// The eventual checker's self-test: hand-made histories of an eventual
// map that must pass (siblings, supersession, deletes, unknown and refused
// writes) and must fail (a lost write, a resurrection, an invented value,
// diverging replicas, stale and superseded reads, slow convergence,
// tombstones, what the eventual-blind-deletes bug records).

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func evWrite(client int, key, value string, call, ret int64, status string, reply ...string) *EvOp {
	o := &EvOp{Client: client, Kind: "write", Key: key, Value: value, Call: call, Return: ret, Status: status, Reply: reply}
	if status != "ok" {
		o.Return = -1
	}
	return o
}

func evRMW(client int, key string, read []string, value string, call, readRet, ret int64, status string, reply ...string) *EvOp {
	o := &EvOp{Client: client, Kind: "rmw", Key: key, Read: read, Value: value, Call: call, ReadReturn: readRet, Return: ret, Status: status, Reply: reply}
	if status != "ok" {
		o.Return = -1
	}
	return o
}

func evDel(client int, key string, read []string, call, readRet, ret int64, status string, reply ...string) *EvOp {
	o := &EvOp{Client: client, Kind: "delete", Key: key, Read: read, Call: call, ReadReturn: readRet, Return: ret, Status: status, Reply: reply}
	if status != "ok" {
		o.Return = -1
	}
	return o
}

func evRead(client int, key string, call, ret int64, vals ...string) *EvOp {
	if vals == nil {
		vals = []string{}
	}
	return &EvOp{Client: client, Kind: "read", Key: key, Node: "n1", Read: vals, Call: call, Return: ret, Status: "ok"}
}

func evFinals(key string, call int64, vals ...string) []*EvOp {
	var out []*EvOp
	for i, n := range []string{"n1", "n2", "n3"} {
		out = append(out, &EvOp{Client: 9, Kind: "final", Key: key, Node: n, R: 3, Read: vals, Call: call + int64(2*i), Return: call + int64(2*i+1), Status: "ok", Final: true})
	}
	return out
}

// goodEventual: two keys. a: two concurrent blind writes (siblings), an
// rmw over both, a delete of that, an unknown write that applied, one
// that did not, an rmw whose read failed (nothing sent), a refused write.
// b: written and deleted (no values left), an unknown rmw that did not
// apply.
func goodEventual() []*EvOp {
	ops := []*EvOp{
		evWrite(0, "a", "w0-1", 0, 10, "ok", "w0-1"),
		evWrite(1, "a", "w1-1", 5, 15, "ok", "w0-1", "w1-1"),
		evRead(2, "a", 20, 25, "w0-1", "w1-1"),
		evRMW(2, "a", []string{"w1-1", "w0-1"}, "w2-1", 30, 32, 40, "ok", "w2-1"),
		evRead(0, "a", 45, 50, "w2-1"),
		evWrite(1, "a", "w1-2", 46, 0, "unknown"), // applied: in the final siblings
		evDel(0, "a", []string{"w2-1"}, 60, 62, 70, "ok", "w1-2"),
		evWrite(3, "a", "w3-1", 61, 0, "unknown"), // never applied
		{Client: 2, Kind: "rmw", Key: "a", Value: "w2-2", Call: 80, Return: -1, Status: "fail", Err: "read: quorum-not-reached"},
		{Client: 2, Kind: "write", Key: "a", Value: "w2-3", Call: 90, Return: -1, Status: "fail", Err: "InvalidArgument"},
		evRead(1, "a", 95, 99, "w1-2"),
		evWrite(0, "b", "w0-2", 100, 110, "ok", "w0-2"),
		evDel(1, "b", []string{"w0-2"}, 120, 121, 130, "ok"),
		evRMW(3, "b", []string{"w0-2"}, "w3-2", 115, 118, 0, "unknown"),
		evRead(2, "b", 140, 150),
		{Client: 2, Kind: "read", Key: "b", Call: 151, Return: -1, Status: "fail", Err: "DeadlineExceeded"},
	}
	ops = append(ops, evFinals("a", 200, "w1-2")...)
	ops = append(ops, evFinals("b", 210)...)
	return ops
}

func goodFinal() *EvFinal {
	return &EvFinal{Replicas: 3, ConvergedSeconds: 1.2, ConvergedAfterLastOp: 0.8, ConvergeLimitSeconds: 5,
		StrippedSeconds: 0.3, KeysStored: 3, Vnodes: 18}
}

func mustPass(t *testing.T, ops []*EvOp, fin *EvFinal) {
	t.Helper()
	problems, sum := CheckEventual(ops, fin)
	if len(problems) > 0 {
		t.Fatalf("rejected a good history: %s", strings.Join(problems, "\n"))
	}
	if v := sum.Verdict(0); !strings.HasPrefix(v, "ok") {
		t.Fatalf("verdict %q", v)
	}
}

// mustFail checks that the history is rejected with a problem of each kind named.
func mustFail(t *testing.T, ops []*EvOp, fin *EvFinal, kinds ...string) []string {
	t.Helper()
	problems, sum := CheckEventual(ops, fin)
	if len(problems) == 0 {
		t.Fatalf("accepted a bad history")
	}
	for _, k := range kinds {
		found := false
		for _, p := range problems {
			if strings.HasPrefix(p, k+": ") {
				found = true
			}
		}
		if !found {
			t.Fatalf("no %s problem in:\n%s", k, strings.Join(problems, "\n"))
		}
	}
	if v := sum.Verdict(len(problems)); !strings.HasPrefix(v, "VIOLATED") {
		t.Fatalf("verdict %q", v)
	}
	return problems
}

func TestEventualAcceptsGood(t *testing.T) {
	mustPass(t, goodEventual(), goodFinal())
	mustPass(t, goodEventual(), nil) // the history alone
	_, sum := CheckEventual(goodEventual(), goodFinal())
	if sum.live != 1 || sum.siblings != 1 || sum.counts["write"] != [3]int{3, 2, 1} || sum.counts["rmw"] != [3]int{1, 1, 1} {
		t.Fatalf("summary: live %d siblings %d counts %v", sum.live, sum.siblings, sum.counts)
	}
	if !strings.Contains(sum.String(), "converged 1.20s after the heal") {
		t.Fatalf("details: %s", sum.String())
	}
}

// replaceFinals gives key k other final siblings at every node.
func replaceFinals(ops []*EvOp, k string, vals ...string) []*EvOp {
	var out []*EvOp
	for _, o := range ops {
		if o.Final && o.Key == k {
			c := *o
			c.Read = vals
			o = &c
		}
		out = append(out, o)
	}
	return out
}

func TestEventualRejectsLostWrite(t *testing.T) {
	// An acknowledged blind write that nothing read is missing at the end.
	ops := append(goodEventual(), evWrite(3, "a", "w3-9", 160, 170, "ok", "w1-2", "w3-9"))
	p := mustFail(t, ops, nil, "lost-write")
	if !strings.Contains(strings.Join(p, "\n"), "w3-9") {
		t.Fatalf("the lost value is not named: %v", p)
	}
	// The siblings of an acknowledged concurrent write, dropped.
	mustFail(t, replaceFinals(goodEventual(), "a"), goodFinal(), "lost-write")
}

func TestEventualRejectsResurrection(t *testing.T) {
	// w2-1 was deleted by an acknowledged delete that read it.
	mustFail(t, replaceFinals(goodEventual(), "a", "w1-2", "w2-1"), nil, "resurrection")
	// b's value came back after its delete.
	mustFail(t, replaceFinals(goodEventual(), "b", "w0-2"), nil, "resurrection")
}

func TestEventualRejectsInventedValues(t *testing.T) {
	mustFail(t, replaceFinals(goodEventual(), "a", "w1-2", "zz"), nil, "invented")
	// A value written to another key.
	mustFail(t, replaceFinals(goodEventual(), "a", "w1-2", "w0-2"), nil, "invented")
	// The value of an rmw whose read failed (never sent).
	mustFail(t, replaceFinals(goodEventual(), "a", "w1-2", "w2-2"), nil, "invented")
	// The value of a write refused for certain.
	mustFail(t, replaceFinals(goodEventual(), "a", "w1-2", "w2-3"), nil, "refused-write-seen")
	// A value read twice.
	mustFail(t, replaceFinals(goodEventual(), "a", "w1-2", "w1-2"), nil, "duplicate")
}

func TestEventualAcceptsUnknownWritesEitherWay(t *testing.T) {
	// w3-1 (unknown) applied after all; w1-2 (unknown) never did.
	ops := replaceFinals(goodEventual(), "a", "w3-1")
	var kept []*EvOp
	for _, o := range ops {
		if o.Kind == "read" && o.Key == "a" && o.Call == 95 {
			continue // the read that saw w1-2
		}
		if o.Kind == "delete" && o.Key == "a" {
			o.Reply = nil
		}
		kept = append(kept, o)
	}
	mustPass(t, kept, nil)
	// But w1-2 was seen applied (a read returned it): it must stay.
	mustFail(t, replaceFinals(goodEventual(), "a", "w3-1"), nil, "lost-write")
}

func TestEventualRejectsDivergentReplicas(t *testing.T) {
	ops := goodEventual()
	for _, o := range ops {
		if o.Final && o.Key == "a" && o.Node == "n3" {
			o.Read = []string{"w1-2", "w3-1"}
		}
	}
	mustFail(t, ops, nil, "divergent")
}

func TestEventualRejectsStaleReads(t *testing.T) {
	// A read (majority) after w0-1 and w1-1 were acknowledged misses w1-1.
	ops := goodEventual()
	ops[2] = evRead(2, "a", 20, 25, "w0-1")
	mustFail(t, ops, nil, "stale-read")
	// A read after the acknowledged delete of w2-1 returns it.
	ops = goodEventual()
	ops = append(ops, evRead(3, "a", 75, 78, "w1-2", "w2-1"))
	mustFail(t, ops, nil, "superseded-read")
	// A read that overlaps the supersession may miss the value or see it.
	ops = goodEventual()
	ops = append(ops, evRead(3, "a", 31, 36), evRead(3, "a", 61, 68, "w2-1", "w1-2"))
	mustPass(t, ops, nil)
	// A read returns a value before its write was sent.
	ops = goodEventual()
	ops = append(ops, evRead(3, "a", 1, 3, "w0-1", "w1-1"))
	mustFail(t, ops, nil, "future-read")
}

func TestEventualRejectsBadReplies(t *testing.T) {
	ops := goodEventual()
	ops[3] = evRMW(2, "a", []string{"w1-1", "w0-1"}, "w2-1", 30, 32, 40, "ok", "w2-1", "w0-1")
	mustFail(t, ops, nil, "reply")
	ops = goodEventual()
	ops[0] = evWrite(0, "a", "w0-1", 0, 10, "ok")
	mustFail(t, ops, nil, "reply")
}

func TestEventualRejectsSlowConvergenceAndTombstones(t *testing.T) {
	fin := goodFinal()
	fin.ConvergedSeconds = 6.5
	mustFail(t, goodEventual(), fin, "convergence")
	fin = goodFinal()
	fin.ConvergedSeconds, fin.ConvergeProblem = -1, "not converged 1m0s after the clients stopped"
	mustFail(t, goodEventual(), fin, "convergence")
	fin = goodFinal()
	fin.KeysStored = 4 // b's deleted object kept somewhere
	mustFail(t, goodEventual(), fin, "tombstones")
	fin = goodFinal()
	fin.Tombstones = 1 // as the nodes count them
	mustFail(t, goodEventual(), fin, "tombstones")
	fin = goodFinal()
	fin.StrippedSeconds = -1
	mustFail(t, goodEventual(), fin, "strip")
	fin = goodFinal()
	fin.FinalReadFailures = []string{"final read of a at n2: quorum-not-reached"}
	mustFail(t, goodEventual(), fin, "final-read")
}

// What --bug eventual-blind-deletes records: the delete of w2-1 sent with
// its read's context but recorded as having read nothing.
func TestEventualCatchesBlindDeletes(t *testing.T) {
	ops := goodEventual()
	for _, o := range ops {
		if o.Kind == "delete" {
			o.Read = nil
		}
	}
	mustFail(t, ops, goodFinal(), "lost-write")
}

func TestEventualProblemsAreCapped(t *testing.T) {
	ops := goodEventual()
	for i := 0; i < 20; i++ {
		ops = append(ops, evWrite(5, "a", "w5-"+string(rune('a'+i)), 160+int64(i), 161+int64(i), "ok", "w5-"+string(rune('a'+i))))
	}
	p := mustFail(t, ops, nil, "lost-write")
	n := 0
	for _, s := range p {
		if strings.HasPrefix(s, "lost-write: ") {
			n++
		}
	}
	if n != evProblemsShown+1 || !strings.Contains(strings.Join(p, "\n"), "lost-write: 12 more (20 in all)") {
		t.Fatalf("not capped: %v", p)
	}
}

func TestEventualFileRoundTrip(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "eventual.history.jsonl")
	if err := writeJSONL(path, goodEventual()); err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(goodFinal())
	os.WriteFile(filepath.Join(dir, "eventual.final.json"), b, 0o644)
	back, err := readJSONL[EvOp](path)
	if err != nil {
		t.Fatal(err)
	}
	mustPass(t, back, goodFinal())
	if code := checkEventualFile(path); code != 0 {
		t.Fatalf("checkEventualFile on a good history: %d", code)
	}
	bad := filepath.Join(t.TempDir(), "eventual.history.jsonl")
	writeJSONL(bad, replaceFinals(goodEventual(), "a", "w1-2", "w2-1"))
	if code := checkEventualFile(bad); code != 1 {
		t.Fatalf("checkEventualFile on a bad history: %d", code)
	}
}
