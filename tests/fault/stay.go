package main

// The membership families that check the cut (docs/membership.md,
// "Timing"; Rapid's multi-observer cut):
//
//   - stay: faults that must remove nobody, in turn on five nodes: a 4 s
//     SIGSTOP of one node, 3% packet loss on every link of one node, and a
//     bridge partition (two groups of nodes cut apart, a fifth node
//     seeing both), the last two held past the 4.5 s after which an
//     observer calls an edge failed. At the end the view must be the one
//     the cluster started with: no node removed, no view change.
//   - kill-two: two nodes SIGKILLed at the same instant and never
//     restarted. They must leave the view in one view change, and their
//     partitions be re-homed (the healing checks of kill-for-good, for
//     both).

import (
	"fmt"
	"strings"
	"time"
)

// Holds of the stay family's faults: the pause at the longest a node may
// be silent without removal; loss and the bridge past the edge timeout,
// so that some observers report their edge failed and the cut must not
// follow.
const (
	stayPause = 4 * time.Second
	stayLong  = 8 * time.Second
)

// stay injects the next of the stay family's faults and returns how long
// to hold it.
func (m *Nemesis) stay() (time.Duration, error) {
	if m.viewAtStart == 0 {
		m.viewAtStart = m.c.ViewNumber()
	}
	turn := m.stayTurn % 3
	m.stayTurn++
	nodes := m.c.Nodes
	n := nodes[m.rng.Intn(len(nodes))]
	switch turn {
	case 0:
		m.event("SIGSTOP node %d for %s (it must stay in the view)", n.ID, stayPause)
		m.c.Pause(n)
		return stayPause, nil
	case 1:
		if !m.c.Netns {
			return 0, fmt.Errorf("loss needs network namespaces")
		}
		m.mu.Lock()
		m.netem = append(m.netem, n)
		m.mu.Unlock()
		if NetemAvailable(m.c) {
			if err := nsRun(n.NS, "tc", "qdisc", "add", "dev", n.NSVeth, "root", "netem", "loss", "3%"); err != nil {
				return 0, err
			}
		} else {
			if !iptablesAvailable() {
				return 0, fmt.Errorf("loss needs sch_netem or iptables")
			}
			for _, o := range nodes {
				if o != n {
					if err := nsRun(n.NS, "iptables", "-A", "OUTPUT", "-d", o.IP, "-m", "statistic", "--mode", "random",
						"--probability", "0.03", "-j", "DROP"); err != nil {
						return 0, err
					}
				}
			}
		}
		m.event("3%% packet loss on node %d's link for %s (it must stay in the view)", n.ID, stayLong)
		return stayLong, nil
	default:
		// Two groups of two, cut apart both ways; the fifth node (the
		// bridge) sees all four.
		order := m.rng.Perm(len(nodes))
		bridge := nodes[order[0]]
		a := []*Node{nodes[order[1]], nodes[order[2]]}
		b := []*Node{nodes[order[3]], nodes[order[4]]}
		for _, x := range a {
			for _, y := range b {
				if err := m.block(x, y); err != nil {
					return 0, err
				}
				if err := m.block(y, x); err != nil {
					return 0, err
				}
			}
		}
		m.event("bridge: nodes %d, %d cut apart from %d, %d for %s; node %d sees all (nobody may be removed)",
			a[0].ID, a[1].ID, b[0].ID, b[1].ID, stayLong, bridge.ID)
		return stayLong, nil
	}
}

// killTwo SIGKILLs two nodes at one instant, never restarted: node 5 and
// node 2 or 3. No partition loses two replicas (the groups are {1,2,3},
// {4,5,1} and {2,3,4}) and the global stream (acceptors 1-3) loses one,
// so the cluster can heal; with node 2 or 3 gone, self-healing also
// replaces the global stream.
func (m *Nemesis) killTwo() error {
	if m.gone != nil {
		return errNothingToDo
	}
	a, b := m.c.Nodes[1+m.rng.Intn(2)], m.c.Nodes[4]
	m.viewAtStart = m.c.ViewNumber()
	m.event("SIGKILL nodes %d and %d at once, for good (view %d)", a.ID, b.ID, m.viewAtStart)
	a.Gone, b.Gone = true, true
	m.mu.Lock()
	m.gone, m.alsoGone, m.goneAt = a, b, time.Now()
	m.mu.Unlock()
	m.c.Kill(a)
	m.c.Kill(b)
	return nil
}

// ViewNumber is the view's number by `amulet status` (0: no answer).
func (c *Cluster) ViewNumber() int {
	out, err := c.status()
	if err != nil {
		return 0
	}
	return viewNumberIn(out)
}

// viewNumberIn is the view's number in an `amulet status` output (0:
// none).
func viewNumberIn(status string) int {
	for _, line := range strings.Split(status, "\n") {
		line = strings.TrimSpace(line)
		var n int
		if strings.HasPrefix(line, "view ") {
			if _, err := fmt.Sscanf(line, "view %d:", &n); err == nil {
				return n
			}
		}
	}
	return 0
}

// removedIn is the removed ids ("2, 5"; "" for none) of the view line
// in an `amulet status` output.
func removedIn(status string) string {
	for _, line := range strings.Split(status, "\n") {
		line = strings.TrimSpace(line)
		if !strings.HasPrefix(line, "view ") {
			continue
		}
		if i := strings.Index(line, "removed ["); i >= 0 {
			rest := line[i+len("removed ["):]
			if j := strings.Index(rest, "]"); j >= 0 {
				return rest[:j]
			}
		}
		return ""
	}
	return ""
}

// checkStay (stay): after every fault healed, the view is the one the
// run started with and removed nobody.
func checkStay(r *Result, c *Cluster, nem *Nemesis, anomaly func(string, ...any)) {
	var view int
	var removed string
	err := waitUntil(30*time.Second, func() error {
		out, err := c.status()
		if err != nil {
			return err
		}
		view, removed = viewNumberIn(out), removedIn(out)
		if view == 0 {
			return fmt.Errorf("no view line in amulet status")
		}
		return nil
	})
	r.Details["stay"] = fmt.Sprintf("%d faults (4 s SIGSTOP, 3%% loss for 8 s, bridge for 8 s, in turn): view %d at the start, %d at the end, removed [%s]",
		nem.Injects, nem.viewAtStart, view, removed)
	switch {
	case err != nil:
		r.Checks["stay"] = "FAIL"
		anomaly("stay: amulet status: %v", err)
	case removed != "" || view != nem.viewAtStart:
		r.Checks["stay"] = "FAIL"
		anomaly("stay: the view changed (view %d at the start, %d at the end, removed [%s]) under faults that must remove nobody", nem.viewAtStart, view, removed)
	default:
		r.Checks["stay"] = "ok"
	}
}
