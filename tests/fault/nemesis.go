package main

// The nemesis: one fault family per run, injected and healed in cycles.

import (
	"context"
	"fmt"
	"math/rand"
	"os/exec"
	"strings"
	"sync"
	"time"
)

// Families, in the order `--scenarios all` runs them.
var Families = []string{
	"kill-replica",          // SIGKILL a non-coordinator node, restart it
	"kill-coordinator",      // SIGKILL the global stream's coordinator, restart it
	"kill-majority",         // SIGKILL two of the three replicas of every partition, restart them
	"pause-coordinator",     // SIGSTOP the coordinator, SIGCONT it
	"pause-replica",         // SIGSTOP a non-coordinator node, SIGCONT it
	"partition-coordinator", // isolate the coordinator from the other nodes (clients still reach it)
	"partition-minority",    // cut a random node off: majority {2} / minority {1}
	"partition-oneway",      // one node's packets to the others are dropped; theirs still arrive
	"partition-bridge",      // two nodes cannot talk, both still talk to the third
	"netem",                 // latency/loss/duplication/reordering on every node's link
}

// Membership families (docs/membership.md), on five nodes; run by
// `--scenarios all-membership` or by name, not by `all`.
var MembershipFamilies = []string{
	"kill-for-good", // SIGKILL node 4 or 5 once and never restart it: the cluster removes it and re-homes its partitions
	"join",          // a sixth node joins once (`amulet join`): the view admits it and the balancer moves partitions onto it
	"kill-two",      // SIGKILL two nodes at one instant, never restarted: one view change removes both, their partitions re-homed
	"stay",          // 4 s SIGSTOP, 3% loss on one node, a bridge partition, in turn: nobody may be removed
}

// nodesFor is the cluster size a family runs on.
func nodesFor(family string) int {
	for _, f := range MembershipFamilies {
		if f == family {
			return nodesMax
		}
	}
	return nodeCount
}

func needsNetns(family string) bool {
	return strings.HasPrefix(family, "partition-") || family == "netem" || family == "stay"
}

type Nemesis struct {
	c      *Cluster
	conn   *Conn
	family string
	rng    *rand.Rand
	logf   func(string, ...any)
	mu     sync.Mutex
	blocks [][2]*Node // a cannot send to b
	netem  []*Node
	killed map[int]bool
	// Nodes seen dead without the nemesis having killed them (a crash:
	// an anomaly even if a later fault and heal restart them).
	crashed map[int]bool
	Events  []string
	Injects int
	start   time.Time
	// kill-for-good: the node killed, when, and when `amulet status`
	// first showed it removed from the view and no partition waiting on it.
	gone                         *Node
	goneAt, removedAt, rehomedAt time.Time
	// kill-two: the second node killed with gone.
	alsoGone *Node
	// kill-two and stay: the view's number before the first fault.
	viewAtStart int
	// stay: the next fault's turn, and how long inject asks to hold it.
	stayTurn int
	holdFor  time.Duration
	// join: when the new node was started, admitted to the view, and
	// first replicated a partition.
	joinedAt, admittedAt, placedAt time.Time
}

func NewNemesis(c *Cluster, conn *Conn, family string, seed int64, logf func(string, ...any)) *Nemesis {
	return &Nemesis{c: c, conn: conn, family: family, rng: rand.New(rand.NewSource(seed)), logf: logf, killed: map[int]bool{}, crashed: map[int]bool{}, start: time.Now()}
}

func (m *Nemesis) event(format string, a ...any) {
	s := fmt.Sprintf("%6.1fs ", time.Since(m.start).Seconds()) + fmt.Sprintf(format, a...)
	m.Events = append(m.Events, s)
	m.logf("nemesis: %s", s)
}

// Run injects and heals the fault in cycles until ctx ends, then heals.
func (m *Nemesis) Run(ctx context.Context, quiet, hold time.Duration) {
	defer m.Heal()
	for {
		if !sleepCtx(ctx, quiet) {
			return
		}
		m.holdFor = 0
		if err := m.inject(ctx); err == errNothingToDo {
			// kill-for-good kills once; later cycles only wait.
		} else if err != nil {
			m.event("inject failed: %v", err)
		} else {
			m.Injects++
		}
		held := hold
		if m.holdFor > 0 {
			held = m.holdFor
		}
		if !sleepCtx(ctx, held) {
			return
		}
		m.Heal()
	}
}

func sleepCtx(ctx context.Context, d time.Duration) bool {
	select {
	case <-ctx.Done():
		return false
	case <-time.After(d):
		return true
	}
}

func (m *Nemesis) coordinator(ctx context.Context) *Node {
	if n := m.c.Coordinator(ctx, m.conn); n != nil {
		return n
	}
	return m.c.Nodes[0]
}

func (m *Nemesis) other(not *Node) *Node {
	var cands []*Node
	for _, n := range m.c.Nodes {
		if n != not {
			cands = append(cands, n)
		}
	}
	return cands[m.rng.Intn(len(cands))]
}

// noteCrashes records nodes that are down although the nemesis did not kill
// them. Checked before every fault and heal: checking only at the end
// missed a node that crashed by itself and was later killed and restarted
// by the nemesis (nodes aborting with a stack overflow went unnoticed).
func (m *Nemesis) noteCrashes() {
	for _, n := range m.c.Nodes {
		if n.cmd != nil && !n.Running() && !m.killed[n.ID] && !m.crashed[n.ID] && !n.Gone {
			m.crashed[n.ID] = true
			m.event("node %d exited without being killed (see its log)", n.ID)
		}
	}
}

func (m *Nemesis) inject(ctx context.Context) error {
	m.noteCrashes()
	coord := m.coordinator(ctx)
	switch m.family {
	case "kill-replica":
		n := m.other(coord)
		m.event("SIGKILL node %d (coordinator is %d)", n.ID, coord.ID)
		m.killed[n.ID] = true
		m.c.Kill(n)
	case "kill-coordinator":
		m.event("SIGKILL coordinator node %d", coord.ID)
		m.killed[coord.ID] = true
		m.c.Kill(coord)
	case "kill-majority":
		a := m.c.Nodes[m.rng.Intn(len(m.c.Nodes))]
		b := m.other(a)
		m.event("SIGKILL nodes %d and %d (a majority of every partition)", a.ID, b.ID)
		m.killed[a.ID], m.killed[b.ID] = true, true
		m.c.Kill(a)
		m.c.Kill(b)
	case "pause-coordinator":
		m.event("SIGSTOP coordinator node %d", coord.ID)
		m.c.Pause(coord)
	case "pause-replica":
		n := m.other(coord)
		m.event("SIGSTOP node %d", n.ID)
		m.c.Pause(n)
	case "partition-coordinator":
		m.event("isolate coordinator node %d from the other nodes", coord.ID)
		return m.isolate(coord, true)
	case "partition-minority":
		n := m.c.Nodes[m.rng.Intn(len(m.c.Nodes))]
		m.event("partition: minority {%d} / majority {rest}", n.ID)
		return m.isolate(n, true)
	case "partition-oneway":
		n := m.c.Nodes[m.rng.Intn(len(m.c.Nodes))]
		m.event("one-way: node %d cannot send to the others", n.ID)
		return m.isolate(n, false)
	case "partition-bridge":
		bridge := m.c.Nodes[m.rng.Intn(len(m.c.Nodes))]
		var ends []*Node
		for _, n := range m.c.Nodes {
			if n != bridge {
				ends = append(ends, n)
			}
		}
		m.event("bridge: nodes %d and %d cut apart, both see node %d", ends[0].ID, ends[1].ID, bridge.ID)
		if err := m.block(ends[0], ends[1]); err != nil {
			return err
		}
		return m.block(ends[1], ends[0])
	case "kill-for-good":
		if m.gone != nil {
			return errNothingToDo
		}
		n := m.c.Nodes[3+m.rng.Intn(2)]
		m.event("SIGKILL node %d for good (never restarted)", n.ID)
		n.Gone = true
		m.gone, m.goneAt = n, time.Now()
		m.c.Kill(n)
		go m.watchHealing(ctx, n)
	case "join":
		return m.join()
	case "kill-two":
		if err := m.killTwo(); err != nil {
			return err
		}
		go m.watchHealing(ctx, m.gone, m.alsoGone)
	case "stay":
		hold, err := m.stay()
		m.holdFor = hold
		return err
	case "netem":
		return m.netemOn()
	default:
		return fmt.Errorf("unknown fault family %q", m.family)
	}
	return nil
}

// isolate cuts n off from the other nodes (both ways, or only n's sends).
func (m *Nemesis) isolate(n *Node, both bool) error {
	for _, o := range m.c.Nodes {
		if o == n {
			continue
		}
		if err := m.block(n, o); err != nil {
			return err
		}
		if both {
			if err := m.block(o, n); err != nil {
				return err
			}
		}
	}
	return nil
}

// block drops what a sends to b: a blackhole route to b's address in a's
// namespace (clients on the bridge address still reach both).
func (m *Nemesis) block(a, b *Node) error {
	if !m.c.Netns {
		return fmt.Errorf("partitions need network namespaces")
	}
	m.mu.Lock()
	m.blocks = append(m.blocks, [2]*Node{a, b})
	m.mu.Unlock()
	return nsRun(a.NS, "ip", "route", "add", "blackhole", b.IP+"/32")
}

// NetemAvailable says whether the kernel has sch_netem.
func NetemAvailable(c *Cluster) bool {
	if !c.Netns {
		return false
	}
	n := c.Nodes[0]
	if nsRun(n.NS, "tc", "qdisc", "add", "dev", n.NSVeth, "root", "netem", "delay", "1ms") != nil {
		return false
	}
	nsRun(n.NS, "tc", "qdisc", "del", "dev", n.NSVeth, "root")
	return true
}

func iptablesAvailable() bool {
	_, err := exec.LookPath("iptables")
	return err == nil
}

func (m *Nemesis) netemOn() error {
	if !m.c.Netns {
		return fmt.Errorf("netem needs network namespaces")
	}
	useNetem := NetemAvailable(m.c)
	for _, n := range m.c.Nodes {
		m.netem = append(m.netem, n)
		if useNetem {
			if err := nsRun(n.NS, "tc", "qdisc", "add", "dev", n.NSVeth, "root", "netem",
				"delay", "40ms", "20ms", "loss", "3%", "duplicate", "2%", "reorder", "10%", "50%"); err != nil {
				return err
			}
			continue
		}
		// No sch_netem in this kernel: loss with iptables' statistic match,
		// duplication with TEE, and a slow link (queueing latency) with tbf.
		if err := nsRun(n.NS, "tc", "qdisc", "add", "dev", n.NSVeth, "root", "tbf",
			"rate", "4mbit", "burst", "8kb", "latency", "100ms"); err != nil {
			return err
		}
		if !iptablesAvailable() {
			continue
		}
		for _, o := range m.c.Nodes {
			if o == n {
				continue
			}
			if err := nsRun(n.NS, "iptables", "-A", "OUTPUT", "-d", o.IP, "-m", "statistic", "--mode", "random",
				"--probability", "0.03", "-j", "DROP"); err != nil {
				return err
			}
			if err := nsRun(n.NS, "iptables", "-t", "mangle", "-A", "POSTROUTING", "-d", o.IP, "-m", "statistic",
				"--mode", "random", "--probability", "0.02", "-j", "TEE", "--gateway", o.IP); err != nil {
				return err
			}
		}
	}
	if useNetem {
		m.event("netem: delay 40±20 ms, loss 3%%, duplicate 2%%, reorder 10%% on every node")
	} else if iptablesAvailable() {
		m.event("no sch_netem: tbf 4 mbit (queueing delay) + iptables loss 3%% + TEE duplicate 2%% on every node (no reordering)")
	} else {
		m.event("no sch_netem, no iptables: tbf 4 mbit only")
	}
	return nil
}

// Heal undoes every fault: routes, qdiscs, rules, pauses, dead nodes.
func (m *Nemesis) Heal() {
	m.noteCrashes()
	m.mu.Lock()
	blocks := m.blocks
	m.blocks = nil
	nets := m.netem
	m.netem = nil
	m.mu.Unlock()
	did := []string{}
	for _, b := range blocks {
		nsRun(b[0].NS, "ip", "route", "del", "blackhole", b[1].IP+"/32")
	}
	if len(blocks) > 0 {
		did = append(did, "routes")
	}
	for _, n := range nets {
		nsRun(n.NS, "tc", "qdisc", "del", "dev", n.NSVeth, "root")
		if iptablesAvailable() {
			nsRun(n.NS, "iptables", "-F")
			nsRun(n.NS, "iptables", "-t", "mangle", "-F")
		}
	}
	if len(nets) > 0 {
		did = append(did, "netem")
	}
	for _, n := range m.c.Nodes {
		if n.Paused {
			m.c.Resume(n)
			did = append(did, fmt.Sprintf("SIGCONT %d", n.ID))
		}
	}
	for _, n := range m.c.Nodes {
		if !n.Running() && (m.killed[n.ID] || m.crashed[n.ID]) {
			if err := m.c.Start(n); err != nil {
				m.event("restart node %d failed: %v", n.ID, err)
			} else {
				did = append(did, fmt.Sprintf("restart %d", n.ID))
			}
			delete(m.killed, n.ID)
		}
	}
	if len(did) > 0 {
		m.event("heal: %s", strings.Join(did, ", "))
	}
}

// Unexpected lists nodes that exited without being killed by the nemesis.
var errNothingToDo = fmt.Errorf("nothing to inject")

// watchHealing polls `amulet status` until it shows gone removed from the
// view and no partition waiting on it (no replica there, every new replica
// installed), and dates both.
func (m *Nemesis) watchHealing(ctx context.Context, gone ...*Node) {
	for ctx.Err() == nil {
		removed, rehomed := true, true
		for _, n := range gone {
			r, h := m.c.Healed(n)
			removed, rehomed = removed && r, rehomed && h
		}
		ids := nodeIDs(gone)
		m.mu.Lock()
		if removed && m.removedAt.IsZero() {
			m.removedAt = time.Now()
			m.event("node(s) %v removed from the view (%.1f s after the kill)", ids, m.removedAt.Sub(m.goneAt).Seconds())
		}
		if rehomed && m.rehomedAt.IsZero() {
			m.rehomedAt = time.Now()
			m.event("node(s) %v: partitions re-homed (%.1f s after the kill)", ids, m.rehomedAt.Sub(m.goneAt).Seconds())
		}
		done := !m.rehomedAt.IsZero()
		m.mu.Unlock()
		if done {
			return
		}
		sleepCtx(ctx, 250*time.Millisecond)
	}
}

// nodeIDs lists the nodes' ids.
func nodeIDs(nodes []*Node) []int {
	var ids []int
	for _, n := range nodes {
		ids = append(ids, n.ID)
	}
	return ids
}

// Healing reports kill-for-good's timeline: the node killed (0: none) and
// the seconds from the kill to its removal and to the re-homing (negative:
// not seen).
func (m *Nemesis) Healing() (node int, removed, rehomed float64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.gone == nil {
		return 0, -1, -1
	}
	since := func(t time.Time) float64 {
		if t.IsZero() {
			return -1
		}
		return t.Sub(m.goneAt).Seconds()
	}
	return m.gone.ID, since(m.removedAt), since(m.rehomedAt)
}

func (m *Nemesis) Unexpected() []int {
	m.noteCrashes()
	var out []int
	for _, n := range m.c.Nodes {
		if m.crashed[n.ID] {
			out = append(out, n.ID)
		}
	}
	return out
}

func cleanupLoopbackRules() {}
