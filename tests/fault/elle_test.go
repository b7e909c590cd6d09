package main

// Self-test of the append workload's check: histories recorded with the
// workload's own recorder and judged by amulet-sim --check-history, which
// must accept strictly serializable ones and reject a stale read, G2
// (write skew), a lost update and a read of a failed append.

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func simForTest(t *testing.T) {
	t.Helper()
	if SimBin == "" {
		SimBin = defaultSim()
	}
	if _, err := os.Stat(SimBin); err != nil {
		t.Fatalf("no amulet-sim at %s (cargo build --release -p amulet-sim, or set AMULET_SIM): %v", SimBin, err)
	}
}

// txnStep is one transaction of a hand-made history: invoked, then
// completed (in the order the steps are given, with interleaving by
// giving the invoke and completion as separate steps).
type txnStep struct {
	p       int
	invoke  bool
	outcome TxnOutcome
	mops    []Mop
}

func r(k int, vs ...int) Mop         { return Mop{F: "r", K: k, Read: append([]int{}, vs...), Done: true} }
func app(k, v int) Mop               { return Mop{F: "append", K: k, V: v} }
func inv(p int, mops ...Mop) txnStep { return txnStep{p: p, invoke: true, mops: mops} }
func done(p int, o TxnOutcome, mops ...Mop) txnStep {
	return txnStep{p: p, outcome: o, mops: mops}
}

// both invokes and completes at once (no overlap with anything).
func both(p int, o TxnOutcome, mops ...Mop) []txnStep {
	return []txnStep{inv(p, mops...), done(p, o, mops...)}
}

func judge(t *testing.T, steps ...[]txnStep) string {
	t.Helper()
	simForTest(t)
	rec := NewElleRecorder()
	for _, group := range steps {
		for _, s := range group {
			if s.invoke {
				rec.Invoke(s.p, s.mops)
			} else {
				rec.Complete(s.p, s.outcome, s.mops, "")
			}
		}
	}
	path := filepath.Join(t.TempDir(), "append.history.jsonl")
	if err := WriteElle(path, rec.Events()); err != nil {
		t.Fatal(err)
	}
	report, err := CheckElle(path, time.Minute)
	if err != nil {
		t.Fatalf("checker: %v", err)
	}
	return report
}

func seq(s ...txnStep) []txnStep { return s }

func TestElleAcceptsStrictlySerializable(t *testing.T) {
	report := judge(t,
		both(0, TxnOK, app(1, 1), app(2, 2)),
		both(1, TxnOK, r(1, 1), app(1, 3)),
		// Concurrent: 2 reads before 4 lands, 4 reads after 3.
		seq(inv(2, r(2)), inv(3, r(1), app(2, 4))),
		seq(done(3, TxnOK, r(1, 1, 3), app(2, 4)), done(2, TxnOK, r(2, 2))),
		// A failed append (conflict) is never seen; an info one may be.
		both(4, TxnFail, app(1, 5)),
		both(5, TxnInfo, app(1, 6)),
		both(6, TxnOK, r(1, 1, 3, 6), r(2, 2, 4)),
	)
	if report != "" {
		t.Fatalf("a strictly serializable history was rejected: %s", report)
	}
}

func TestElleRejectsStaleRead(t *testing.T) {
	// 1 was appended and acknowledged; a transaction that began after
	// reads the list without it (what a replica answering from an old
	// state gives), then another sees it.
	report := judge(t,
		both(0, TxnOK, app(1, 1)),
		both(1, TxnOK, r(1)),
		both(2, TxnOK, r(1, 1)),
	)
	if report == "" {
		t.Fatal("a stale read was accepted")
	}
	t.Log(report)
}

func TestElleRejectsG2WriteSkew(t *testing.T) {
	// T1 reads x empty and appends to y; T2 reads y empty and appends to
	// x, concurrently; both commit (no conflict detected on the reads).
	report := judge(t,
		seq(inv(0, r(1), app(2, 1)), inv(1, r(2), app(1, 2))),
		seq(done(0, TxnOK, r(1), app(2, 1)), done(1, TxnOK, r(2), app(1, 2))),
		both(2, TxnOK, r(1, 2), r(2, 1)),
	)
	if report == "" {
		t.Fatal("G2 (write skew) was accepted")
	}
	if !strings.Contains(report, "G2") && !strings.Contains(report, "G-single") {
		t.Logf("report names no G2: %s", report)
	}
	t.Log(report)
}

func TestElleRejectsLostUpdate(t *testing.T) {
	// Both read x empty and append; the final list holds both, so the
	// second appended after a version it did not read.
	report := judge(t,
		seq(inv(0, r(1), app(1, 1)), inv(1, r(1), app(1, 2))),
		seq(done(0, TxnOK, r(1), app(1, 1)), done(1, TxnOK, r(1), app(1, 2))),
		both(2, TxnOK, r(1, 1, 2)),
	)
	if report == "" {
		t.Fatal("a lost update was accepted")
	}
	t.Log(report)
}

func TestElleRejectsReadOfFailedAppend(t *testing.T) {
	// A commit answered conflict (recorded fail) must not apply.
	report := judge(t,
		both(0, TxnFail, app(1, 1)),
		both(1, TxnOK, r(1, 1)),
	)
	if report == "" {
		t.Fatal("a read of a failed append was accepted")
	}
	t.Log(report)
}

func TestElleEventFormat(t *testing.T) {
	rec := NewElleRecorder()
	rec.Invoke(3, []Mop{r(1, 9), app(2, 7)})
	rec.Complete(3, TxnOK, []Mop{r(1), app(2, 7)}, "")
	rec.Complete(4, TxnInfo, []Mop{r(1, 5)}, "commit info")
	ev := rec.Events()
	b0, _ := json.Marshal(ev[0])
	b1, _ := json.Marshal(ev[1])
	b2, _ := json.Marshal(ev[2])
	for _, c := range []struct{ got, want string }{
		{string(b0), `"type":"invoke","f":"txn","process":3,"value":[["r",1,null],["append",2,7]]`},
		{string(b1), `"type":"ok","f":"txn","process":3,"value":[["r",1,[]],["append",2,7]]`},
		{string(b2), `"type":"info","f":"txn","process":4,"value":[["r",1,null]]`},
	} {
		if !strings.Contains(c.got, c.want) {
			t.Errorf("%s does not contain %s", c.got, c.want)
		}
	}
	var back ElleEvent
	if err := json.Unmarshal(b1, &back); err != nil || !back.Value[0].Done || len(back.Value[0].Read) != 0 || back.Value[1].V != 7 {
		t.Errorf("round trip: %+v %v", back, err)
	}
}

func TestListEncoding(t *testing.T) {
	xs, err := parseList(encodeList([]int{3, 10, 7}))
	if err != nil || len(xs) != 3 || xs[1] != 10 {
		t.Fatalf("%v %v", xs, err)
	}
	if xs, err := parseList(nil); err != nil || len(xs) != 0 {
		t.Fatalf("%v %v", xs, err)
	}
	if _, err := parseList([]byte("1,x")); err == nil {
		t.Fatal("a malformed list parsed")
	}
}

func TestBankAuditChecks(t *testing.T) {
	b := &bankRun{total: 300, accounts: []string{"a", "b", "c"}}
	b.checkAudit("audit", 1, 7, map[string]int64{"a": 100, "b": 150, "c": 50}, 300)
	if len(b.problems) != 0 {
		t.Fatalf("a right audit was reported: %v", b.problems)
	}
	// A torn read: a transfer of 30 from b to a seen half.
	b.checkAudit("audit", 1, 8, map[string]int64{"a": 130, "b": 150, "c": 50}, 330)
	if len(b.problems) != 1 || !strings.Contains(b.problems[0], "saw total 330, want 300: a=130 b=150 c=50") {
		t.Fatalf("a wrong total was not reported with the values: %v", b.problems)
	}
	b.checkAudit("audit", 1, 9, map[string]int64{"a": 350, "b": 0, "c": -50}, 300)
	if len(b.problems) != 2 || !strings.Contains(b.problems[1], "negative") {
		t.Fatalf("a negative balance was not reported: %v", b.problems)
	}
}
