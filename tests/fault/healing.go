package main

import (
	"fmt"
	"time"
)

// checkHealing (kill-for-good): within 60 s of the end the view has
// removed the node killed for good and its partitions are re-homed on
// live nodes with their state; the detection and re-homing times go in
// the details.
func checkHealing(r *Result, c *Cluster, nem *Nemesis, anomaly func(string, ...any)) {
	node, _, _ := nem.Healing()
	var gone *Node
	for _, n := range c.Nodes {
		if n.ID == node {
			gone = n
		}
	}
	removed, rehomed := false, false
	waitUntil(60*time.Second, func() error {
		removed, rehomed = c.Healed(gone)
		if !rehomed {
			return fmt.Errorf("not healed")
		}
		return nil
	})
	_, detected, homed := nem.Healing()
	r.Details["healing"] = fmt.Sprintf("node %d killed for good: removed after %.1f s, re-homed after %.1f s (-1: not seen while the nemesis ran)", node, detected, homed)
	switch {
	case !removed:
		r.Checks["healing"] = "FAIL"
		anomaly("healing: node %d, killed for good, is still in the view", node)
	case !rehomed:
		r.Checks["healing"] = "FAIL"
		anomaly("healing: node %d was removed but a partition still waits on it", node)
	default:
		r.Checks["healing"] = "ok"
		// The removed node comes back with an empty disk: told by its
		// peers that the view removed it, it stops by itself (exit 0);
		// the final reads then show it changed nothing.
		began := time.Now()
		stopped, code, err := c.ComeBack(gone, 30*time.Second)
		switch {
		case err != nil:
			r.Checks["removed-node-stops"] = "FAIL"
			anomaly("healing: restarting node %d: %v", node, err)
		case !stopped:
			r.Checks["removed-node-stops"] = "FAIL"
			anomaly("healing: node %d, removed, came back with an empty disk and still ran 30 s later", node)
		case code != 0:
			r.Checks["removed-node-stops"] = "FAIL"
			anomaly("healing: node %d, removed, came back and stopped with exit status %d", node, code)
		default:
			r.Checks["removed-node-stops"] = "ok"
			r.Details["removed-node-stops"] = fmt.Sprintf("node %d came back with an empty disk and stopped by itself after %.1f s", node, time.Since(began).Seconds())
		}
	}
}
