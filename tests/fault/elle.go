package main

// Transactional workloads (append, bank) and what they share: the Elle
// history recorder and the project's checker (amulet-sim --check-history).

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"sort"
	"strings"
	"sync"
	"time"
)

// TxnWorkload is a transactional workload's run in one scenario.
type TxnWorkload interface {
	// Worker runs one sequential client until stop closes.
	Worker(stop <-chan struct{}, conn *Conn, seed int64)
	// Final runs the final reads after the last heal.
	Final(conn *Conn) error
	// Summary is one Op per transaction (kind, call, return, status ok /
	// unknown / fail) for the scenario's counts and stall.
	Summary() []*Op
	// Check writes the histories into dir and checks them: the verdict
	// for `checks`, the anomalies, and a line of details (counts).
	Check(dir string, timeout time.Duration) (verdict string, problems []string, details string)
}

// SimBin is amulet-sim, whose --check-history judges Elle list-append
// histories (strict serializability).
var SimBin string

// ---- Elle histories -------------------------------------------------------

// Mop is one micro-operation: ["r", k, null|[v...]] or ["append", k, v].
type Mop struct {
	F    string // "r" or "append"
	K    int
	V    int   // append
	Read []int // r, once read (nil: not known)
	Done bool  // r: Read is known ([] for an empty list)
}

func (m Mop) MarshalJSON() ([]byte, error) {
	if m.F == "append" {
		return json.Marshal([]any{"append", m.K, m.V})
	}
	if !m.Done {
		return json.Marshal([]any{"r", m.K, nil})
	}
	read := m.Read
	if read == nil {
		read = []int{}
	}
	return json.Marshal([]any{"r", m.K, read})
}

func (m *Mop) UnmarshalJSON(b []byte) error {
	var parts []json.RawMessage
	if err := json.Unmarshal(b, &parts); err != nil || len(parts) != 3 {
		return fmt.Errorf("micro-op is not [f k v]: %s", b)
	}
	if err := json.Unmarshal(parts[0], &m.F); err != nil {
		return err
	}
	if err := json.Unmarshal(parts[1], &m.K); err != nil {
		return err
	}
	if m.F == "append" {
		return json.Unmarshal(parts[2], &m.V)
	}
	if string(parts[2]) == "null" {
		return nil
	}
	m.Done = true
	return json.Unmarshal(parts[2], &m.Read)
}

// ElleEvent is one line of an Elle JSON history.
type ElleEvent struct {
	Type    string `json:"type"` // invoke | ok | fail | info
	F       string `json:"f"`    // always "txn"
	Process int    `json:"process"`
	Value   []Mop  `json:"value"`
	Time    int64  `json:"time"` // ns since the run began
	Error   string `json:"error,omitempty"`
}

// ElleRecorder keeps the events in the order they happened: an invoke is
// recorded before the transaction's first request, its completion after
// its last answer, so the file order is the real-time order Elle reads.
type ElleRecorder struct {
	mu        sync.Mutex
	start     time.Time
	events    []ElleEvent
	processes int
}

func NewElleRecorder() *ElleRecorder { return &ElleRecorder{start: time.Now()} }

func (r *ElleRecorder) now() int64 { return int64(time.Since(r.start)) }

// NewProcess is a process number never used before (a process that had an
// info continues as a new one).
func (r *ElleRecorder) NewProcess() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.processes++
	return r.processes - 1
}

func (r *ElleRecorder) Invoke(p int, mops []Mop) int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	t := r.now()
	inv := make([]Mop, len(mops))
	for i, m := range mops {
		inv[i] = Mop{F: m.F, K: m.K, V: m.V}
	}
	r.events = append(r.events, ElleEvent{Type: "invoke", F: "txn", Process: p, Value: inv, Time: t})
	return t
}

// Complete records the completion: ok with mops' reads, fail or info with
// the invocation's value.
func (r *ElleRecorder) Complete(p int, o TxnOutcome, mops []Mop, errMsg string) int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	t := r.now()
	val := make([]Mop, len(mops))
	for i, m := range mops {
		val[i] = Mop{F: m.F, K: m.K, V: m.V}
		if o == TxnOK && m.F == "r" {
			val[i].Read, val[i].Done = m.Read, true
		}
	}
	r.events = append(r.events, ElleEvent{Type: o.String(), F: "txn", Process: p, Value: val, Time: t, Error: errMsg})
	return t
}

func (r *ElleRecorder) Events() []ElleEvent {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]ElleEvent(nil), r.events...)
}

// WriteElle writes events as JSON lines.
func WriteElle(path string, events []ElleEvent) error {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	for _, e := range events {
		if err := enc.Encode(e); err != nil {
			return err
		}
	}
	return os.WriteFile(path, b.Bytes(), 0o644)
}

// CheckElle runs `amulet-sim --check-history path`: "" if strictly
// serializable, else the checker's report; err if the checker could not
// judge (missing, timed out, not a history).
func CheckElle(path string, timeout time.Duration) (report string, err error) {
	if SimBin == "" {
		return "", errors.New("no amulet-sim binary (-sim)")
	}
	if _, serr := os.Stat(SimBin); serr != nil {
		return "", fmt.Errorf("no amulet-sim at %s (cargo build --release -p amulet-sim): %v", SimBin, serr)
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	out, err := exec.CommandContext(ctx, SimBin, "--check-history", path).CombinedOutput()
	text := strings.TrimSpace(string(out))
	if err == nil {
		return "", nil
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) && ee.ExitCode() == 1 {
		if text == "" {
			text = "invalid (no report)"
		}
		return text, nil
	}
	if ctx.Err() != nil {
		return "", fmt.Errorf("amulet-sim --check-history timed out after %s", timeout)
	}
	return "", fmt.Errorf("amulet-sim --check-history: %v: %s", err, text)
}

// ---- shared counters --------------------------------------------------------

// txnStats counts transactions by outcome and why they failed.
type txnStats struct {
	mu       sync.Mutex
	ok       int
	readOnly int // ok without a commit
	fail     int
	info     int
	why      map[string]int // fail/info reasons: stage[kind]
	multi    int            // commits sent that involved more than one partition
	retries  map[string]int // ReadAt attempts that failed, by answer
	doomSent int
	doomAck  int
}

func (s *txnStats) add(o TxnOutcome, err error, readOnly bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.why == nil {
		s.why = map[string]int{}
	}
	switch o {
	case TxnOK:
		s.ok++
		if readOnly {
			s.readOnly++
		}
		return
	case TxnFail:
		s.fail++
	case TxnInfo:
		s.info++
	}
	var te *TxnError
	reason := "other"
	if errors.As(err, &te) {
		reason = te.Stage
		if te.Kind != "" {
			reason += ":" + te.Kind
		} else if strings.Contains(te.Msg, "gave up") {
			reason += ":gave-up"
		}
	}
	s.why[o.String()+" "+reason]++
}

// addRetries is called with s.mu held.
func (s *txnStats) addRetries(m map[string]int) {
	if s.retries == nil {
		s.retries = map[string]int{}
	}
	for k, n := range m {
		s.retries[k] += n
	}
}

func (s *txnStats) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var why []string
	for k, n := range s.why {
		why = append(why, fmt.Sprintf("%s %d", k, n))
	}
	sort.Strings(why)
	var retries []string
	for k, n := range s.retries {
		retries = append(retries, fmt.Sprintf("%s %d", k, n))
	}
	sort.Strings(retries)
	return fmt.Sprintf("txns %d: ok %d (read-only %d), fail %d, info %d; multi-partition commits %d; doomed commits sent %d, acknowledged %d; failed/retried ReadAt attempts [%s]; not ok: [%s]",
		s.ok+s.fail+s.info, s.ok, s.readOnly, s.fail, s.info, s.multi, s.doomSent, s.doomAck, strings.Join(retries, ", "), strings.Join(why, ", "))
}

// outcomeOf is the outcome an error of a transaction means.
func outcomeOf(err error) TxnOutcome {
	if err == nil {
		return TxnOK
	}
	var te *TxnError
	if errors.As(err, &te) {
		return te.Outcome
	}
	return TxnFail // errors before any commit: nothing written
}

func statusOf(o TxnOutcome) string {
	switch o {
	case TxnOK:
		return "ok"
	case TxnInfo:
		return "unknown"
	}
	return "fail"
}

func writeText(path, text string) { os.WriteFile(path, []byte(text+"\n"), 0o644) }
