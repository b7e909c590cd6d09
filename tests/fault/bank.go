package main

// The `bank` workload: bankAccounts accounts (keys of the hash map `bank`,
// chosen so that every partition holds some) start with bankInitial each.
// Transfers move a random amount between two accounts in a transaction
// (read both, write both; refused without a commit if the source would go
// negative); a tenth of the transactions are read-only audits that read
// every account at one read version and must see the initial total, and
// no negative balance. After the last heal a final audit must see it too.
// Every transaction is a line of bank.history.jsonl.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"sync"
	"time"
)

const (
	bankMap      = "bank"
	bankAccounts = 8
	bankInitial  = 100
	bankMaxMove  = 20
)

// BankOp is one line of bank.history.jsonl.
type BankOp struct {
	Process     int              `json:"process"`
	Op          string           `json:"op"` // transfer | audit
	From        string           `json:"from,omitempty"`
	To          string           `json:"to,omitempty"`
	Amount      int64            `json:"amount,omitempty"`
	Call        int64            `json:"call"`
	Return      int64            `json:"return"`
	Status      string           `json:"status"` // ok | refused (a transfer without funds: no commit) | fail | info
	ReadVersion uint64           `json:"read_version,omitempty"`
	Read        map[string]int64 `json:"read,omitempty"` // balances read
	Total       *int64           `json:"total,omitempty"`
	Error       string           `json:"error,omitempty"`
	Final       bool             `json:"final,omitempty"`
}

type bankRun struct {
	accounts []string
	total    int64
	start    time.Time

	mu       sync.Mutex
	ops      []*BankOp
	sum      []*Op
	problems []string
	procs    int
	audits   int
	refused  int
	stats    txnStats
}

// newBankRun picks the accounts (spread over the partitions) and writes
// their initial balances with one blind commit, then audits them.
func newBankRun(conn *Conn, logf func(string, ...any), seed int64) (TxnWorkload, error) {
	b := &bankRun{total: bankAccounts * bankInitial, start: time.Now()}
	r, err := conn.Routing(context.Background())
	if err != nil {
		return nil, err
	}
	parts := r.AllPartitions()
	per := map[uint32]int{}
	limit := (bankAccounts + len(parts) - 1) / len(parts)
	for i := 0; len(b.accounts) < bankAccounts && i < 10000; i++ {
		k := "acct" + strconv.Itoa(i)
		p := r.PartitionOf([]byte(k))
		if per[p] < limit {
			per[p]++
			b.accounts = append(b.accounts, k)
		}
	}
	logf("bank: accounts %v, per partition %v", b.accounts, per)
	deadline := time.Now().Add(60 * time.Second)
	var last error
	for time.Now().Before(deadline) {
		tc := NewTxnClient(conn)
		t := tc.Begin(context.Background())
		for _, a := range b.accounts {
			t.Put(bankMap, a, []byte(strconv.Itoa(bankInitial)))
		}
		if last = t.Commit(); last == nil {
			break
		}
		time.Sleep(500 * time.Millisecond)
	}
	if last != nil {
		return nil, fmt.Errorf("bank: initial balances: %v", last)
	}
	for i := 0; i < 3; i++ {
		var sum int64
		var bal map[string]int64
		_, bal, sum, last = b.audit(NewTxnClient(conn))
		if last == nil {
			if sum != b.total {
				return nil, fmt.Errorf("bank: after the initial commit an audit sees %v (total %d, want %d)", bal, sum, b.total)
			}
			return b, nil
		}
	}
	return nil, fmt.Errorf("bank: first audit: %v", last)
}

func (b *bankRun) now() int64 { return int64(time.Since(b.start)) }

func (b *bankRun) problem(format string, args ...any) {
	b.mu.Lock()
	b.problems = append(b.problems, fmt.Sprintf(format, args...))
	b.mu.Unlock()
}

func (b *bankRun) newProcess() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.procs++
	return b.procs - 1
}

func (b *bankRun) record(op *BankOp, o TxnOutcome) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.ops = append(b.ops, op)
	ret := op.Return
	if o == TxnInfo {
		ret = -1
	}
	b.sum = append(b.sum, &Op{Client: op.Process, Kind: op.Op, Call: op.Call, Return: ret, Status: statusOf(o), Err: op.Error, Final: op.Final})
}

func balance(v []byte, ok bool) (int64, error) {
	if !ok {
		return 0, fmt.Errorf("absent")
	}
	n, err := strconv.ParseInt(string(v), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("not a number: %q", v)
	}
	return n, nil
}

// audit reads every account at one read version (read-only: no commit).
func (b *bankRun) audit(tc *TxnClient) (uint64, map[string]int64, int64, error) {
	t := tc.Begin(context.Background())
	defer t.Abandon()
	bal := map[string]int64{}
	var sum int64
	for _, a := range b.accounts {
		v, ok, err := t.Get(bankMap, a)
		if err != nil {
			return t.Version(), nil, 0, err
		}
		n, err := balance(v, ok)
		if err != nil {
			return t.Version(), nil, 0, &TxnError{Outcome: TxnFail, Stage: "read", Kind: "bad-balance",
				Msg: fmt.Sprintf("account %s: %v (read version %d)", a, err, t.Version())}
		}
		bal[a] = n
		sum += n
	}
	return t.Version(), bal, sum, t.Commit()
}

// transfer moves amount from -> to, or refuses (no commit) without funds.
func (b *bankRun) transfer(tc *TxnClient, op *BankOp) (refused bool, err error) {
	t := tc.Begin(context.Background())
	defer func() {
		op.ReadVersion = t.Version()
		if err != nil {
			t.Abandon()
		}
		b.stats.mu.Lock()
		b.stats.addRetries(t.ReadRetries)
		if t.Involved > 1 {
			b.stats.multi++
		}
		b.stats.mu.Unlock()
	}()
	op.Read = map[string]int64{}
	for _, a := range []string{op.From, op.To} {
		v, ok, err := t.Get(bankMap, a)
		if err != nil {
			return false, err
		}
		n, err := balance(v, ok)
		if err != nil {
			return false, &TxnError{Outcome: TxnFail, Stage: "read", Kind: "bad-balance",
				Msg: fmt.Sprintf("account %s: %v (read version %d)", a, err, t.Version())}
		}
		op.Read[a] = n
	}
	from, to := op.Read[op.From], op.Read[op.To]
	if from < op.Amount {
		return true, t.Commit() // nothing written: no commit sent
	}
	t.Put(bankMap, op.From, []byte(strconv.FormatInt(from-op.Amount, 10)))
	t.Put(bankMap, op.To, []byte(strconv.FormatInt(to+op.Amount, 10)))
	return false, t.Commit()
}

// checkAudit: an audit must see the initial total (and no negative balance).
func (b *bankRun) checkAudit(what string, p int, rv uint64, read map[string]int64, sum int64) {
	if sum != b.total {
		b.problem("%s at read version %d (process %d) saw total %d, want %d: %s", what, rv, p, sum, b.total, showBalances(read))
	}
	b.checkRead(what, rv, read)
}

func (b *bankRun) checkRead(what string, rv uint64, read map[string]int64) {
	for a, n := range read {
		if n < 0 {
			b.problem("%s at read version %d saw account %s at %d (negative): %v", what, rv, a, n, read)
		}
	}
}

func (b *bankRun) Worker(stop <-chan struct{}, conn *Conn, seed int64) {
	rng := rand.New(rand.NewSource(seed))
	tc := NewTxnClient(conn)
	p := b.newProcess()
	for {
		select {
		case <-stop:
			return
		default:
		}
		tc.CommitDoomed = rng.Intn(2) == 0
		before := [2]int{tc.DoomedSent, tc.DoomedAcked}
		var o TxnOutcome
		var err error
		op := &BankOp{Process: p, Call: b.now()}
		if rng.Intn(10) == 0 {
			op.Op = "audit"
			var sum int64
			op.ReadVersion, op.Read, sum, err = b.audit(tc)
			op.Return = b.now()
			o = outcomeOf(err)
			b.stats.add(o, err, true)
			if err == nil {
				op.Total = &sum
				b.mu.Lock()
				b.audits++
				b.mu.Unlock()
				b.checkAudit("audit", p, op.ReadVersion, op.Read, sum)
			}
		} else {
			op.Op = "transfer"
			i := rng.Intn(len(b.accounts))
			j := (i + 1 + rng.Intn(len(b.accounts)-1)) % len(b.accounts)
			op.From, op.To, op.Amount = b.accounts[i], b.accounts[j], 1+rng.Int63n(bankMaxMove)
			var refused bool
			refused, err = b.transfer(tc, op)
			op.Return = b.now()
			o = outcomeOf(err)
			b.stats.add(o, err, refused)
			if o == TxnOK && refused {
				b.mu.Lock()
				b.refused++
				b.mu.Unlock()
			}
			if op.Read != nil && len(op.Read) == 2 {
				b.checkRead("transfer", op.ReadVersion, op.Read)
			}
			if o == TxnOK && refused {
				op.Status = "refused"
			}
		}
		if op.Status == "" {
			op.Status = o.String()
		}
		if err != nil {
			op.Error = err.Error()
		}
		b.stats.mu.Lock()
		b.stats.doomSent += tc.DoomedSent - before[0]
		b.stats.doomAck += tc.DoomedAcked - before[1]
		b.stats.mu.Unlock()
		if tc.DoomedAcked > before[1] {
			b.problem("process %d: a transfer whose read answered written_since was acknowledged: %+v", p, op)
		}
		b.record(op, o)
		if o == TxnInfo {
			p = b.newProcess()
		}
		if err != nil {
			var te *TxnError
			if !(asTxnError(err, &te) && (te.Kind == "conflict" || te.Kind == "written-since" || te.Kind == "read-version-too-old")) {
				tc.NewSession()
			}
		}
		time.Sleep(time.Duration(rng.Int63n(int64(10 * time.Millisecond))))
	}
}

func showBalances(m map[string]int64) string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	var b bytes.Buffer
	for i, k := range ks {
		if i > 0 {
			b.WriteString(" ")
		}
		fmt.Fprintf(&b, "%s=%d", k, m[k])
	}
	return b.String()
}

// Final: an audit after the last heal (fresh client; up to 3 tries) must
// see the initial total.
func (b *bankRun) Final(conn *Conn) error {
	var last error
	for attempt := 0; attempt < 3; attempt++ {
		p := b.newProcess()
		op := &BankOp{Process: p, Op: "audit", Call: b.now(), Final: true}
		var sum int64
		var err error
		op.ReadVersion, op.Read, sum, err = b.audit(NewTxnClient(conn))
		op.Return = b.now()
		o := outcomeOf(err)
		op.Status = o.String()
		if err == nil {
			op.Total = &sum
			b.record(op, o)
			b.checkAudit("final audit", p, op.ReadVersion, op.Read, sum)
			return nil
		}
		op.Error = err.Error()
		b.record(op, o)
		last = err
		time.Sleep(time.Second)
	}
	return fmt.Errorf("final audit: %v", last)
}

func (b *bankRun) Summary() []*Op {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]*Op(nil), b.sum...)
}

func (b *bankRun) Check(dir string, timeout time.Duration) (string, []string, string) {
	b.mu.Lock()
	ops := append([]*BankOp(nil), b.ops...)
	problems := append([]string(nil), b.problems...)
	audits, refused := b.audits, b.refused
	b.mu.Unlock()
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	for _, o := range ops {
		enc.Encode(o)
	}
	if err := os.WriteFile(filepath.Join(dir, "bank.history.jsonl"), buf.Bytes(), 0o644); err != nil {
		problems = append(problems, err.Error())
	}
	verdict := fmt.Sprintf("total %d in %d audits", b.total, audits)
	if len(problems) > 0 {
		verdict = "ANOMALIES"
	}
	details := fmt.Sprintf("%s; audits %d, transfers refused for funds %d", b.stats.String(), audits, refused)
	return verdict, problems, details
}
