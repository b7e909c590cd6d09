package main

// The tailers' check (log_tail.go records log.tails.jsonl): each tailer's
// positions are consecutive across its reconnections, except at trim
// jumps, and a jump lands on a position some trim of that log trimmed to,
// past where the tailer was; every entry a tailer delivered agrees with
// the acknowledged appends, with the final read (where it still holds the
// position) and with every other tailer, and was appended to that log by
// some client.

import (
	"fmt"
	"path/filepath"
	"sort"
	"strings"
)

// TailSummary is what the tailers did, for the scenario's details.
type TailSummary struct {
	Tailers    int
	Entries    int            // entries delivered, all tailers
	Messages   int            // messages with entries
	Heartbeats int            // messages without
	Connects   int            // streams opened
	Reconnects int            // streams opened after the first of a tailer
	Jumps      int            // trimmed past, went on from the first position
	Breaks     map[string]int // by reason
	Lags       []int64        // ns from an append's acknowledgement to a tailer's delivery of it (0: before)
	Behind     []int64        // per tailer: the final read's end minus its position at stop (-1: unknown)
	Span       int64          // ns from the first start to the last stop
}

func (s *TailSummary) Verdict(problems int) string {
	v := "ok"
	if problems > 0 {
		v = "VIOLATED"
	}
	return fmt.Sprintf("%s (%d tailers, %d entries, %d reconnects, %d jumps)", v, s.Tailers, s.Entries, s.Reconnects, s.Jumps)
}

func (s *TailSummary) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d tailers: %d entries in %d messages", s.Tailers, s.Entries, s.Messages)
	if s.Span > 0 {
		fmt.Fprintf(&b, " (%.0f/s)", float64(s.Entries)/(float64(s.Span)/1e9))
	}
	fmt.Fprintf(&b, ", %d heartbeats; %d streams, %d reconnects", s.Heartbeats, s.Connects, s.Reconnects)
	var reasons []string
	for k := range s.Breaks {
		reasons = append(reasons, k)
	}
	sort.Strings(reasons)
	if len(reasons) > 0 {
		var parts []string
		for _, k := range reasons {
			parts = append(parts, fmt.Sprintf("%s %d", k, s.Breaks[k]))
		}
		fmt.Fprintf(&b, " (breaks: %s)", strings.Join(parts, ", "))
	}
	fmt.Fprintf(&b, ", %d trim jumps", s.Jumps)
	if len(s.Lags) > 0 {
		lags := append([]int64(nil), s.Lags...)
		sort.Slice(lags, func(i, j int) bool { return lags[i] < lags[j] })
		q := func(f float64) float64 { return float64(lags[int(f*float64(len(lags)-1))]) / 1e6 }
		fmt.Fprintf(&b, "; acknowledgement to delivery p50 %.1f ms, p99 %.1f ms, max %.0f ms", q(0.5), q(0.99), q(1))
	}
	if len(s.Behind) > 0 {
		var parts []string
		for _, x := range s.Behind {
			if x < 0 {
				parts = append(parts, "?")
			} else {
				parts = append(parts, fmt.Sprint(x))
			}
		}
		fmt.Fprintf(&b, "; entries behind the final end at stop %s", strings.Join(parts, "/"))
	}
	return b.String()
}

// tailProblems keeps the first few problems of each kind and counts the rest.
type tailProblems struct {
	list  []string
	count map[string]int
}

const tailProblemsShown = 8

func (p *tailProblems) add(kind, format string, args ...any) {
	if p.count == nil {
		p.count = map[string]int{}
	}
	p.count[kind]++
	if p.count[kind] <= tailProblemsShown {
		p.list = append(p.list, fmt.Sprintf(format, args...))
	}
}

func (p *tailProblems) all() []string {
	var kinds []string
	for k, n := range p.count {
		if n > tailProblemsShown {
			kinds = append(kinds, k)
		}
	}
	sort.Strings(kinds)
	out := append([]string(nil), p.list...)
	for _, k := range kinds {
		out = append(out, fmt.Sprintf("%d tail problems of the kind %q in all", p.count[k], k))
	}
	return out
}

// CheckTails checks the tailers' events against the log history (its
// appends, trims and final reads).
func CheckTails(ops []*LogOp, events []*TailEvent) ([]string, *TailSummary) {
	var pr tailProblems
	sum := &TailSummary{Breaks: map[string]int{}}
	writes := logWrites(ops)
	finals, _ := logFinals(ops) // the final check reports their problems
	// Acknowledged positions: log -> position -> value.
	ackedAt := map[string]map[uint64]string{}
	for log, vs := range writes {
		for v, a := range vs {
			if a.acked && a.pos != nil {
				if ackedAt[log] == nil {
					ackedAt[log] = map[uint64]string{}
				}
				ackedAt[log][*a.pos] = v
			}
		}
	}
	// Trims that may have applied, by log: Below -> earliest call.
	trims := map[string]map[uint64]int64{}
	for _, o := range ops {
		if o.Kind != "trim" || o.Status == "fail" || o.OutOfRange != "" {
			continue
		}
		if trims[o.Log] == nil {
			trims[o.Log] = map[uint64]int64{}
		}
		if c, ok := trims[o.Log][o.Below]; !ok || o.Call < c {
			trims[o.Log][o.Below] = o.Call
		}
	}
	type delivery struct {
		value  string
		tailer int
		where  string
	}
	byPos := map[string]map[uint64]delivery{} // what the first tailer to deliver a position delivered
	byValue := map[string]string{}            // value -> "log@pos"

	byTailer := map[int][]*TailEvent{}
	var ids []int
	for _, e := range events {
		if _, ok := byTailer[e.Tailer]; !ok {
			ids = append(ids, e.Tailer)
		}
		byTailer[e.Tailer] = append(byTailer[e.Tailer], e)
	}
	sort.Ints(ids)
	sum.Tailers = len(ids)
	var firstAt, lastAt int64 = -1, -1
	for _, id := range ids {
		evs := byTailer[id]
		log := evs[0].Log
		name := fmt.Sprintf("tailer %d (%s)", id, log)
		nodes := map[int]string{}
		var next *uint64
		stopped := false
		connects := 0
		where := func(e *TailEvent) string {
			return fmt.Sprintf("stream %d at %s, %.3fs", e.Conn, nodes[e.Conn], float64(e.At)/1e9)
		}
		for _, e := range evs {
			if e.Log != log {
				pr.add("log", "%s: an event of log %s", name, e.Log)
				continue
			}
			if e.Event != "start" && next == nil {
				pr.add("order", "%s: %s before its start", name, e.Event)
				next = ptr(e.From)
			}
			switch e.Event {
			case "start":
				if next != nil {
					pr.add("order", "%s: started twice", name)
				}
				next = ptr(e.From)
				if firstAt < 0 || e.At < firstAt {
					firstAt = e.At
				}
			case "connect":
				connects++
				nodes[e.Conn] = e.Node
				if e.From != *next {
					pr.add("gap", "%s: stream %d at %s opened from %d, but the tailer was at %d", name, e.Conn, e.Node, e.From, *next)
					next = ptr(e.From)
				}
			case "entries", "heartbeat":
				if e.Event == "entries" {
					sum.Messages++
				} else {
					sum.Heartbeats++
				}
				switch {
				case e.From > *next && len(e.Entries) > 0:
					pr.add("gap", "%s: gap: entries from %d after position %d (%s): %d positions never delivered", name, e.From, *next, where(e), e.From-*next)
				case e.From > *next:
					pr.add("gap", "%s: gap: a heartbeat at %d after position %d (%s)", name, e.From, *next, where(e))
				case e.From < *next && len(e.Entries) > 0:
					pr.add("duplicate", "%s: duplicate: entries from %d, but %d..%d were delivered already (%s)", name, e.From, e.From, *next-1, where(e))
				case e.From < *next:
					pr.add("duplicate", "%s: a heartbeat at %d, but the tailer was at %d (%s)", name, e.From, *next, where(e))
				}
				for i, v := range e.Entries {
					p := e.From + uint64(i)
					sum.Entries++
					at := fmt.Sprintf("%s@%d", log, p)
					if a, ok := writes[log][v]; ok {
						if a.acked && a.op.Return >= 0 {
							sum.Lags = append(sum.Lags, max(0, e.At-a.op.Return))
						}
						if a.acked && a.pos != nil && *a.pos != p {
							pr.add("disagreement", "%s: delivered %s at %d (%s), but %s was acknowledged at %d", name, v, p, where(e), a.op.String(), *a.pos)
						}
					} else {
						other := ""
						for l2, vs := range writes {
							if _, ok := vs[v]; ok && l2 != log {
								other = " (it was appended to " + l2 + ")"
							}
						}
						pr.add("never-appended", "%s: delivered %s at %d (%s), which no client appended to %s%s", name, v, p, where(e), log, other)
					}
					if w, ok := ackedAt[log][p]; ok && w != v {
						pr.add("disagreement", "%s: delivered %s at %d (%s), but the append of %s was acknowledged at %d", name, v, p, where(e), w, p)
					}
					if f := finals[log]; f != nil && p >= f.first {
						if held, ok := f.at(p); !ok {
							pr.add("final", "%s: delivered %s at %d (%s), past the final read's end %d", name, v, p, where(e), f.end)
						} else if held != v {
							pr.add("final", "%s: delivered %s at %d (%s), but the final read holds %s there", name, v, p, where(e), held)
						}
					}
					if byPos[log] == nil {
						byPos[log] = map[uint64]delivery{}
					}
					if d, ok := byPos[log][p]; !ok {
						byPos[log][p] = delivery{value: v, tailer: id, where: where(e)}
					} else if d.value != v && d.tailer != id {
						pr.add("tailers-disagree", "%s: tailers %d and %d disagree at %d: %s (%s) and %s (%s)", log, d.tailer, id, p, d.value, d.where, v, where(e))
					}
					if prev, ok := byValue[v]; ok && prev != at {
						pr.add("value-twice", "%s: delivered %s at %s, which a tailer delivered at %s", name, v, at, prev)
					} else if !ok {
						byValue[v] = at
					}
				}
				next = ptr(e.From + uint64(len(e.Entries)))
			case "jump":
				sum.Jumps++
				if e.From != *next {
					pr.add("gap", "%s: jumped from %d, but the tailer was at %d", name, e.From, *next)
				}
				switch {
				case e.To == nil:
					pr.add("jump", "%s: a jump from %d to nowhere", name, e.From)
				case *e.To <= e.From:
					pr.add("jump", "%s: told at %d (%.3fs) that the log was trimmed below %d, which is not past its position (%s)", name, e.From, float64(e.At)/1e9, *e.To, e.Err)
				default:
					if c, ok := trims[log][*e.To]; !ok || c > e.At {
						pr.add("jump", "%s: jumped from %d to %d (%.3fs), but no trim of %s below %d had been called", name, e.From, *e.To, float64(e.At)/1e9, log, *e.To)
					}
					if f := finals[log]; f != nil && *e.To > f.first {
						pr.add("jump", "%s: jumped to %d, past the final read's first position %d", name, *e.To, f.first)
					}
				}
				if e.To != nil && *e.To > *next {
					next = ptr(*e.To)
				}
			case "break":
				sum.Breaks[e.Reason]++
			case "stop":
				stopped = true
				if e.From != *next {
					pr.add("gap", "%s: stopped at %d, but its last message ended at %d", name, e.From, *next)
				}
				if e.At > lastAt {
					lastAt = e.At
				}
			default:
				pr.add("order", "%s: unknown event %q", name, e.Event)
			}
		}
		sum.Connects += connects
		if connects > 1 {
			sum.Reconnects += connects - 1
		}
		behind := int64(-1)
		if f := finals[log]; f != nil && stopped && next != nil && *next <= f.end {
			behind = int64(f.end - *next)
		}
		sum.Behind = append(sum.Behind, behind)
	}
	if firstAt >= 0 && lastAt > firstAt {
		sum.Span = lastAt - firstAt
	}
	return pr.all(), sum
}

// ReadTailHistory reads a log.tails.jsonl.
func ReadTailHistory(path string) ([]*TailEvent, error) { return readJSONL[TailEvent](path) }

// tailsPathFor is the tails file next to a log.history.jsonl.
func tailsPathFor(history string) string {
	return filepath.Join(filepath.Dir(history), strings.TrimSuffix(strings.TrimSuffix(filepath.Base(history), ".jsonl"), ".history")+".tails.jsonl")
}
