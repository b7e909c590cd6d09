package main

// The tailers' checker self-test: hand-made tail histories that must pass
// (reconnects, heartbeats, a trim jump, two tailers) and that must fail (a
// gap, a duplicate, an entry that disagrees with an acknowledged append,
// with the final read or with another tailer, a value nobody appended, a
// bogus jump, and what the injected bug tail-skips produces).

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func tev(tailer int, event string, at int64, conn int, from uint64, entries ...string) *TailEvent {
	e := &TailEvent{Tailer: tailer, Log: "A", Event: event, At: at, Conn: conn, From: from, Entries: entries}
	switch event {
	case "connect":
		e.Node = "n" + string(rune('0'+conn))
	case "entries", "heartbeat":
		e.First, e.End = ptr(0), ptr(from+uint64(len(entries)))
	case "break":
		e.Reason = "unavailable"
	}
	return e
}

func tjump(tailer int, at int64, conn int, from, to uint64) *TailEvent {
	return &TailEvent{Tailer: tailer, Log: "A", Event: "jump", At: at, Conn: conn, From: from, To: ptr(to),
		Err: "OUT_OF_RANGE: log \"A\" is trimmed below position " + string(rune('0'+to))}
}

// tailOps is the workload's history the tails are checked against: log A
// gets c0-1@0, c0-2@1, c1-1@2, c1-2 (unknown outcome, applied at 3),
// c0-3@4; trimmed below 2; the final read finds [2, 5).
func tailOps() []*LogOp {
	return []*LogOp{
		lapp(0, "A", "c0-1", 0, 10, 0),
		lapp(0, "A", "c0-2", 11, 20, 1),
		lapp(1, "A", "c1-1", 21, 30, 2),
		{Client: 1, Kind: "append", Log: "A", Value: "c1-2", Call: 31, Return: -1, Status: "unknown"},
		lapp(0, "A", "c0-3", 35, 40, 4),
		lapp(0, "B", "c0-9", 36, 41, 0),
		ltrim(2, "A", 2, 50, 55, 2, 5),
		{Client: 9, Kind: "bounds", Log: "A", Call: 100, Return: 101, Status: "ok", First: ptr(2), End: ptr(5), Final: true},
		{Client: 9, Kind: "read", Log: "A", From: 2, Max: 200, Call: 102, Return: 103, Status: "ok", Read: []string{"c1-1", "c1-2", "c0-3"}, First: ptr(2), End: ptr(5), Final: true},
	}
}

// goodTails: tailer 0 follows A from 0, its stream goes silent and it
// reconnects elsewhere from 2; tailer 1 loses its stream at 1, is told the
// log was trimmed below 2 and jumps there.
func goodTails() []*TailEvent {
	return []*TailEvent{
		tev(0, "start", 1, 0, 0),
		tev(0, "connect", 2, 1, 0),
		tev(0, "entries", 12, 1, 0, "c0-1", "c0-2"),
		tev(0, "heartbeat", 22, 1, 2),
		tev(0, "break", 28, 1, 2),
		tev(0, "connect", 29, 2, 2),
		tev(0, "entries", 33, 2, 2, "c1-1"),
		tev(0, "entries", 42, 2, 3, "c1-2", "c0-3"),
		tev(0, "stop", 90, 0, 5),
		tev(1, "start", 5, 0, 0),
		tev(1, "connect", 6, 1, 0),
		tev(1, "entries", 13, 1, 0, "c0-1"),
		tev(1, "break", 14, 1, 1),
		tev(1, "connect", 56, 2, 1),
		tjump(1, 57, 2, 1, 2),
		tev(1, "connect", 58, 3, 2),
		tev(1, "entries", 60, 3, 2, "c1-1", "c1-2", "c0-3"),
		tev(1, "stop", 91, 0, 5),
	}
}

func TestTailsAcceptConsistent(t *testing.T) {
	problems, sum := CheckTails(tailOps(), goodTails())
	if len(problems) != 0 {
		t.Fatalf("false alarm: %q", problems)
	}
	if sum.Tailers != 2 || sum.Entries != 9 || sum.Connects != 5 || sum.Reconnects != 3 || sum.Jumps != 1 || sum.Heartbeats != 1 {
		t.Fatalf("summary %+v", sum)
	}
	if got := sum.Verdict(0); !strings.HasPrefix(got, "ok (2 tailers, 9 entries, 3 reconnects, 1 jumps)") {
		t.Fatalf("verdict %q", got)
	}
	if s := sum.String(); !strings.Contains(s, "behind the final end at stop 0/0") {
		t.Fatalf("details %q", s)
	}
	// No tailer at all: nothing to say.
	if p, _ := CheckTails(tailOps(), nil); len(p) != 0 {
		t.Fatalf("no tails: %q", p)
	}
}

func TestTailsRejectBroken(t *testing.T) {
	cases := []struct {
		name   string
		change func([]*TailEvent) []*TailEvent
		want   string
	}{
		{"gap across a reconnect", func(es []*TailEvent) []*TailEvent {
			// The second stream's first message starts at 3: c1-1 (2) is
			// never delivered.
			es[6] = tev(0, "entries", 33, 2, 3, "c1-2")
			es[7] = tev(0, "entries", 42, 2, 4, "c0-3")
			return es
		}, "gap: entries from 3 after position 2"},
		{"gap inside a stream", func(es []*TailEvent) []*TailEvent {
			es[2] = tev(0, "entries", 12, 1, 0, "c0-1")
			es[3] = tev(0, "heartbeat", 22, 1, 2)
			return es
		}, "gap: a heartbeat at 2 after position 1"},
		{"duplicate after a reconnect", func(es []*TailEvent) []*TailEvent {
			// The new stream starts again at 1.
			es[6] = tev(0, "entries", 33, 2, 1, "c0-2", "c1-1")
			return es
		}, "duplicate: entries from 1, but 1..1 were delivered already"},
		{"reconnect from behind", func(es []*TailEvent) []*TailEvent {
			es[5] = tev(0, "connect", 29, 2, 1)
			return es
		}, "opened from 1, but the tailer was at 2"},
		{"disagrees with an acknowledged append", func(es []*TailEvent) []*TailEvent {
			// Swapped: c0-2 was acknowledged at 1.
			es[2] = tev(0, "entries", 12, 1, 0, "c0-2", "c0-1")
			return es
		}, "delivered c0-2 at 0 (stream 1 at n1, 0.000s), but append(A, c0-2) -> 1 was acknowledged at 1"},
		{"disagrees with the final read", func(es []*TailEvent) []*TailEvent {
			// Position 3 held c1-2 (an append of unknown outcome):
			// only the final read and the other tailer say so.
			es[7] = tev(0, "entries", 42, 2, 3, "c0-3", "c1-2")
			return es
		}, "but the final read holds c1-2 there"},
		{"two tailers disagree", func(es []*TailEvent) []*TailEvent {
			es[7] = tev(0, "entries", 42, 2, 3, "c0-3", "c1-2")
			return es
		}, "tailers 0 and 1 disagree at 3"},
		{"never appended", func(es []*TailEvent) []*TailEvent {
			es[7] = tev(0, "entries", 42, 2, 3, "zz", "c0-3")
			return es
		}, "delivered zz at 3"},
		{"appended to the other log", func(es []*TailEvent) []*TailEvent {
			es[7] = tev(0, "entries", 42, 2, 3, "c0-9", "c0-3")
			return es
		}, "(it was appended to B)"},
		{"past the final end", func(es []*TailEvent) []*TailEvent {
			es[7] = tev(0, "entries", 42, 2, 3, "c1-2", "c0-3", "c1-2")
			return es
		}, "past the final read's end 5"},
		{"jump that does not move forward", func(es []*TailEvent) []*TailEvent {
			es[14] = tjump(1, 57, 2, 1, 1)
			es[15] = tev(1, "connect", 58, 3, 1)
			es[16] = tev(1, "entries", 60, 3, 1, "c0-2", "c1-1", "c1-2", "c0-3")
			return es
		}, "which is not past its position"},
		{"jump to a position no trim reached", func(es []*TailEvent) []*TailEvent {
			es[14] = tjump(1, 57, 2, 1, 3)
			es[15] = tev(1, "connect", 58, 3, 3)
			es[16] = tev(1, "entries", 60, 3, 3, "c1-2", "c0-3")
			return es
		}, "but no trim of A below 3 had been called"},
		{"jump before the trim was called", func(es []*TailEvent) []*TailEvent {
			es[14].At = 45
			return es
		}, "but no trim of A below 2 had been called"},
		{"tail-skips: resumed one entry late", func(es []*TailEvent) []*TailEvent {
			// What the injected bug serves: a stream reopened inside the
			// log from 2 reads from 3 and labels it 2, and so on.
			es[6] = tev(0, "entries", 33, 2, 2, "c1-2")
			es[7] = tev(0, "entries", 42, 2, 3, "c0-3")
			es[8] = tev(0, "stop", 90, 0, 4)
			return es
		}, "tailers 0 and 1 disagree at 2"},
	}
	for _, c := range cases {
		es := c.change(goodTails())
		problems, sum := CheckTails(tailOps(), es)
		got := strings.Join(problems, "\n")
		if !strings.Contains(got, c.want) {
			t.Errorf("%s: problems\n%s\nwant %q", c.name, got, c.want)
		}
		if v := sum.Verdict(len(problems)); !strings.HasPrefix(v, "VIOLATED") {
			t.Errorf("%s: verdict %q", c.name, v)
		}
	}
}

func TestTailsBugAlsoCaughtByAcks(t *testing.T) {
	// One tailer alone, resuming inside the log with the bug: c1-1 was
	// acknowledged at 2 but is delivered at 1.
	es := []*TailEvent{
		tev(0, "start", 1, 0, 0),
		tev(0, "connect", 2, 1, 0),
		tev(0, "entries", 12, 1, 0, "c0-1"),
		tev(0, "break", 14, 1, 1),
		tev(0, "connect", 32, 2, 1),
		tev(0, "entries", 33, 2, 1, "c1-1"),
		tev(0, "stop", 34, 0, 2),
	}
	problems, _ := CheckTails(tailOps(), es)
	if got := strings.Join(problems, "\n"); !strings.Contains(got, "delivered c1-1 at 1") || !strings.Contains(got, "acknowledged at 2") {
		t.Fatalf("problems %q", got)
	}
}

func TestTailsProblemsAreCapped(t *testing.T) {
	ops := tailOps()
	es := []*TailEvent{tev(0, "start", 1, 0, 0), tev(0, "connect", 2, 1, 0)}
	for i := 0; i < 30; i++ {
		es = append(es, tev(0, "entries", int64(3+i), 1, uint64(2*i), "zz"+string(rune('a'+i))))
	}
	problems, _ := CheckTails(ops, es)
	got := strings.Join(problems, "\n")
	if !strings.Contains(got, `30 tail problems of the kind "never-appended" in all`) ||
		!strings.Contains(got, `29 tail problems of the kind "gap" in all`) || len(problems) > 4*tailProblemsShown {
		t.Fatalf("%d problems:\n%s", len(problems), got)
	}
}

func TestTailsFile(t *testing.T) {
	dir := t.TempDir()
	hist := filepath.Join(dir, "log.history.jsonl")
	if tailsPathFor(hist) != filepath.Join(dir, "log.tails.jsonl") {
		t.Fatalf("tails path %s", tailsPathFor(hist))
	}
	if err := WriteLogHistory(hist, tailOps()); err != nil {
		t.Fatal(err)
	}
	if err := writeJSONL(tailsPathFor(hist), goodTails()); err != nil {
		t.Fatal(err)
	}
	back, err := ReadTailHistory(tailsPathFor(hist))
	if err != nil || len(back) != len(goodTails()) {
		t.Fatalf("round trip: %v, %d events", err, len(back))
	}
	if code := checkLogFile(hist); code != 0 {
		t.Fatalf("checkLogFile with good tails: exit %d", code)
	}
	bad := goodTails()
	bad[2] = tev(0, "entries", 12, 1, 0, "c0-2", "c0-1")
	if err := writeJSONL(tailsPathFor(hist), bad); err != nil {
		t.Fatal(err)
	}
	if code := checkLogFile(hist); code != 1 {
		t.Fatalf("checkLogFile with bad tails: exit %d", code)
	}
	os.Remove(tailsPathFor(hist))
	if code := checkLogFile(hist); code != 0 {
		t.Fatalf("checkLogFile without tails: exit %d", code)
	}
}

func TestAckedEnds(t *testing.T) {
	var a ackedEnds
	if !a.pastSince("A", 0).IsZero() {
		t.Fatal("nothing acknowledged yet")
	}
	a.note("A", 3)
	a.note("A", 2) // lower: ignored
	a.note("A", 7)
	if a.pastSince("A", 2).IsZero() || a.pastSince("A", 6).IsZero() || !a.pastSince("A", 7).IsZero() || !a.pastSince("B", 0).IsZero() {
		t.Fatalf("ends %+v", a.ends)
	}
	if !a.pastSince("A", 2).Before(a.pastSince("A", 3)) && a.pastSince("A", 2) != a.pastSince("A", 3) {
		t.Fatal("the end past 2 was known no later than the end past 3")
	}
}
