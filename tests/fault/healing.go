package main

import (
	"fmt"
	"time"
)

// checkHealing (kill-for-good, kill-two): within 60 s of the end the view
// has removed the node(s) killed for good and their partitions are
// re-homed on live nodes with their state; the detection and re-homing
// times go in the details. kill-two also needs both removed by one view
// change.
func checkHealing(r *Result, c *Cluster, nem *Nemesis, anomaly func(string, ...any)) {
	nem.mu.Lock()
	gone := []*Node{nem.gone}
	if nem.alsoGone != nil {
		gone = append(gone, nem.alsoGone)
	}
	nem.mu.Unlock()
	ids := nodeIDs(gone)
	removed, rehomed := false, false
	var notRemoved, notRehomed []int
	waitUntil(60*time.Second, func() error {
		removed, rehomed = true, true
		notRemoved, notRehomed = nil, nil
		for _, n := range gone {
			r, h := c.Healed(n)
			if !r {
				notRemoved = append(notRemoved, n.ID)
			}
			if !h {
				notRehomed = append(notRehomed, n.ID)
			}
			removed, rehomed = removed && r, rehomed && h
		}
		if !rehomed {
			return fmt.Errorf("not healed")
		}
		return nil
	})
	_, detected, homed := nem.Healing()
	r.Details["healing"] = fmt.Sprintf("node(s) %v killed for good: removed after %.1f s, re-homed after %.1f s (-1: not seen while the nemesis ran)", ids, detected, homed)
	switch {
	case !removed:
		r.Checks["healing"] = "FAIL"
		anomaly("healing: node(s) %v, killed for good, still in the view", notRemoved)
	case !rehomed:
		r.Checks["healing"] = "FAIL"
		anomaly("healing: node(s) %v removed but a partition still waits on them", notRehomed)
	default:
		r.Checks["healing"] = "ok"
	}
	if len(gone) > 1 {
		// Rapid's stable cut: failures that begin together leave in one
		// view change.
		view := c.ViewNumber()
		r.Details["one-view-change"] = fmt.Sprintf("view %d before the kill, %d after", nem.viewAtStart, view)
		if removed && view == nem.viewAtStart+1 {
			r.Checks["one-view-change"] = "ok"
		} else {
			r.Checks["one-view-change"] = "FAIL"
			anomaly("kill-two: view %d before the kill, %d after: not one view change removing %v", nem.viewAtStart, view, ids)
		}
	}
	if r.Checks["healing"] != "ok" {
		return
	}
	// The removed nodes come back with an empty disk: told by their peers
	// that the view removed them, they stop by themselves (exit 0); the
	// final reads then show they changed nothing.
	for _, n := range gone {
		began := time.Now()
		stopped, code, err := c.ComeBack(n, 30*time.Second)
		switch {
		case err != nil:
			r.Checks["removed-node-stops"] = "FAIL"
			anomaly("healing: restarting node %d: %v", n.ID, err)
		case !stopped:
			r.Checks["removed-node-stops"] = "FAIL"
			anomaly("healing: node %d, removed, came back with an empty disk and still ran 30 s later", n.ID)
		case code != 0:
			r.Checks["removed-node-stops"] = "FAIL"
			anomaly("healing: node %d, removed, came back and stopped with exit status %d", n.ID, code)
		default:
			if r.Checks["removed-node-stops"] == "" {
				r.Checks["removed-node-stops"] = "ok"
			}
			r.Details["removed-node-stops"] += fmt.Sprintf("node %d came back with an empty disk and stopped by itself after %.1f s; ", n.ID, time.Since(began).Seconds())
		}
	}
}
