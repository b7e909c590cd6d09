package main

// Workloads: several sequential clients, each with its own session; a
// client that sees an error continues under a new client id (and session).

import (
	"context"
	"fmt"
	"math/rand"
	"sort"
	"strings"
	"sync"
	"time"

	"amuletfault/pb"

	"github.com/anishathalye/porcupine"
)

type Workload struct {
	Name  string
	Map   string
	Keys  []string
	Model porcupine.Model
	// Operation mix: kind -> weight.
	Mix map[string]int
	// A workload with its own client, history and checker (the
	// transactional append and bank, and log): its run in a scenario,
	// made once the cluster is up (no Model, Keys or Mix).
	NewTxn func(conn *Conn, logf func(string, ...any), seed int64) (TxnWorkload, error)
}

func keys(prefix string, n int) []string {
	var out []string
	for i := 0; i < n; i++ {
		out = append(out, fmt.Sprintf("%s%d", prefix, i))
	}
	return out
}

var Workloads = map[string]*Workload{
	// Single-key get/put/CAS registers over a small key space.
	"register": {Name: "register", Map: "reg", Keys: keys("r", 5), Model: RegisterModel,
		Mix: map[string]int{"get": 40, "put": 35, "cas": 25}},
	// Whole-map reads (size, scans) on a small map.
	"map": {Name: "map", Map: "wmap", Keys: keys("m", 6), Model: MapModel,
		Mix: map[string]int{"put": 35, "del": 15, "size": 25, "scan": 25}},
	// Snapshot scans against concurrent writes.
	"snapshot": {Name: "snapshot", Map: "snap", Keys: keys("s", 6), Model: MapModel,
		Mix: map[string]int{"put": 45, "del": 15, "snap": 40}},
	// Transactions: Elle's list-append (append.go), checked strictly
	// serializable by amulet-sim --check-history.
	"append": {Name: "append", Map: appendMap, NewTxn: newAppendRun},
	// Transactions: transfers between accounts and audits of the total (bank.go).
	"bank": {Name: "bank", Map: bankMap, NewTxn: newBankRun},
	// DLog: appends, multi-appends over two logs in different partitions,
	// reads, bounds and trims, checked by porcupine against a model of
	// the logs, and a final whole read of each log (log.go).
	"log": {Name: "log", NewTxn: newLogRun},
	// Eventual maps: read-modify-writes, blind writes (siblings), deletes
	// and reads on 8 keys of a map with 3 replicas per key, checked
	// against an oracle of which write superseded which value, with
	// convergence within 5 s of the heal and no tombstones (eventual.go).
	"eventual": {Name: "eventual", Map: eventualMap, NewTxn: newEventualRun},
}

// InjectBug names a deliberately injected bug ("" for none): "stale-reads"
// answers a quarter of the gets and scans (and of the log workload's reads
// and bounds) from the client's earlier view instead of asking the
// cluster, to show that the checkers catch it;
// "local-reads" and "tail-skips" are in the nodes (every replica answers
// single-partition reads from its own state without ordering them; a
// TailLog read from inside a log starts one entry late), and the client
// does nothing different. "eventual-blind-deletes" is in the eventual
// workload's client: its deletes are sent with a read's context but
// recorded as having read nothing. "no-self-healing" and
// "hasty-failure-detector" are in the nodes' configurations (cluster.go):
// self-healing off, and edges failed after 1 s of silence.
var InjectBug string

type Recorder struct {
	mu      sync.Mutex
	start   time.Time
	ops     []*Op
	clients int
}

func NewRecorder() *Recorder { return &Recorder{start: time.Now()} }

func (r *Recorder) now() int64 { return int64(time.Since(r.start)) }

func (r *Recorder) newClient() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.clients++
	return r.clients - 1
}

func (r *Recorder) add(o *Op) {
	r.mu.Lock()
	r.ops = append(r.ops, o)
	r.mu.Unlock()
}

func (r *Recorder) Ops() []*Op {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := append([]*Op(nil), r.ops...)
	sort.SliceStable(out, func(i, j int) bool { return out[i].Call < out[j].Call })
	return out
}

func pickKind(rng *rand.Rand, mix map[string]int) string {
	var kinds []string
	total := 0
	for k, w := range mix {
		kinds = append(kinds, k)
		total += w
	}
	sort.Strings(kinds)
	x := rng.Intn(total)
	for _, k := range kinds {
		x -= mix[k]
		if x < 0 {
			return k
		}
	}
	return kinds[0]
}

// RunWorker runs one sequential logical client until stop closes.
func RunWorker(stop <-chan struct{}, conn *Conn, w *Workload, rec *Recorder, seed int64, think time.Duration) {
	rng := rand.New(rand.NewSource(seed))
	client := rec.newClient()
	sess := conn.NewSession()
	seen := map[string]string{} // key -> a value this client saw there
	lastScan := ""
	n := 0
	for {
		select {
		case <-stop:
			return
		default:
		}
		kind := pickKind(rng, w.Mix)
		op := &Op{Client: client, Kind: kind}
		if kind != "size" && kind != "scan" && kind != "snap" {
			op.Key = w.Keys[rng.Intn(len(w.Keys))]
		}
		if kind == "put" || kind == "cas" {
			n++
			op.Value = fmt.Sprintf("c%d.%d", client, n)
		}
		if kind == "cas" {
			// Values are never empty, so "" would mean absent; a CAS on an
			// absent key compares with a value nobody writes.
			op.Expected = seen[op.Key]
			if op.Expected == "" || rng.Intn(5) == 0 {
				op.Expected = "never-written"
			}
		}
		op.Call = rec.now()
		var ret int64
		var err error
		if InjectBug == "stale-reads" && (kind == "get" || kind == "scan") && rng.Intn(4) == 0 {
			// The injected bug: answer the read from this client's own
			// earlier view (a replica serving local state without ordering
			// the read), after a pause as long as a real read.
			time.Sleep(5 * time.Millisecond)
			if kind == "get" {
				op.Out = seen[op.Key]
			} else {
				op.Entries = lastScan
			}
		} else {
			ret, err = DoOp(context.Background(), conn, sess, w.Map, op, rec.now)
		}
		if err == nil && kind == "scan" {
			lastScan = op.Entries
		}
		if err == nil {
			op.Status = "ok"
			op.Return = ret
			if ret == 0 {
				op.Return = rec.now()
			}
			switch op.Kind {
			case "get":
				seen[op.Key] = op.Out
			case "put":
				seen[op.Key] = op.Value
			case "cas":
				if op.Flag {
					seen[op.Key] = op.Value
				}
			case "del":
				seen[op.Key] = ""
			}
		} else {
			op.Err = err.Error()
			op.Return = -1
			oe, isOp := err.(*OpError)
			if op.IsWrite() && (!isOp || oe.MaybeApplied) {
				op.Status = "unknown"
			} else {
				op.Status = "fail"
			}
			client = rec.newClient()
			sess = conn.NewSession()
		}
		rec.add(op)
		if think > 0 {
			time.Sleep(time.Duration(rng.Int63n(int64(think))))
		}
	}
}

func entriesText(entries []*pb.Entry) string {
	m := map[string]string{}
	for _, e := range entries {
		m[string(e.Key)] = string(e.Value)
	}
	return encodeMap(m)
}

// DoOp runs op in session s and fills in its results. For a snapshot scan
// it returns the time the snapshot was opened (its place in the order);
// otherwise 0.
func DoOp(ctx context.Context, conn *Conn, s *Session, mapName string, op *Op, now func() int64) (int64, error) {
	opened := int64(0)
	key := []byte(op.Key)
	var build func(*pb.MapRequest)
	whole := false
	switch op.Kind {
	case "get":
		build = func(r *pb.MapRequest) { r.Op = &pb.MapRequest_Get{Get: &pb.Get{Map: mapName, Key: key}} }
	case "put":
		build = func(r *pb.MapRequest) {
			r.Op = &pb.MapRequest_Put{Put: &pb.Put{Map: mapName, Key: key, Value: []byte(op.Value)}}
		}
	case "del":
		build = func(r *pb.MapRequest) { r.Op = &pb.MapRequest_Remove{Remove: &pb.Remove{Map: mapName, Key: key}} }
	case "cas":
		build = func(r *pb.MapRequest) {
			r.Op = &pb.MapRequest_ReplaceIfEquals{ReplaceIfEquals: &pb.ReplaceIfEquals{Map: mapName, Key: key,
				Expected: []byte(op.Expected), Value: []byte(op.Value)}}
		}
	case "size":
		whole = true
		build = func(r *pb.MapRequest) { r.Op = &pb.MapRequest_Size{Size: &pb.Size{Map: mapName}} }
	case "scan":
		whole = true
		build = func(r *pb.MapRequest) { r.Op = &pb.MapRequest_Range{Range: &pb.Range{Map: mapName, Limit: 1000}} }
	case "snap":
		whole = true
		build = func(r *pb.MapRequest) {
			r.Op = &pb.MapRequest_OpenSnapshot{OpenSnapshot: &pb.OpenSnapshot{Map: mapName, LeaseMicros: 30_000_000}}
		}
	default:
		return 0, fmt.Errorf("unknown op %q", op.Kind)
	}
	resp, err := conn.Execute(ctx, s, key, whole, build)
	if err != nil {
		return 0, err
	}
	switch op.Kind {
	case "get", "put", "del":
		if v := resp.GetValue(); v != nil && v.Value != nil {
			op.Out = string(v.Value)
		}
	case "cas":
		op.Flag = resp.GetFlag()
	case "size":
		op.Count = int(resp.GetCount())
	case "scan":
		es := resp.GetEntries()
		if es == nil {
			return 0, fmt.Errorf("range: no entries in the reply")
		}
		if es.More {
			return 0, fmt.Errorf("range: more than 1000 entries")
		}
		op.Entries = entriesText(es.Entries)
	case "snap":
		opened = now()
		id := resp.GetSnapshot()
		r, rerr := conn.Routing(ctx)
		if rerr != nil {
			return 0, rerr
		}
		var all []*pb.Entry
		for _, p := range r.AllPartitions() {
			es, rerr := conn.ReadSnapshot(ctx, p, id)
			if rerr != nil {
				return 0, &OpError{Msg: "read snapshot: " + rerr.Error()}
			}
			all = append(all, es...)
		}
		op.Entries = entriesText(all)
		conn.Execute(ctx, s, nil, true, func(r *pb.MapRequest) {
			r.Op = &pb.MapRequest_ReleaseSnapshot{ReleaseSnapshot: &pb.ReleaseSnapshot{Snapshot: id}}
		})
	}
	return opened, nil
}

// FinalReads reads every key (registers) or the whole map (scan and
// snapshot) with a fresh client, after the cluster is healed.
func FinalReads(conn *Conn, w *Workload, rec *Recorder) error {
	client := rec.newClient()
	sess := conn.NewSession()
	var kinds []string
	if w.Name == "register" {
		kinds = []string{"get"}
	} else {
		kinds = []string{"scan", "snap", "size"}
	}
	var errs []string
	for _, kind := range kinds {
		ks := []string{""}
		if kind == "get" {
			ks = w.Keys
		}
		for _, k := range ks {
			var last error
			for attempt := 0; attempt < 3; attempt++ {
				op := &Op{Client: client, Kind: kind, Key: k, Final: true, Call: rec.now()}
				_, err := DoOp(context.Background(), conn, sess, w.Map, op, rec.now)
				if err == nil {
					op.Status = "ok"
					op.Return = rec.now()
					rec.add(op)
					last = nil
					break
				}
				last = err
				client = rec.newClient()
				sess = conn.NewSession()
			}
			if last != nil {
				errs = append(errs, fmt.Sprintf("final %s %s: %v", kind, k, last))
			}
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("%s", strings.Join(errs, "; "))
	}
	return nil
}
