package main

// The log checker's self-test: hand-made log histories that must be
// rejected (what a replica answering from stale state, a lost or
// duplicated append, or a torn multi-append would produce) and accepted.

import (
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
)

func lapp(client int, log, value string, call, ret int64, pos uint64) *LogOp {
	return &LogOp{Client: client, Kind: "append", Log: log, Value: value, Call: call, Return: ret, Status: "ok", Position: ptr(pos)}
}

func lread(client int, log string, from uint64, max uint32, call, ret int64, first, end uint64, entries ...string) *LogOp {
	return &LogOp{Client: client, Kind: "read", Log: log, From: from, Max: max, Call: call, Return: ret, Status: "ok",
		Read: entries, First: ptr(first), End: ptr(end)}
}

func lbounds(client int, log string, call, ret int64, first, end uint64) *LogOp {
	return &LogOp{Client: client, Kind: "bounds", Log: log, Call: call, Return: ret, Status: "ok", First: ptr(first), End: ptr(end)}
}

func ltrim(client int, log string, below uint64, call, ret int64, first, end uint64) *LogOp {
	return &LogOp{Client: client, Kind: "trim", Log: log, Below: below, Call: call, Return: ret, Status: "ok", First: ptr(first), End: ptr(end)}
}

func lmulti(client int, call, ret int64, status string, positions []uint64, kv ...string) *LogOp {
	o := &LogOp{Client: client, Kind: "multi", Call: call, Return: ret, Status: status, Positions: positions}
	for i := 0; i+1 < len(kv); i += 2 {
		o.Entries = append(o.Entries, LogEntryIn{Log: kv[i], Value: kv[i+1]})
	}
	return o
}

func checkLog(t *testing.T, ops []*LogOp) porcupine.CheckResult {
	t.Helper()
	res, info := porcupine.CheckOperationsVerbose(LogModel, LogToPorcupine(ops), 10*time.Second)
	if res == porcupine.Illegal {
		if err := porcupine.VisualizePath(LogModel, info, filepath.Join(t.TempDir(), "v.html")); err != nil {
			t.Fatalf("visualisation: %v", err)
		}
	}
	return res
}

// goodLog is a linearizable history of two logs with every kind of
// operation, out-of-range answers, unknown outcomes (one that applied, one
// that did not), a multi-append naming a log twice, and final reads.
func goodLog() []*LogOp {
	return []*LogOp{
		lapp(0, "A", "c0-1", 0, 10, 0),
		lapp(1, "A", "c1-1", 5, 15, 1), // overlaps c0-1, ordered after it
		lread(2, "A", 0, 8, 6, 12, 0, 1, "c0-1"),
		lmulti(0, 20, 30, "ok", []uint64{0, 2, 3}, "B", "c0-2", "A", "c0-3", "A", "c0-4"),
		lbounds(1, "B", 31, 35, 0, 1),
		// An append that never returned; a later read shows it applied.
		{Client: 3, Kind: "append", Log: "B", Value: "c3-1", Call: 36, Return: -1, Status: "unknown"},
		lread(1, "B", 0, 4, 40, 45, 0, 2, "c0-2", "c3-1"),
		// One that never returned and never applied.
		{Client: 4, Kind: "append", Log: "A", Value: "c4-1", Call: 41, Return: -1, Status: "unknown"},
		// A failed read constrains nothing.
		{Client: 5, Kind: "read", Log: "A", From: 99, Max: 1, Call: 42, Return: -1, Status: "fail"},
		ltrim(2, "A", 2, 50, 55, 2, 4),
		{Client: 2, Kind: "read", Log: "A", From: 1, Max: 2, Call: 56, Return: 60, Status: "ok", OutOfRange: "trimmed", At: ptr(2)},
		{Client: 2, Kind: "read", Log: "A", From: 9, Max: 2, Call: 61, Return: 62, Status: "ok", OutOfRange: "past-end", At: ptr(4)},
		{Client: 2, Kind: "trim", Log: "A", Below: 100, Call: 63, Return: 64, Status: "ok", OutOfRange: "past-end", At: ptr(4)},
		ltrim(1, "A", 1, 65, 66, 2, 4),    // below the first position: changes nothing
		lread(2, "A", 4, 3, 67, 68, 2, 4), // at the end: nothing
		// Final reads.
		{Client: 9, Kind: "bounds", Log: "A", Call: 100, Return: 101, Status: "ok", First: ptr(2), End: ptr(4), Final: true},
		{Client: 9, Kind: "read", Log: "A", From: 2, Max: 1, Call: 102, Return: 103, Status: "ok", Read: []string{"c0-3"}, First: ptr(2), End: ptr(4), Final: true},
		{Client: 9, Kind: "read", Log: "A", From: 3, Max: 1, Call: 104, Return: 105, Status: "ok", Read: []string{"c0-4"}, First: ptr(2), End: ptr(4), Final: true},
		{Client: 9, Kind: "read", Log: "B", From: 0, Max: 10, Call: 106, Return: 107, Status: "ok", Read: []string{"c0-2", "c3-1"}, First: ptr(0), End: ptr(2), Final: true},
	}
}

func TestLogAcceptsLinearizable(t *testing.T) {
	ops := goodLog()
	if res := checkLog(t, ops); res != porcupine.Ok {
		t.Fatalf("a linearizable log history was judged %s", res)
	}
	if p := LogFinalCheck(ops); len(p) != 0 {
		t.Fatalf("final check false alarm: %v", p)
	}
	if v, p := CheckLogHistory(ops, 10*time.Second, filepath.Join(t.TempDir(), "v.html")); v != "linearizable" || len(p) != 0 {
		t.Fatalf("CheckLogHistory: %s %v", v, p)
	}
}

func TestLogRejectsStaleRead(t *testing.T) {
	// The append of c0-2 returned before the read began, yet the read
	// sees the log as it was before it.
	ops := []*LogOp{
		lapp(0, "A", "c0-1", 0, 10, 0),
		lapp(0, "A", "c0-2", 20, 30, 1),
		lread(1, "A", 0, 8, 40, 50, 0, 1, "c0-1"),
	}
	if res := checkLog(t, ops); res != porcupine.Illegal {
		t.Fatalf("a stale read was judged %s", res)
	}
	stale := []*LogOp{
		lapp(0, "A", "c0-1", 0, 10, 0),
		lbounds(1, "A", 20, 30, 0, 0),
	}
	if res := checkLog(t, stale); res != porcupine.Illegal {
		t.Fatalf("stale bounds were judged %s", res)
	}
}

func TestLogRejectsBadPositions(t *testing.T) {
	dup := []*LogOp{
		lapp(0, "A", "c0-1", 0, 10, 0),
		lapp(1, "A", "c1-1", 20, 30, 0), // the same position twice
	}
	if res := checkLog(t, dup); res != porcupine.Illegal {
		t.Fatalf("a position given twice was judged %s", res)
	}
	gap := []*LogOp{
		lapp(0, "A", "c0-1", 0, 10, 0),
		lapp(0, "A", "c0-2", 20, 30, 2), // skips 1
	}
	if res := checkLog(t, gap); res != porcupine.Illegal {
		t.Fatalf("a gap in the positions was judged %s", res)
	}
	wrong := []*LogOp{
		lapp(0, "A", "c0-1", 0, 10, 0),
		lapp(0, "A", "c0-2", 20, 30, 1),
		lread(1, "A", 0, 8, 40, 50, 0, 2, "c0-2", "c0-1"), // swapped
	}
	if res := checkLog(t, wrong); res != porcupine.Illegal {
		t.Fatalf("a read of the wrong entries was judged %s", res)
	}
	reused := []*LogOp{
		lapp(0, "A", "c0-1", 0, 10, 0),
		ltrim(0, "A", 1, 20, 30, 1, 1),
		lapp(0, "A", "c0-2", 40, 50, 0), // a trimmed position given again
	}
	if res := checkLog(t, reused); res != porcupine.Illegal {
		t.Fatalf("a reused position was judged %s", res)
	}
}

func TestLogRejectsBadOutOfRange(t *testing.T) {
	ops := []*LogOp{
		lapp(0, "A", "c0-1", 0, 10, 0),
		// Nothing was trimmed: a read from 0 must not be refused.
		{Client: 1, Kind: "read", Log: "A", From: 0, Max: 1, Call: 20, Return: 30, Status: "ok", OutOfRange: "trimmed", At: ptr(1)},
	}
	if res := checkLog(t, ops); res != porcupine.Illegal {
		t.Fatalf("a refused read of a held entry was judged %s", res)
	}
	trimmed := []*LogOp{
		lapp(0, "A", "c0-1", 0, 10, 0),
		ltrim(0, "A", 1, 20, 30, 1, 1),
		lread(1, "A", 0, 1, 40, 50, 0, 1, "c0-1"), // reads a trimmed entry
	}
	if res := checkLog(t, trimmed); res != porcupine.Illegal {
		t.Fatalf("a read of a trimmed entry was judged %s", res)
	}
}

func TestLogRejectsTornMultiAppend(t *testing.T) {
	// A multi-append of unknown outcome is seen in B, so it applied, and
	// its entry in A must be there too.
	ops := []*LogOp{
		lmulti(0, 0, -1, "unknown", nil, "A", "c0-1", "B", "c0-2"),
		lread(1, "B", 0, 8, 10, 20, 0, 1, "c0-2"),
		lread(1, "A", 0, 8, 30, 40, 0, 0),
	}
	if res := checkLog(t, ops); res != porcupine.Illegal {
		t.Fatalf("a torn multi-append was judged %s", res)
	}
	// Positions of a log named twice must be consecutive.
	apart := []*LogOp{
		lmulti(0, 0, 10, "ok", []uint64{0, 0, 2}, "A", "c0-1", "B", "c0-2", "A", "c0-3"),
	}
	if res := checkLog(t, apart); res != porcupine.Illegal {
		t.Fatalf("non-consecutive positions of one multi-append were judged %s", res)
	}
}

func TestLogPartition(t *testing.T) {
	ops := []*LogOp{lapp(0, "A", "a", 0, 1, 0), lapp(1, "B", "b", 0, 1, 0), lapp(0, "A", "c", 2, 3, 1)}
	if n := len(LogModel.Partition(LogToPorcupine(ops))); n != 2 {
		t.Fatalf("two logs without multi-appends: %d partitions, want 2", n)
	}
	ops = append(ops, lmulti(2, 4, 5, "ok", []uint64{2, 1}, "A", "d", "B", "e"))
	if n := len(LogModel.Partition(LogToPorcupine(ops))); n != 1 {
		t.Fatalf("two logs coupled by a multi-append: %d partitions, want 1", n)
	}
	if res := checkLog(t, ops); res != porcupine.Ok {
		t.Fatalf("judged %s", res)
	}
}

func TestLogFinalCheck(t *testing.T) {
	final := func(log string, first, end uint64, entries ...string) *LogOp {
		return &LogOp{Client: 9, Kind: "read", Log: log, From: first, Max: 100, Call: 100, Return: 101, Status: "ok",
			Read: entries, First: ptr(first), End: ptr(end), Final: true}
	}
	base := []*LogOp{
		lapp(0, "A", "c0-1", 0, 10, 0),
		lapp(0, "A", "c0-2", 20, 30, 1),
		{Client: 1, Kind: "append", Log: "A", Value: "c1-1", Call: 25, Return: -1, Status: "unknown"},
	}
	cases := []struct {
		name  string
		final *LogOp
		want  string
	}{
		{"good", final("A", 0, 3, "c0-1", "c0-2", "c1-1"), ""},
		{"unknown not applied", final("A", 0, 2, "c0-1", "c0-2"), ""},
		{"trimmed", final("A", 1, 2, "c0-2"), ""},
		{"lost", final("A", 0, 2, "c0-1", "c1-1"), "acknowledged append"},
		{"past the end", final("A", 0, 1, "c0-1"), "but the log ends at"},
		{"twice", final("A", 0, 3, "c0-1", "c0-2", "c0-2"), "appears twice"},
		{"never written", final("A", 0, 3, "c0-1", "c0-2", "zz"), "no append to this log wrote"},
		{"short", final("A", 0, 4, "c0-1", "c0-2", "c1-1"), "stops at"},
	}
	for _, c := range cases {
		p := LogFinalCheck(append(append([]*LogOp(nil), base...), c.final))
		got := strings.Join(p, "; ")
		if c.want == "" && len(p) != 0 || c.want != "" && !strings.Contains(got, c.want) {
			t.Errorf("%s: problems %q, want %q", c.name, got, c.want)
		}
	}
	// Pages that do not join.
	pages := append(append([]*LogOp(nil), base...), final("A", 0, 3, "c0-1"), final("A", 2, 3, "c1-1"))
	pages[len(pages)-1].Call = 102
	if p := LogFinalCheck(pages); len(p) == 0 || !strings.Contains(strings.Join(p, "; "), "do not join") {
		t.Errorf("pages with a hole: %v", p)
	}
}

func TestLogHistoryRoundTrip(t *testing.T) {
	path := filepath.Join(t.TempDir(), "log.history.jsonl")
	ops := goodLog()
	if err := WriteLogHistory(path, ops); err != nil {
		t.Fatal(err)
	}
	back, err := ReadLogHistory(path)
	if err != nil || len(back) != len(ops) {
		t.Fatalf("round trip: %v, %d ops", err, len(back))
	}
	for i := range ops {
		if !reflect.DeepEqual(back[i], ops[i]) {
			t.Fatalf("op %d: %+v, want %+v", i, back[i], ops[i])
		}
	}
	if code := checkLogFile(path); code != 0 {
		t.Fatalf("checkLogFile: exit %d", code)
	}
}

func TestLogBoundsInRealTime(t *testing.T) {
	if p := LogBoundsInRealTime(goodLog()); len(p) != 0 {
		t.Fatalf("false alarm: %v", p)
	}
	stale := []*LogOp{
		lapp(0, "A", "c0-1", 0, 10, 0),
		lmulti(0, 20, 30, "ok", []uint64{1, 2, 0}, "A", "c0-2", "A", "c0-3", "B", "c0-4"),
		lread(1, "A", 0, 8, 40, 50, 0, 2, "c0-1", "c0-2"), // misses c0-3 (end 3)
		ltrim(1, "B", 1, 60, 70, 1, 1),
		lbounds(2, "B", 80, 90, 0, 1), // first 0 after the trim to 1 returned
	}
	p := LogBoundsInRealTime(stale)
	got := strings.Join(p, "\n")
	if len(p) != 2 || !strings.Contains(p[0], "saw end 2") || !strings.Contains(p[1], "saw first 0") {
		t.Fatalf("stale answers: %s", got)
	}
	if res := checkLog(t, stale); res != porcupine.Illegal {
		t.Fatalf("judged %s", res)
	}
}
