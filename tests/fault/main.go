// Command fault runs Amulet's real-process fault suite: a cluster of real
// `amulet node` processes, a nemesis (one fault family per scenario),
// sequential clients recording JSONL histories, and porcupine checks.
// See docs/fault-suite.md; the entry point is tests/fault/run.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/anishathalye/porcupine"

	"amuletfault/pb"
)

var ciScenarios = []string{
	"kill-replica/register",
	"pause-coordinator/map",
	"partition-minority/snapshot",
	"kill-coordinator/register",
	"kill-replica/append", // transactions: Elle list-append, judged by amulet-sim
	// Eventual maps: siblings, the supersession oracle, convergence within
	// 5 s of the heal, no tombstones; a restart (finding 1) and a partition.
	"kill-replica/eventual",
	"partition-minority/eventual",
	// Membership (five nodes): a node killed for good is removed and its
	// partitions re-homed while the register workload runs; a sixth node
	// joins and takes partitions.
	"kill-for-good/register",
	"join/register",
	// Two nodes killed at once leave in one view change; a 4 s pause, 3%
	// loss on one node and a bridge partition remove nobody.
	"kill-two/register",
	"stay/register",
}

type Result struct {
	Scenario   string            `json:"scenario"`
	Family     string            `json:"family"`
	Workloads  []string          `json:"workloads"`
	Network    string            `json:"network"`
	Seconds    float64           `json:"seconds"`
	Faults     int               `json:"faults"`
	Ops        int               `json:"ops"`
	OpsOK      int               `json:"ops_ok"`
	OpsUnknown int               `json:"ops_unknown"`
	OpsFailed  int               `json:"ops_failed"`
	Checks     map[string]string `json:"checks"`
	MaxStall   float64           `json:"max_stall_seconds"` // longest time without a successful operation
	Anomalies  []string          `json:"anomalies"`
	Details    map[string]string `json:"details,omitempty"` // transactional workloads: counts by outcome
	Skipped    string            `json:"skipped,omitempty"`
	Dir        string            `json:"dir"`
}

func main() {
	mode := flag.String("mode", "ci", "ci (a few short scenarios) or long")
	duration := flag.Duration("duration", 0, "workload time per scenario (default: 35s in ci mode, 10m in long mode)")
	scenarios := flag.String("scenarios", "", "comma-separated scenarios: FAMILY[/WORKLOAD[+WORKLOAD]] (workloads: register, map, snapshot, append, bank, log, eventual), all (every family with register+map+snapshot+log+eventual), all-txn (every family with append+bank), all-log (every family with log), all-eventual (every family with eventual) or all-membership (the five-node membership families with register+map+snapshot) (default: the ci set in ci mode, all in long mode)")
	bin := flag.String("bin", "", "the amulet binary")
	out := flag.String("out", "", "output directory (histories, logs, visualisations)")
	seed := flag.Int64("seed", 0, "random seed (0: from the clock)")
	network := flag.String("net", "auto", "auto, netns or loopback")
	workers := flag.Int("workers", 4, "sequential clients per workload")
	checkTimeout := flag.Duration("check-timeout", 0, "porcupine timeout per history (default 60s ci, 300s long)")
	table := flag.String("table", "", "also write the results table into this markdown file (between the results markers)")
	check := flag.String("check", "", "only check a recorded history.jsonl (with -model)")
	model := flag.String("model", "register", "model for -check: register, map, log (a log.history.jsonl), eventual (an eventual.history.jsonl, with the eventual.final.json beside it), or append (an Elle history, judged by amulet-sim)")
	flag.StringVar(&SimBin, "sim", defaultSim(), "amulet-sim, whose --check-history judges the append workload's histories")
	flag.StringVar(&InjectBug, "bug", "", "inject a bug to show the checkers catch it: local-reads or tail-skips (in the nodes; tests/fault/run builds them with it), stale-reads (in this client: gets, scans, list reads, log reads and bounds answered from the client's earlier view), eventual-blind-deletes (in this client: eventual deletes sent with a read's context but recorded as having read nothing), no-self-healing (the nodes' configurations turn self-healing off: kill-for-good's healing check must fail) or hasty-failure-detector (the nodes' configurations call an edge failed after 1 s of silence: the stay family's check must fail)")
	flag.BoolVar(&Insecure, "insecure", false, "run the nodes without TLS (by default they require certificates from a CA the suite makes, and this client presents a user's)")
	flag.Parse()

	if *check != "" {
		if *model == "append" {
			os.Exit(checkElleFile(*check))
		}
		if *model == "log" {
			os.Exit(checkLogFile(*check))
		}
		if *model == "eventual" {
			os.Exit(checkEventualFile(*check))
		}
		os.Exit(checkFile(*check, *model))
	}
	if os.Getenv("AMULET_FAULT_LOCKED") == "" {
		// Not started by tests/fault/run: take the machine-wide lock here.
		if err := lockMachine("/tmp/amulet-fault-suite.lock", 30*time.Minute); err != nil {
			fmt.Println(err)
			os.Exit(2)
		}
	}
	if *seed == 0 {
		*seed = time.Now().UnixNano() % 1_000_000
	}
	if *duration == 0 {
		*duration = 35 * time.Second
		if *mode == "long" {
			*duration = 10 * time.Minute
		}
	}
	if *checkTimeout == 0 {
		*checkTimeout = 60 * time.Second
		if *mode == "long" {
			*checkTimeout = 300 * time.Second
		}
	}
	var list []string
	switch {
	case *scenarios == "all" || (*scenarios == "" && *mode == "long"):
		for _, f := range Families {
			list = append(list, f+"/register+map+snapshot+log+eventual")
		}
	case *scenarios == "all-txn":
		for _, f := range Families {
			list = append(list, f+"/append+bank")
		}
	case *scenarios == "all-log":
		for _, f := range Families {
			list = append(list, f+"/log")
		}
	case *scenarios == "all-eventual":
		for _, f := range Families {
			list = append(list, f+"/eventual")
		}
	case *scenarios == "all-membership":
		for _, f := range MembershipFamilies {
			list = append(list, f+"/register+map+snapshot")
		}
	case *scenarios == "":
		list = ciScenarios
	default:
		list = strings.Split(*scenarios, ",")
	}
	if *out == "" {
		*out = filepath.Join("out", time.Now().UTC().Format("20060102-150405"))
	}
	*out, _ = filepath.Abs(*out)
	os.MkdirAll(*out, 0o755)
	PidFile = filepath.Join(*out, "pids")
	useNetns := false
	switch *network {
	case "netns":
		useNetns = true
	case "auto":
		useNetns = NetnsAvailable()
	}
	netName := "loopback"
	if useNetns {
		netName = "netns"
	}
	fmt.Printf("fault suite: mode=%s net=%s seed=%d duration=%s scenarios=%d out=%s\n", *mode, netName, *seed, *duration, len(list), *out)

	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	var current struct {
		sync.Mutex
		c *Cluster
	}
	go func() {
		<-sigs
		fmt.Println("interrupted: cleaning up")
		current.Lock()
		if current.c != nil {
			current.c.StopAll()
		}
		current.Unlock()
		if useNetns {
			CleanupNetwork()
		}
		os.Exit(130)
	}()

	var results []*Result
	failed := false
	for i, sc := range list {
		family, wls := parseScenario(sc)
		dir := filepath.Join(*out, fmt.Sprintf("%02d-%s", i+1, strings.NewReplacer("/", "-", "+", "-").Replace(sc)))
		r := &Result{Scenario: sc, Family: family, Workloads: wls, Network: netName, Checks: map[string]string{}, Details: map[string]string{}, Dir: dir}
		if needsNetns(family) && !useNetns {
			r.Skipped = "needs network namespaces"
		} else {
			runScenario(r, *bin, dir, useNetns, *seed+int64(i)*7919, *duration, *workers, *checkTimeout, func(c *Cluster) {
				current.Lock()
				current.c = c
				current.Unlock()
			})
		}
		results = append(results, r)
		line := summaryLine(r)
		fmt.Println(line)
		for _, k := range sortedKeys(r.Details) {
			fmt.Printf("    %s: %s\n", k, r.Details[k])
		}
		if len(r.Anomalies) > 0 {
			failed = true
			for _, a := range r.Anomalies {
				fmt.Println("    anomaly: " + a)
			}
		}
		b, _ := json.MarshalIndent(r, "", "  ")
		os.WriteFile(filepath.Join(dir, "result.json"), b, 0o644)
	}
	md := resultsTable(results, *mode, *seed, *duration)
	os.WriteFile(filepath.Join(*out, "results.md"), []byte(md), 0o644)
	if *table != "" {
		if err := writeTable(*table, md); err != nil {
			fmt.Println("cannot write the table:", err)
		}
	}
	total, anomalies := 0, 0
	for _, r := range results {
		total += r.Ops
		anomalies += len(r.Anomalies)
	}
	fmt.Printf("fault suite: %d scenarios, %d operations checked, %d anomalies; details in %s\n", len(results), total, anomalies, *out)
	if failed {
		os.Exit(1)
	}
}

func parseScenario(sc string) (string, []string) {
	family, rest, ok := strings.Cut(sc, "/")
	if !ok || rest == "" {
		return family, []string{"register", "map", "snapshot"}
	}
	return family, strings.Split(rest, "+")
}

func summaryLine(r *Result) string {
	if r.Skipped != "" {
		return fmt.Sprintf("SKIP %-45s %s", r.Scenario, r.Skipped)
	}
	verdict := "PASS"
	if len(r.Anomalies) > 0 {
		verdict = "FAIL"
	}
	var checks []string
	for _, k := range sortedKeys(r.Checks) {
		checks = append(checks, k+"="+r.Checks[k])
	}
	return fmt.Sprintf("%s %-40s ops=%d (ok %d, unknown %d, failed %d) faults=%d anomalies=%d max-stall=%.1fs %.0fs [%s]",
		verdict, r.Scenario, r.Ops, r.OpsOK, r.OpsUnknown, r.OpsFailed, r.Faults, len(r.Anomalies), r.MaxStall, r.Seconds, strings.Join(checks, " "))
}

func sortedKeys(m map[string]string) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

func runScenario(r *Result, bin, dir string, netns bool, seed int64, duration time.Duration, workers int, checkTimeout time.Duration, setCurrent func(*Cluster)) {
	began := time.Now()
	defer func() { r.Seconds = time.Since(began).Seconds() }()
	anomaly := func(format string, a ...any) { r.Anomalies = append(r.Anomalies, fmt.Sprintf(format, a...)) }
	os.RemoveAll(dir)
	os.MkdirAll(dir, 0o755)
	logFile, _ := os.Create(filepath.Join(dir, "harness.log"))
	defer logFile.Close()
	var logMu sync.Mutex
	logf := func(format string, a ...any) {
		logMu.Lock()
		defer logMu.Unlock()
		fmt.Fprintf(logFile, time.Now().UTC().Format("15:04:05.000 ")+format+"\n", a...)
	}
	if netns {
		CleanupNetwork()
		defer CleanupNetwork()
	}
	c, err := NewCluster(bin, filepath.Join(dir, "cluster"), netns, nodesFor(r.Family), r.Family == "join", logf)
	if err != nil {
		anomaly("harness: %v", err)
		return
	}
	setCurrent(c)
	defer func() { c.StopAll(); setCurrent(nil) }()
	if err := c.StartAll(); err != nil {
		anomaly("harness: start: %v", err)
		return
	}
	conn := NewConn(c.ClientAddrs(), seed)
	defer conn.Close()
	var wls []*Workload
	for _, name := range r.Workloads {
		w, ok := Workloads[name]
		if !ok {
			anomaly("harness: unknown workload %q", name)
			return
		}
		wls = append(wls, w)
	}
	// Bring-up: the workloads' user is granted what they do, maps exist,
	// health check passes.
	granted := false
	if err := waitUntil(60*time.Second, func() error {
		if !granted {
			if err := c.GrantWorkloads(); err != nil {
				return fmt.Errorf("grant: %v", err)
			}
			granted = true
		}
		if _, err := conn.Refresh(context.Background()); err != nil {
			return err
		}
		for _, m := range []string{"health", "reg", "wmap", "snap", appendMap, bankMap} {
			if err := conn.CreateMap(context.Background(), m); err != nil {
				return fmt.Errorf("create %s: %v", m, err)
			}
		}
		return nil
	}); err != nil {
		anomaly("harness: the cluster did not come up: %v", err)
		return
	}
	if err := healthCheck(conn, c, 60*time.Second); err != nil {
		anomaly("health check before the faults: %v", err)
		return
	}
	logf("health check before: ok")

	// Transactional workloads: set up once the cluster is healthy.
	txns := map[string]TxnWorkload{}
	for _, w := range wls {
		if w.NewTxn == nil {
			continue
		}
		tw, err := w.NewTxn(conn, logf, seed)
		if err != nil {
			anomaly("harness: %s: set-up: %v", w.Name, err)
			return
		}
		txns[w.Name] = tw
	}

	// Workloads and nemesis.
	stop := make(chan struct{})
	var wg sync.WaitGroup
	recs := map[string]*Recorder{}
	for wi, w := range wls {
		if tw := txns[w.Name]; tw != nil {
			for i := 0; i < workers; i++ {
				wg.Add(1)
				go func(s int64) {
					defer wg.Done()
					tw.Worker(stop, conn, s)
				}(seed*1000 + int64(wi*100+i))
			}
			if bg, ok := tw.(backgroundWorkload); ok {
				// The log workload's tailers: they run while the workers do.
				wg.Add(1)
				go func(s int64) {
					defer wg.Done()
					bg.Background(stop, conn, s)
				}(seed*1000 + int64(wi*100+99))
			}
			continue
		}
		rec := NewRecorder()
		recs[w.Name] = rec
		for i := 0; i < workers; i++ {
			wg.Add(1)
			go func(w *Workload, s int64) {
				defer wg.Done()
				RunWorker(stop, conn, w, rec, s, 10*time.Millisecond)
			}(w, seed*1000+int64(wi*100+i))
		}
	}
	nem := NewNemesis(c, conn, r.Family, seed, logf)
	ctx, cancel := context.WithTimeout(context.Background(), duration)
	defer cancel()
	nemDone := make(chan struct{})
	quiet, hold := 4*time.Second, 6*time.Second
	if r.Family == "kill-majority" || r.Family == "netem" {
		hold = 5 * time.Second
	}
	go func() { nem.Run(ctx, quiet, hold); close(nemDone) }()
	<-ctx.Done()
	<-nemDone
	healedAt := time.Now() // the nemesis has healed for the last time
	close(stop)
	if !waitGroupTimeout(&wg, 90*time.Second) {
		anomaly("harness: workers did not stop within 90 s")
	}
	for _, tw := range txns {
		if h, ok := tw.(healAware); ok {
			h.Healed(conn, healedAt)
		}
	}
	r.Faults = nem.Injects
	if crashed := nem.Unexpected(); len(crashed) > 0 {
		anomaly("node(s) %v exited without being killed (see node logs)", crashed)
	}
	if err := healthCheck(conn, c, 90*time.Second); err != nil {
		anomaly("health check after healing: %v", err)
	} else {
		logf("health check after: ok")
	}
	if node, _, _ := nem.Healing(); node != 0 {
		checkHealing(r, c, nem, anomaly)
	}
	if r.Family == "join" {
		checkJoin(r, c, nem, anomaly)
	}
	if r.Family == "stay" {
		checkStay(r, c, nem, anomaly)
	}
	os.WriteFile(filepath.Join(dir, "nemesis.log"), []byte(strings.Join(nem.Events, "\n")+"\n"), 0o644)

	// Final reads, histories, checks.
	for _, w := range wls {
		if tw := txns[w.Name]; tw != nil {
			if err := tw.Final(conn); err != nil {
				anomaly("%s: final read failed: %v", w.Name, err)
			}
			countOps(r, tw.Summary())
			verdict, problems, details := tw.Check(dir, checkTimeout)
			r.Checks[w.Name] = verdict
			r.Details[w.Name] = details
			if ex, ok := tw.(extraChecks); ok {
				checks, more := ex.Extra()
				for k, v := range checks {
					r.Checks[k] = v
				}
				for k, v := range more {
					r.Details[k] = v
				}
			}
			logf("%s: %s; %s", w.Name, verdict, details)
			for _, p := range problems {
				anomaly("%s: %s", w.Name, p)
			}
			continue
		}
		rec := recs[w.Name]
		if err := FinalReads(conn, w, rec); err != nil {
			anomaly("%s: final read failed: %v", w.Name, err)
		}
		ops := rec.Ops()
		WriteHistory(filepath.Join(dir, w.Name+".history.jsonl"), ops)
		countOps(r, ops)
		verdict, problems := checkHistory(ops, w.Model, checkTimeout, filepath.Join(dir, w.Name+".porcupine.html"))
		r.Checks[w.Name] = verdict
		for _, p := range problems {
			anomaly("%s: %s", w.Name, p)
		}
	}
	if left := c.Crashed(); len(left) > 0 {
		logf("nodes not running at the end: %v", left)
	}
}

// backgroundWorkload is a workload with goroutines of its own besides its
// workers (the log workload's tailers): Background runs them until stop
// closes and returns when they have stopped.
type backgroundWorkload interface {
	Background(stop <-chan struct{}, conn *Conn, seed int64)
}

// healAware is a workload that measures from the last heal (the eventual
// workload's convergence): Healed is called once its workers have
// stopped, with the time the nemesis healed for the last time.
type healAware interface {
	Healed(conn *Conn, at time.Time)
}

// extraChecks is a workload with more verdicts and details than Check's
// (the log workload's tailers: "log-tail").
type extraChecks interface {
	Extra() (checks map[string]string, details map[string]string)
}

// countOps adds a workload's operations to the scenario's counts and stall.
func countOps(r *Result, ops []*Op) {
	for _, o := range ops {
		r.Ops++
		switch o.Status {
		case "ok":
			r.OpsOK++
		case "unknown":
			r.OpsUnknown++
		default:
			r.OpsFailed++
		}
	}
	if st := maxStall(ops); st > r.MaxStall {
		r.MaxStall = st
	}
}

// defaultSim is $AMULET_SIM, else <repo>/target/release/amulet-sim seen
// from tests/fault.
func defaultSim() string {
	if s := os.Getenv("AMULET_SIM"); s != "" {
		return s
	}
	p, _ := filepath.Abs(filepath.Join("..", "..", "target", "release", "amulet-sim"))
	return p
}

// checkElleFile judges a recorded append history with amulet-sim.
func checkElleFile(path string) int {
	report, err := CheckElle(path, 10*time.Minute)
	if err != nil {
		fmt.Println(err)
		return 2
	}
	if report != "" {
		fmt.Printf("%s: NOT strictly serializable\n  %s\n", path, report)
		return 1
	}
	fmt.Printf("%s: strictly serializable\n", path)
	return 0
}

// checkHistory runs porcupine (and the acknowledged-write check) and keeps
// an HTML visualisation when it finds a violation.
func checkHistory(ops []*Op, model porcupine.Model, timeout time.Duration, html string) (string, []string) {
	var problems []string
	res, info := porcupine.CheckOperationsVerbose(model, ToPorcupine(ops), timeout)
	verdict := "linearizable"
	switch res {
	case porcupine.Illegal:
		verdict = "NOT-linearizable"
		problems = append(problems, explainKeys(ops, model, timeout)...)
		if err := porcupine.VisualizePath(model, info, html); err == nil {
			problems = append(problems, "porcupine: not linearizable; see "+html)
		} else {
			problems = append(problems, "porcupine: not linearizable (visualisation failed: "+err.Error()+")")
		}
	case porcupine.Unknown:
		verdict = "check-timeout"
	}
	lost := AckedWritesPresent(ops)
	for _, l := range lost {
		problems = append(problems, "acknowledged write missing: "+l)
	}
	return verdict, problems
}

func checkFile(path, model string) int {
	ops, err := ReadHistory(path)
	if err != nil {
		fmt.Println(err)
		return 2
	}
	m := RegisterModel
	if model == "map" {
		m = MapModel
	}
	verdict, problems := checkHistory(ops, m, 5*time.Minute, strings.TrimSuffix(path, ".jsonl")+".porcupine.html")
	fmt.Printf("%s: %d ops, %s\n", path, len(ops), verdict)
	for _, p := range problems {
		fmt.Println("  " + p)
	}
	if len(problems) > 0 {
		return 1
	}
	return 0
}

func waitUntil(limit time.Duration, f func() error) error {
	deadline := time.Now().Add(limit)
	var err error
	for time.Now().Before(deadline) {
		if err = f(); err == nil {
			return nil
		}
		time.Sleep(300 * time.Millisecond)
	}
	return err
}

func waitGroupTimeout(wg *sync.WaitGroup, d time.Duration) bool {
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
		return true
	case <-time.After(d):
		return false
	}
}

// healthCheck: every node runs and answers Status, and a put then get of
// a fresh value through the normal routing succeed.
func healthCheck(conn *Conn, c *Cluster, limit time.Duration) error {
	return waitUntil(limit, func() error {
		for _, n := range c.Nodes {
			if n.Gone {
				continue
			}
			if !n.Running() {
				return fmt.Errorf("node %d is not running", n.ID)
			}
			if _, err := conn.Status(context.Background(), n.ClientAddr); err != nil {
				return fmt.Errorf("node %d: status: %v", n.ID, err)
			}
		}
		s := conn.NewSession()
		v := fmt.Sprintf("h%d", time.Now().UnixNano())
		if _, err := conn.Execute(context.Background(), s, []byte("h"), false, func(r *pb.MapRequest) {
			r.Op = &pb.MapRequest_Put{Put: &pb.Put{Map: "health", Key: []byte("h"), Value: []byte(v)}}
		}); err != nil {
			return fmt.Errorf("put: %v", err)
		}
		resp, err := conn.Execute(context.Background(), s, []byte("h"), false, func(r *pb.MapRequest) {
			r.Op = &pb.MapRequest_Get{Get: &pb.Get{Map: "health", Key: []byte("h")}}
		})
		if err != nil {
			return fmt.Errorf("get: %v", err)
		}
		if got := string(resp.GetValue().GetValue()); got != v {
			return fmt.Errorf("get after put: %q, want %q", got, v)
		}
		return nil
	})
}

const tableBegin = "<!-- fault-results:begin -->"
const tableEnd = "<!-- fault-results:end -->"

func resultsTable(results []*Result, mode string, seed int64, duration time.Duration) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Run of %s UTC: `--mode %s --duration %s --seed %d`, network %s.\n\n",
		time.Now().UTC().Format("2006-01-02 15:04"), mode, duration, seed, netOf(results))
	b.WriteString("| scenario | time (s) | faults injected | operations checked | ok / unknown / failed | longest stall (s) | checks | anomalies |\n|---|---|---|---|---|---|---|---|\n")
	for _, r := range results {
		if r.Skipped != "" {
			fmt.Fprintf(&b, "| %s | - | - | - | - | - | skipped: %s | - |\n", r.Scenario, r.Skipped)
			continue
		}
		var checks []string
		for _, k := range sortedKeys(r.Checks) {
			checks = append(checks, k+": "+r.Checks[k])
		}
		an := fmt.Sprint(len(r.Anomalies))
		if len(r.Anomalies) > 0 {
			an += ": " + strings.ReplaceAll(strings.Join(r.Anomalies, "; "), "|", "/")
		}
		fmt.Fprintf(&b, "| %s | %.0f | %d | %d | %d / %d / %d | %.1f | %s | %s |\n", r.Scenario, r.Seconds, r.Faults, r.Ops,
			r.OpsOK, r.OpsUnknown, r.OpsFailed, r.MaxStall, strings.Join(checks, ", "), an)
	}
	return b.String()
}

func netOf(results []*Result) string {
	if len(results) > 0 {
		return results[0].Network
	}
	return "?"
}

func writeTable(path, md string) error {
	old, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	s := string(old)
	i, j := strings.Index(s, tableBegin), strings.Index(s, tableEnd)
	if i < 0 || j < i {
		return fmt.Errorf("%s has no %s ... %s markers", path, tableBegin, tableEnd)
	}
	s = s[:i+len(tableBegin)] + "\n" + md + s[j:]
	return os.WriteFile(path, []byte(s), 0o644)
}

// explainKeys names the keys whose own history is not linearizable (for a
// model partitioned by key).
func explainKeys(ops []*Op, model porcupine.Model, timeout time.Duration) []string {
	if model.Partition == nil {
		return nil
	}
	byKey := map[string][]*Op{}
	for _, o := range ops {
		byKey[o.Key] = append(byKey[o.Key], o)
	}
	var out []string
	for _, k := range sortedKeysOps(byKey) {
		if porcupine.CheckOperationsTimeout(model, ToPorcupine(byKey[k]), timeout) == porcupine.Illegal {
			out = append(out, fmt.Sprintf("key %s (%d ops) is not linearizable", k, len(byKey[k])))
		}
	}
	return out
}

func sortedKeysOps(m map[string][]*Op) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

// maxStall is the longest time (s) in which no operation returned
// successfully, from the first call to the last workload return.
func maxStall(ops []*Op) float64 {
	var rets []int64
	var first int64 = -1
	for _, o := range ops {
		if o.Final {
			continue
		}
		if first < 0 || o.Call < first {
			first = o.Call
		}
		if o.Status == "ok" {
			rets = append(rets, o.Return)
		}
	}
	sort.Slice(rets, func(i, j int) bool { return rets[i] < rets[j] })
	prev, worst := first, int64(0)
	for _, r := range rets {
		if r-prev > worst {
			worst = r - prev
		}
		prev = r
	}
	return float64(worst) / 1e9
}

var machineLock *os.File

// lockMachine takes an exclusive flock (held until exit): runs on one
// machine share namespace names and addresses and must not overlap.
func lockMachine(path string, wait time.Duration) error {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return err
	}
	deadline := time.Now().Add(wait)
	told := false
	for {
		if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err == nil {
			machineLock = f // kept reachable: the lock lasts as long as the process
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("another fault-suite run holds %s", path)
		}
		if !told {
			fmt.Printf("another fault-suite run holds %s; waiting\n", path)
			told = true
		}
		time.Sleep(time.Second)
	}
}
