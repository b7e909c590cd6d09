package main

// The `append` workload (Elle's list-append): every transaction reads some
// lists and appends unique integers to some. A list is the value of one
// key of the hash map `txa` (so the keys spread over the partitions),
// comma-separated decimals; an append reads the list at the read version
// (or this transaction's own write of it) and writes it back longer. The
// history is Elle's JSON lines (append.history.jsonl), checked strictly
// serializable by `amulet-sim --check-history`.

import (
	"context"
	"fmt"
	"math/rand"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
)

const appendMap = "txa"

// Key pool: activeKeys keys at a time, each retired (replaced by a fresh
// one) once maxWritesPerKey appends were scheduled on it, so lists stay
// short (Elle's usual generator).
const (
	appendActiveKeys      = 8
	appendMaxWritesPerKey = 64
	appendMaxTxnLen       = 4
)

type appendRun struct {
	rec   *ElleRecorder
	sumMu sync.Mutex
	sum   []*Op
	stats txnStats

	mu      sync.Mutex
	active  []int
	writes  map[int]int
	nextKey int
	nextVal int

	problemsMu sync.Mutex
	problems   []string
}

func newAppendRun(conn *Conn, logf func(string, ...any), seed int64) (TxnWorkload, error) {
	a := &appendRun{rec: NewElleRecorder(), writes: map[int]int{}}
	for i := 0; i < appendActiveKeys; i++ {
		a.active = append(a.active, a.nextKey)
		a.nextKey++
	}
	return a, nil
}

func appendKey(k int) string { return "x" + strconv.Itoa(k) }

func (a *appendRun) problem(format string, args ...any) {
	a.problemsMu.Lock()
	a.problems = append(a.problems, fmt.Sprintf(format, args...))
	a.problemsMu.Unlock()
}

// gen draws a transaction: 1..appendMaxTxnLen micro-ops on active keys,
// reads and appends half and half, appended values unique in the run.
func (a *appendRun) gen(rng *rand.Rand) []Mop {
	a.mu.Lock()
	defer a.mu.Unlock()
	n := 1 + rng.Intn(appendMaxTxnLen)
	var mops []Mop
	for i := 0; i < n; i++ {
		j := rng.Intn(len(a.active))
		k := a.active[j]
		if rng.Intn(2) == 0 {
			mops = append(mops, Mop{F: "r", K: k})
			continue
		}
		a.nextVal++
		mops = append(mops, Mop{F: "append", K: k, V: a.nextVal})
		a.writes[k]++
		if a.writes[k] >= appendMaxWritesPerKey {
			a.active[j] = a.nextKey
			a.nextKey++
		}
	}
	return mops
}

func (a *appendRun) allKeys() []int {
	a.mu.Lock()
	defer a.mu.Unlock()
	var out []int
	for k := 0; k < a.nextKey; k++ {
		out = append(out, k)
	}
	return out
}

func parseList(v []byte) ([]int, error) {
	if len(v) == 0 {
		return []int{}, nil
	}
	parts := strings.Split(string(v), ",")
	out := make([]int, 0, len(parts))
	for _, p := range parts {
		n, err := strconv.Atoi(p)
		if err != nil {
			return nil, fmt.Errorf("not a list of integers: %q", v)
		}
		out = append(out, n)
	}
	return out, nil
}

func encodeList(xs []int) []byte {
	var b strings.Builder
	for i, x := range xs {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.Itoa(x))
	}
	return []byte(b.String())
}

// runTxn runs mops as one transaction, filling in the reads. seen is the
// worker's last view of each list (used only by the injected stale-reads
// bug).
func (a *appendRun) runTxn(tc *TxnClient, mops []Mop, rng *rand.Rand, seen map[int][]int) (err error) {
	t := tc.Begin(context.Background())
	defer func() {
		if err != nil {
			t.Abandon()
		}
		a.stats.mu.Lock()
		a.stats.addRetries(t.ReadRetries)
		if t.Involved > 1 {
			a.stats.multi++
		}
		a.stats.mu.Unlock()
	}()
	for i := range mops {
		m := &mops[i]
		key := appendKey(m.K)
		if m.F == "r" && InjectBug == "stale-reads" && rng != nil && rng.Intn(4) == 0 {
			// The injected bug: answer from this client's earlier view.
			if old, ok := seen[m.K]; ok {
				m.Read, m.Done = append([]int(nil), old...), true
				continue
			}
		}
		v, _, err := t.Get(appendMap, key)
		if err != nil {
			return err
		}
		list, perr := parseList(v)
		if perr != nil {
			a.problem("key %d: %v (read version %d)", m.K, perr, t.Version())
			return &TxnError{Outcome: TxnFail, Stage: "read", Kind: "malformed", Msg: perr.Error()}
		}
		if m.F == "r" {
			m.Read, m.Done = list, true
			continue
		}
		t.Put(appendMap, key, encodeList(append(list, m.V)))
	}
	return t.Commit()
}

func (a *appendRun) Worker(stop <-chan struct{}, conn *Conn, seed int64) {
	rng := rand.New(rand.NewSource(seed))
	tc := NewTxnClient(conn)
	p := a.rec.NewProcess()
	seen := map[int][]int{}
	for n := 0; ; n++ {
		select {
		case <-stop:
			return
		default:
		}
		mops := a.gen(rng)
		readOnly := true
		for _, m := range mops {
			if m.F == "append" {
				readOnly = false
			}
		}
		tc.CommitDoomed = rng.Intn(2) == 0
		call := a.rec.Invoke(p, mops)
		before := [2]int{tc.DoomedSent, tc.DoomedAcked}
		err := a.runTxn(tc, mops, rng, seen)
		o := outcomeOf(err)
		msg := ""
		if err != nil {
			msg = err.Error()
		}
		ret := a.rec.Complete(p, o, mops, msg)
		a.stats.add(o, err, readOnly)
		a.stats.mu.Lock()
		a.stats.doomSent += tc.DoomedSent - before[0]
		a.stats.doomAck += tc.DoomedAcked - before[1]
		a.stats.mu.Unlock()
		if tc.DoomedAcked > before[1] {
			a.problem("process %d: a commit whose read answered written_since was acknowledged: %v", p, mops)
		}
		op := &Op{Client: p, Kind: "txn", Call: call, Return: ret, Status: statusOf(o), Err: msg}
		if o == TxnInfo {
			op.Return = -1
		}
		a.sumMu.Lock()
		a.sum = append(a.sum, op)
		a.sumMu.Unlock()
		if o == TxnOK {
			for _, m := range mops {
				if m.F == "r" && m.Done {
					seen[m.K] = m.Read
				}
			}
		}
		if o == TxnInfo {
			p = a.rec.NewProcess()
		}
		if err != nil && o != TxnOK {
			var te *TxnError
			if !(asTxnError(err, &te) && (te.Kind == "conflict" || te.Kind == "written-since" || te.Kind == "read-version-too-old")) {
				tc.NewSession()
			}
		}
		time.Sleep(time.Duration(rng.Int63n(int64(10 * time.Millisecond))))
	}
}

func asTxnError(err error, te **TxnError) bool {
	e, ok := err.(*TxnError)
	if ok {
		*te = e
	}
	return ok
}

// Final reads every key ever used in one read-only transaction (a fresh
// process); up to 3 tries.
func (a *appendRun) Final(conn *Conn) error {
	keys := a.allKeys()
	var last error
	for attempt := 0; attempt < 3; attempt++ {
		tc := NewTxnClient(conn)
		p := a.rec.NewProcess()
		var mops []Mop
		for _, k := range keys {
			mops = append(mops, Mop{F: "r", K: k})
		}
		call := a.rec.Invoke(p, mops)
		err := a.runTxn(tc, mops, nil, nil)
		o := outcomeOf(err)
		msg := ""
		if err != nil {
			msg = err.Error()
		}
		ret := a.rec.Complete(p, o, mops, msg)
		a.sumMu.Lock()
		a.sum = append(a.sum, &Op{Client: p, Kind: "txn", Call: call, Return: ret, Status: statusOf(o), Err: msg, Final: true})
		a.sumMu.Unlock()
		if err == nil {
			return nil
		}
		last = err
		time.Sleep(time.Second)
	}
	return fmt.Errorf("final read of %d keys: %v", len(keys), last)
}

func (a *appendRun) Summary() []*Op {
	a.sumMu.Lock()
	defer a.sumMu.Unlock()
	return append([]*Op(nil), a.sum...)
}

func (a *appendRun) Check(dir string, timeout time.Duration) (string, []string, string) {
	path := filepath.Join(dir, "append.history.jsonl")
	a.problemsMu.Lock()
	problems := append([]string(nil), a.problems...)
	a.problemsMu.Unlock()
	if err := WriteElle(path, a.rec.Events()); err != nil {
		return "history-not-written", append(problems, err.Error()), a.stats.String()
	}
	report, err := CheckElle(path, timeout)
	verdict := "strict-serializable"
	switch {
	case err != nil:
		verdict = "not-checked"
		problems = append(problems, "checker: "+err.Error())
	case report != "":
		verdict = "NOT-strict-serializable"
		writeText(filepath.Join(dir, "append.check.txt"), report)
		if len(report) > 1500 {
			report = report[:1500] + "... (see append.check.txt)"
		}
		problems = append(problems, "amulet-sim --check-history "+path+": "+report)
	}
	return verdict, problems, a.stats.String()
}
