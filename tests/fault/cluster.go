package main

// The cluster harness: three `amulet node` processes (3 partitions x 3
// replicas, sync acceptor storage), each in its own network namespace
// joined by a veth pair to a bridge, or, without namespaces, on 127.0.0.x
// addresses with ports 23000-23990. The membership families run five
// (placed as `amulet dev --nodes 5` places them).

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

const (
	nodeCount  = 3
	nodesMax   = 5
	partitions = 3
	bridgeName = "amf-br0"
	subnet     = "10.213.77"
)

type Node struct {
	ID         int
	NS         string // network namespace ("" in loopback mode)
	IP         string
	PeerAddr   string
	ClientAddr string
	HostVeth   string // host side of the veth pair
	NSVeth     string // namespace side
	Config     string
	Log        string
	cmd        *exec.Cmd
	exited     chan struct{}
	Paused     bool
	// Gone: killed for good (kill-for-good); never restarted, and not
	// expected to answer.
	Gone bool
	// args: how the harness starts it (`amulet node`, or `amulet join`
	// for the join family's new node, which runs the node once joined).
	args []string
}

type Cluster struct {
	Netns   bool
	Bin     string
	Dir     string
	Nodes   []*Node
	ID      uint64
	Storage string
	// TLSDir holds the cluster's CA and certificates (`amulet cert`); ""
	// when the suite runs with -insecure.
	TLSDir string
	// Joiner: the join family's sixth node (namespace, address and
	// certificate ready; no configuration: `amulet join` writes it);
	// nil otherwise. In Nodes once the nemesis has started it.
	Joiner *Node
	logf   func(string, ...any)
}

// Insecure runs the nodes without TLS (-insecure); by default they
// require certificates, as `amulet dev` does.
var Insecure bool

// makeCertificates creates the cluster's CA, a certificate per node, the
// user "fault"'s (the workloads') and the bootstrap cluster admin's with
// `amulet cert`, and makes this client present "fault"'s.
func (c *Cluster) makeCertificates() error {
	c.TLSDir = filepath.Join(c.Dir, "tls")
	steps := [][]string{{"cert", "create-ca", "--dir", c.TLSDir}}
	for _, n := range c.all() {
		steps = append(steps, []string{"cert", "create-node", "--dir", c.TLSDir, "--node", fmt.Sprint(n.ID), "--host", n.IP})
	}
	steps = append(steps,
		[]string{"cert", "create-client", "--dir", c.TLSDir, "--user", "fault"},
		[]string{"cert", "create-client", "--dir", c.TLSDir, "--user", "admin"})
	for _, s := range steps {
		if err := run(c.Bin, s...); err != nil {
			return err
		}
	}
	creds, err := tlsCredentials(c.TLSDir, "fault")
	if err != nil {
		return err
	}
	ClientCredentials = creds
	return nil
}

// GrantWorkloads gives the user "fault" what the workloads do (map admin
// on every map: create, write, read, snapshot, logs), and nothing of the
// cluster (no reconfiguration, no access changes), as the cluster admin
// would with `amulet access` (docs/security.md). Every request the
// workloads send is then judged against that grant at every replica.
func (c *Cluster) GrantWorkloads() error {
	if Insecure {
		return nil
	}
	base := []string{"--addr", strings.Join(c.ClientAddrs(), ","), "--tls-dir", c.TLSDir, "--user", "admin", "access"}
	for _, step := range [][]string{
		{"grant", "fault-workloads", "*", "admin"},
		{"assign", "fault", "fault-workloads"},
	} {
		if err := run(c.Bin, append(append([]string{}, base...), step...)...); err != nil {
			return err
		}
	}
	return nil
}

func run(name string, args ...string) error {
	out, err := exec.Command(name, args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s %s: %v: %s", name, strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}

// runOutput is run's standard output.
func runOutput(name string, args ...string) (string, error) {
	out, err := exec.Command(name, args...).Output()
	if err != nil {
		return "", fmt.Errorf("%s %s: %v", name, strings.Join(args, " "), err)
	}
	return string(out), nil
}

func nsRun(ns string, args ...string) error {
	if ns == "" {
		return run(args[0], args[1:]...)
	}
	return run("ip", append([]string{"netns", "exec", ns}, args...)...)
}

// NetnsAvailable tries to create and delete a namespace.
func NetnsAvailable() bool {
	if os.Geteuid() != 0 {
		return false
	}
	if err := run("ip", "netns", "add", "amf-probe"); err != nil {
		return false
	}
	run("ip", "netns", "del", "amf-probe")
	return true
}

// CleanupNetwork removes every namespace, link and rule this suite makes
// (its names all start with amf-), killing processes left in its namespaces.
func CleanupNetwork() {
	out, _ := exec.Command("ip", "netns", "list").Output()
	for _, line := range strings.Split(string(out), "\n") {
		f := strings.Fields(line)
		if len(f) == 0 || !strings.HasPrefix(f[0], "amf-") {
			continue
		}
		pids, _ := exec.Command("ip", "netns", "pids", f[0]).Output()
		for _, p := range strings.Fields(string(pids)) {
			var pid int
			fmt.Sscan(p, &pid)
			if pid > 1 {
				syscall.Kill(pid, syscall.SIGCONT)
				syscall.Kill(pid, syscall.SIGKILL)
			}
		}
		run("ip", "netns", "del", f[0])
	}
	for i := 1; i <= nodesMax+1; i++ {
		run("ip", "link", "del", fmt.Sprintf("amf-v%d", i))
	}
	run("ip", "link", "del", bridgeName)
	cleanupLoopbackRules()
}

// NewCluster lays out `nodes` nodes, and with `joiner` a sixth that is
// not started (the join family's).
func NewCluster(bin, dir string, netns bool, nodes int, joiner bool, logf func(string, ...any)) (*Cluster, error) {
	if nodes != nodeCount && nodes != nodesMax {
		return nil, fmt.Errorf("a cluster of %d or %d nodes, not %d", nodeCount, nodesMax, nodes)
	}
	c := &Cluster{Netns: netns, Bin: bin, Dir: dir, ID: uint64(time.Now().UnixNano()&0xffffffff) | 1, Storage: "sync", logf: logf}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	slots := nodes
	if joiner {
		slots++
	}
	for i := 1; i <= slots; i++ {
		n := &Node{ID: i, args: []string{"node"}}
		if netns {
			n.NS = fmt.Sprintf("amf-n%d", i)
			n.IP = fmt.Sprintf("%s.%d", subnet, 10+i)
			n.PeerAddr = n.IP + ":7000"
			n.ClientAddr = n.IP + ":7100"
			n.HostVeth = fmt.Sprintf("amf-v%d", i)
			n.NSVeth = fmt.Sprintf("amf-p%d", i)
		} else {
			n.IP = fmt.Sprintf("127.0.0.%d", 10+i)
			n.PeerAddr = fmt.Sprintf("%s:%d", n.IP, 23110+i)
			n.ClientAddr = fmt.Sprintf("%s:%d", n.IP, 23100+i)
		}
		n.Config = filepath.Join(dir, fmt.Sprintf("node-%d.toml", i))
		n.Log = filepath.Join(dir, fmt.Sprintf("node-%d.log", i))
		if i > nodes {
			c.Joiner = n
			continue
		}
		c.Nodes = append(c.Nodes, n)
	}
	if netns {
		if err := c.setupNetwork(); err != nil {
			return nil, err
		}
	}
	if !Insecure {
		if err := c.makeCertificates(); err != nil {
			return nil, err
		}
	}
	for _, n := range c.Nodes {
		if err := os.WriteFile(n.Config, []byte(c.configText(n)), 0o644); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// all is every node slot: the nodes, and the joiner not yet started.
func (c *Cluster) all() []*Node {
	if c.Joiner != nil && !c.started(c.Joiner) {
		return append(append([]*Node{}, c.Nodes...), c.Joiner)
	}
	return c.Nodes
}

func (c *Cluster) started(n *Node) bool {
	for _, m := range c.Nodes {
		if m == n {
			return true
		}
	}
	return false
}

func (c *Cluster) setupNetwork() error {
	steps := [][]string{
		{"ip", "link", "add", bridgeName, "type", "bridge"},
		{"ip", "addr", "add", subnet + ".1/24", "dev", bridgeName},
		{"ip", "link", "set", bridgeName, "up"},
	}
	for _, n := range c.all() {
		steps = append(steps,
			[]string{"ip", "netns", "add", n.NS},
			[]string{"ip", "link", "add", n.HostVeth, "type", "veth", "peer", "name", n.NSVeth},
			[]string{"ip", "link", "set", n.NSVeth, "netns", n.NS},
			[]string{"ip", "link", "set", n.HostVeth, "master", bridgeName},
			[]string{"ip", "link", "set", n.HostVeth, "up"},
			[]string{"ip", "netns", "exec", n.NS, "ip", "addr", "add", n.IP + "/24", "dev", n.NSVeth},
			[]string{"ip", "netns", "exec", n.NS, "ip", "link", "set", n.NSVeth, "up"},
			[]string{"ip", "netns", "exec", n.NS, "ip", "link", "set", "lo", "up"},
		)
	}
	for _, s := range steps {
		if err := run(s[0], s[1:]...); err != nil {
			return err
		}
	}
	return nil
}

// configText follows local_dmap_cluster_toml (crates/amulet-node/src/config.rs):
// stream 1 is the global stream, streams 2.. order the partitions, every
// node accepts every stream and replicates every partition.
func (c *Cluster) configText(n *Node) string {
	var b strings.Builder
	fmt.Fprintf(&b, "cluster = %d\nnode = %d\nlisten = %q\ndata_dir = %q\n\n[peers]\n", c.ID, n.ID, n.PeerAddr,
		filepath.Join(c.Dir, fmt.Sprintf("node-%d", n.ID)))
	var members []string
	for _, m := range c.Nodes {
		fmt.Fprintf(&b, "%d = %q\n", m.ID, m.PeerAddr)
		members = append(members, fmt.Sprint(m.ID))
	}
	if len(c.Nodes) == nodesMax {
		// local_dmap_placement(5, 5): the global stream's acceptors are
		// nodes 1-3 (4 and 5 learn it); each partition on three nodes.
		fmt.Fprintf(&b, "\n[[streams]]\nid = 1\nacceptors = [1, 2, 3]\nstorage = %q\nlearners = [4, 5]\n", c.Storage)
		groups := []string{"1, 2, 3", "4, 5, 1", "2, 3, 4"}
		for p, g := range groups {
			fmt.Fprintf(&b, "\n[[streams]]\nid = %d\nacceptors = [%s]\nstorage = %q\n", p+2, g, c.Storage)
		}
		b.WriteString("\n[smr]\nglobal_stream = 1\n")
		for p, g := range groups {
			fmt.Fprintf(&b, "\n[[smr.partitions]]\nid = %d\nstream = %d\nreplicas = [%s]\n", p+1, p+2, g)
		}
	} else {
		for s := 1; s <= partitions+1; s++ {
			fmt.Fprintf(&b, "\n[[streams]]\nid = %d\nacceptors = [%s]\nstorage = %q\n", s, strings.Join(members, ", "), c.Storage)
		}
		b.WriteString("\n[smr]\nglobal_stream = 1\n")
		for p := 1; p <= partitions; p++ {
			fmt.Fprintf(&b, "\n[[smr.partitions]]\nid = %d\nstream = %d\nreplicas = [%s]\n", p, p+1, strings.Join(members, ", "))
		}
	}
	b.WriteString("\n[smr.clients]\n")
	for _, m := range c.Nodes {
		fmt.Fprintf(&b, "%d = %q\n", m.ID, m.ClientAddr)
	}
	if c.TLSDir != "" {
		fmt.Fprintf(&b, "\n[tls]\ndir = %q\n", c.TLSDir)
	}
	// The eventual stores fold their journals into a checkpoint every
	// 64 KiB (the nodes' default is 64 MiB, which this workload never
	// reaches), so kills also land while a checkpoint is written in the
	// background and recovery replays two journals (docs/eventual-maps.md,
	// "Durability").
	b.WriteString("\n[eventual]\ncheckpoint_journal_bytes = 65536\n")
	// Logs move their entries into segment files every 256 bytes (the
	// default is 16 MiB; the log workload trims its logs to a few dozen
	// small entries), so restarts map segments again and trims remove
	// them (docs/logs.md, "Segment files").
	b.WriteString("\n[logs]\nsegment_bytes = 256\n")
	if InjectBug == "no-self-healing" {
		// The kill-for-good family's healing check must catch it.
		b.WriteString("\n[membership]\nself_healing = false\n")
	}
	if InjectBug == "hasty-failure-detector" {
		// Edges fail after 1 s of silence, shorter than the stay family's
		// 4 s pause: its check must catch the removal.
		b.WriteString("\n[membership]\nfailure_timeout_ms = 1000\n")
	}
	return b.String()
}

func (c *Cluster) ClientAddrs() []string {
	var out []string
	for _, n := range c.Nodes {
		out = append(out, n.ClientAddr)
	}
	return out
}

// Start starts node n (again, after a kill: same config and data).
func (c *Cluster) Start(n *Node) error {
	args := append(append([]string{}, n.args...), "--config", n.Config)
	if n.args[0] == "node" {
		args = append(args, "--status-interval-ms", "60000")
	}
	var cmd *exec.Cmd
	if c.Netns {
		cmd = exec.Command("ip", append([]string{"netns", "exec", n.NS, c.Bin}, args...)...)
	} else {
		cmd = exec.Command(c.Bin, args...)
	}
	log, err := os.OpenFile(n.Log, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	fmt.Fprintf(log, "==== harness: starting node %d at %s\n", n.ID, time.Now().UTC().Format(time.RFC3339Nano))
	cmd.Stdout = log
	cmd.Stderr = log
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
	if err := cmd.Start(); err != nil {
		log.Close()
		return err
	}
	n.cmd = cmd
	n.Paused = false
	n.exited = make(chan struct{})
	done := n.exited
	go func() { cmd.Wait(); log.Close(); close(done) }()
	appendPid(c.Dir, cmd.Process.Pid)
	return nil
}

// PidFile lists every node process started (for the run script's trap).
var PidFile string

// appendPid records a pid for the run script's trap to kill on failure.
func appendPid(dir string, pid int) {
	if PidFile == "" {
		PidFile = filepath.Join(filepath.Dir(dir), "pids")
	}
	f, err := os.OpenFile(PidFile, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err == nil {
		fmt.Fprintln(f, pid)
		f.Close()
	}
}

func (n *Node) Running() bool {
	if n.cmd == nil {
		return false
	}
	select {
	case <-n.exited:
		return false
	default:
		return true
	}
}

func (n *Node) Signal(sig syscall.Signal) {
	if n.cmd != nil && n.cmd.Process != nil {
		syscall.Kill(n.cmd.Process.Pid, sig)
	}
}

// Kill sends SIGKILL and waits for the process to be gone.
func (c *Cluster) Kill(n *Node) {
	if !n.Running() {
		return
	}
	n.Signal(syscall.SIGKILL)
	select {
	case <-n.exited:
	case <-time.After(10 * time.Second):
		c.logf("node %d did not exit 10 s after SIGKILL", n.ID)
	}
	n.Paused = false
}

// ComeBack restarts n, killed for good and removed from the view, with
// its data directory wiped (a machine back with an empty disk). Its peers
// tell it the view removed it and it must stop by itself with exit
// status 0 (docs/membership.md "Views for a node without a replica");
// it is killed if it still runs after `within`. Returns whether it
// stopped by itself, and its exit status.
func (c *Cluster) ComeBack(n *Node, within time.Duration) (stopped bool, code int, err error) {
	if err := os.RemoveAll(filepath.Join(c.Dir, fmt.Sprintf("node-%d", n.ID))); err != nil {
		return false, 0, err
	}
	if err := c.Start(n); err != nil {
		return false, 0, err
	}
	select {
	case <-n.exited:
		return true, n.cmd.ProcessState.ExitCode(), nil
	case <-time.After(within):
		c.Kill(n)
		return false, 0, nil
	}
}

func (c *Cluster) Pause(n *Node)  { n.Signal(syscall.SIGSTOP); n.Paused = true }
func (c *Cluster) Resume(n *Node) { n.Signal(syscall.SIGCONT); n.Paused = false }

func (c *Cluster) StartAll() error {
	for _, n := range c.Nodes {
		if err := c.Start(n); err != nil {
			return err
		}
	}
	return nil
}

// StopAll kills every node (resuming paused ones first).
func (c *Cluster) StopAll() {
	for _, n := range c.Nodes {
		if n.Running() {
			n.Signal(syscall.SIGCONT)
			c.Kill(n)
		}
	}
}

// Coordinator is the node that coordinates the global stream now (0: none known).
func (c *Cluster) Coordinator(ctx context.Context, conn *Conn) *Node {
	for _, n := range c.Nodes {
		if !n.Running() || n.Paused {
			continue
		}
		st, err := conn.Status(ctx, n.ClientAddr)
		if err != nil {
			continue
		}
		for _, s := range st.Streams {
			if s.Stream == 1 && s.Coordinator {
				return n
			}
		}
	}
	return nil
}

// Exited lists nodes that died without the nemesis killing them.
func (c *Cluster) Crashed() []int {
	var out []int
	for _, n := range c.Nodes {
		if n.cmd != nil && !n.Running() {
			out = append(out, n.ID)
		}
	}
	return out
}

// Healed asks the live nodes (`amulet status`) whether the view removed
// gone and whether its partitions are re-homed: no partition names it and
// no new replica is still fetching its state (no "re-homing:" line).
func (c *Cluster) Healed(gone *Node) (removed, rehomed bool) {
	out, err := c.status()
	if err != nil {
		return false, false
	}
	id := fmt.Sprint(gone.ID)
	names := func(list string) bool {
		for _, f := range strings.Split(list, ", ") {
			if f == id {
				return true
			}
		}
		return false
	}
	removed = names(removedIn(out))
	onGone, waiting := false, false
	for _, line := range strings.Split(out, "\n") {
		line = strings.TrimSpace(line)
		if strings.HasPrefix(line, "partition ") {
			if i := strings.Index(line, "replicas ["); i >= 0 {
				rest := strings.TrimSuffix(line[i+len("replicas ["):], "]")
				if names(rest) {
					onGone = true
				}
			}
		}
		if strings.HasPrefix(line, "re-homing:") {
			waiting = true
		}
	}
	return removed, removed && !onGone && !waiting
}
