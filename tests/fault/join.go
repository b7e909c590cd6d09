package main

// The join family (docs/membership.md, "Joining a running cluster"): a
// sixth node, named by no configuration file, joins the five-node cluster
// with `amulet join` while the workload runs. The view must admit it and
// the balancer move partitions onto it (every node within one partition
// of the others), with every checker of the workload running through the
// moves.

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"time"
)

// join starts the joiner once: `amulet join` asks node 1 to order its
// join, writes its configuration from node 1's and runs the node.
func (m *Nemesis) join() error {
	n := m.c.Joiner
	if n == nil || !m.joinedAt.IsZero() {
		return errNothingToDo
	}
	c := m.c
	n.args = []string{"join", "--addr", c.Nodes[0].ClientAddr, "--timeout-secs", "20",
		"--like", c.Nodes[0].Config, "--peer-address", n.PeerAddr, "--client-address", n.ClientAddr,
		"--data-dir", filepath.Join(c.Dir, fmt.Sprintf("node-%d", n.ID))}
	if c.TLSDir != "" {
		n.args = append(n.args, "--tls-dir", c.TLSDir, "--user", "admin")
	}
	m.event("node %d joins (amulet join at node 1)", n.ID)
	if err := c.Start(n); err != nil {
		return err
	}
	// Restarts (none in this family) run the node from the file written.
	c.Nodes = append(c.Nodes, n)
	m.mu.Lock()
	m.joinedAt = time.Now()
	m.mu.Unlock()
	go m.watchJoin(context.Background(), n)
	return nil
}

// watchJoin notes when the view admits n and when n first replicates a
// partition (bounded: 120 s).
func (m *Nemesis) watchJoin(ctx context.Context, n *Node) {
	deadline := time.Now().Add(120 * time.Second)
	for time.Now().Before(deadline) {
		active, counts := m.c.Joined(n)
		m.mu.Lock()
		if active && m.admittedAt.IsZero() {
			m.admittedAt = time.Now()
			m.event("node %d admitted to the view (%.1f s after it started)", n.ID, m.admittedAt.Sub(m.joinedAt).Seconds())
		}
		if counts[n.ID] > 0 && m.placedAt.IsZero() {
			m.placedAt = time.Now()
			m.event("node %d replicates a partition (%.1f s after it started)", n.ID, m.placedAt.Sub(m.joinedAt).Seconds())
		}
		done := !m.placedAt.IsZero()
		m.mu.Unlock()
		if done {
			return
		}
		sleepCtx(ctx, 250*time.Millisecond)
	}
}

// Joined asks the running nodes (`amulet status`) whether n is an active
// member of the view, and how many partitions each node replicates.
func (c *Cluster) Joined(n *Node) (active bool, counts map[int]int) {
	counts = map[int]int{}
	out, err := c.status()
	if err != nil {
		return false, counts
	}
	for _, line := range strings.Split(out, "\n") {
		line = strings.TrimSpace(line)
		if strings.HasPrefix(line, fmt.Sprintf("node %d %s active", n.ID, n.PeerAddr)) {
			active = true
		}
		if strings.HasPrefix(line, "partition ") {
			if i := strings.Index(line, "replicas ["); i >= 0 {
				for _, f := range strings.Split(strings.TrimSuffix(line[i+len("replicas ["):], "]"), ", ") {
					var id int
					if _, err := fmt.Sscan(f, &id); err == nil {
						counts[id]++
					}
				}
			}
		}
	}
	return active, counts
}

// status is `amulet status` asked of every running node.
func (c *Cluster) status() (string, error) {
	var live []string
	for _, n := range c.Nodes {
		if !n.Gone {
			live = append(live, n.ClientAddr)
		}
	}
	args := []string{"--addr", strings.Join(live, ","), "--timeout-secs", "5"}
	if c.TLSDir != "" {
		args = append(args, "--tls-dir", c.TLSDir, "--user", "admin")
	}
	return runOutput(c.Bin, append(args, "status")...)
}

// checkJoin (join): within 60 s of the end the joiner is an active member
// and the partitions are spread over the six nodes, each within one of
// the others; the times go in the details.
func checkJoin(r *Result, c *Cluster, nem *Nemesis, anomaly func(string, ...any)) {
	n := c.Joiner
	var active bool
	var counts map[int]int
	even := func() bool {
		if len(counts) != len(c.Nodes) {
			return false
		}
		lo, hi := 1<<30, 0
		for _, k := range counts {
			lo, hi = min(lo, k), max(hi, k)
		}
		return hi-lo <= 1
	}
	waitUntil(60*time.Second, func() error {
		active, counts = c.Joined(n)
		if !active || !even() {
			return fmt.Errorf("not settled")
		}
		return nil
	})
	nem.mu.Lock()
	since := func(t time.Time) float64 {
		if t.IsZero() {
			return -1
		}
		return t.Sub(nem.joinedAt).Seconds()
	}
	r.Details["join"] = fmt.Sprintf("node %d joined: admitted after %.1f s, first partition after %.1f s (-1: not seen while the nemesis ran); replicas per node at the end %v",
		n.ID, since(nem.admittedAt), since(nem.placedAt), counts)
	nem.mu.Unlock()
	switch {
	case !active:
		r.Checks["join"] = "FAIL"
		anomaly("join: node %d is not an active member of the view", n.ID)
	case counts[n.ID] == 0:
		r.Checks["join"] = "FAIL"
		anomaly("join: node %d replicates no partition", n.ID)
	case !even():
		r.Checks["join"] = "FAIL"
		anomaly("join: partitions per node not within one of each other: %v", counts)
	default:
		r.Checks["join"] = "ok"
	}
}
