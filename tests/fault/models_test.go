package main

// The checker's self-test: hand-made histories that must be rejected
// (the anomalies a broken replica would produce) and accepted.

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
)

func op(client int, kind, key, value string, call, ret int64, out string) *Op {
	return &Op{Client: client, Kind: kind, Key: key, Value: value, Call: call, Return: ret, Status: "ok", Out: out}
}

func check(t *testing.T, m porcupine.Model, ops []*Op) porcupine.CheckResult {
	t.Helper()
	res, info := porcupine.CheckOperationsVerbose(m, ToPorcupine(ops), 10*time.Second)
	if res == porcupine.Illegal {
		if err := porcupine.VisualizePath(m, info, filepath.Join(t.TempDir(), "v.html")); err != nil {
			t.Fatalf("visualisation: %v", err)
		}
	}
	return res
}

func TestRegisterAcceptsLinearizable(t *testing.T) {
	ops := []*Op{
		op(0, "put", "r0", "a", 0, 10, ""),
		op(1, "get", "r0", "", 5, 15, "a"), // overlaps the put: may see it
		op(0, "put", "r0", "b", 20, 30, "a"),
		op(2, "get", "r0", "", 25, 40, "a"), // overlaps put b: may still see a
		{Client: 1, Kind: "cas", Key: "r0", Expected: "b", Value: "c", Call: 41, Return: 50, Status: "ok", Flag: true},
		op(1, "get", "r0", "", 51, 60, "c"),
		// A write that never returned may apply after everything.
		{Client: 3, Kind: "put", Key: "r0", Value: "d", Call: 55, Return: -1, Status: "unknown"},
		op(2, "get", "r0", "", 70, 80, "c"),
		op(2, "get", "r0", "", 81, 90, "d"),
		// A write that failed for sure constrains nothing.
		{Client: 4, Kind: "put", Key: "r1", Value: "x", Call: 1, Return: -1, Status: "fail"},
		op(5, "get", "r1", "", 100, 110, ""),
	}
	if res := check(t, RegisterModel, ops); res != porcupine.Ok {
		t.Fatalf("a linearizable history was judged %s", res)
	}
}

func TestRegisterRejectsStaleRead(t *testing.T) {
	// A replica answering from local state without ordering the read: the
	// put of b returned before the read started, yet the read sees a.
	ops := []*Op{
		op(0, "put", "r0", "a", 0, 10, ""),
		op(0, "put", "r0", "b", 20, 30, "a"),
		op(1, "get", "r0", "", 40, 50, "a"),
	}
	if res := check(t, RegisterModel, ops); res != porcupine.Illegal {
		t.Fatalf("a stale read was judged %s", res)
	}
}

func TestRegisterRejectsLostUpdate(t *testing.T) {
	// Two puts both report the same previous value: one was lost.
	ops := []*Op{
		op(0, "put", "r0", "a", 0, 10, ""),
		op(1, "put", "r0", "b", 20, 30, "a"),
		op(2, "put", "r0", "c", 40, 50, "a"),
	}
	if res := check(t, RegisterModel, ops); res != porcupine.Illegal {
		t.Fatalf("a lost update was judged %s", res)
	}
}

func TestRegisterRejectsBadCAS(t *testing.T) {
	ops := []*Op{
		op(0, "put", "r0", "a", 0, 10, ""),
		{Client: 1, Kind: "cas", Key: "r0", Expected: "z", Value: "c", Call: 20, Return: 30, Status: "ok", Flag: true},
	}
	if res := check(t, RegisterModel, ops); res != porcupine.Illegal {
		t.Fatalf("a CAS that succeeded on the wrong value was judged %s", res)
	}
}

func TestMapModel(t *testing.T) {
	good := []*Op{
		op(0, "put", "m0", "a", 0, 10, ""),
		op(1, "put", "m1", "b", 0, 10, ""),
		{Client: 2, Kind: "size", Call: 5, Return: 15, Status: "ok", Count: 1}, // between the two puts
		{Client: 2, Kind: "snap", Call: 20, Return: 30, Status: "ok", Entries: "m0=a,m1=b"},
		op(0, "del", "m0", "", 31, 40, "a"),
		{Client: 1, Kind: "scan", Call: 41, Return: 50, Status: "ok", Entries: "m1=b"},
	}
	if res := check(t, MapModel, good); res != porcupine.Ok {
		t.Fatalf("a linearizable map history was judged %s", res)
	}
	// A snapshot that mixes two states: m0 from after the delete, m1 from
	// before its put, although the delete followed the put in real time.
	bad := []*Op{
		op(0, "put", "m0", "a", 0, 10, ""),
		op(1, "put", "m1", "b", 20, 30, ""),
		op(0, "del", "m0", "", 40, 50, "a"),
		{Client: 2, Kind: "snap", Call: 35, Return: 60, Status: "ok", Entries: ""},
	}
	if res := check(t, MapModel, bad); res != porcupine.Illegal {
		t.Fatalf("a torn snapshot was judged %s", res)
	}
	// A size that counts a key removed before the size began.
	bad2 := []*Op{
		op(0, "put", "m0", "a", 0, 10, ""),
		op(0, "del", "m0", "", 20, 30, "a"),
		{Client: 1, Kind: "size", Call: 40, Return: 50, Status: "ok", Count: 1},
	}
	if res := check(t, MapModel, bad2); res != porcupine.Illegal {
		t.Fatalf("a stale size was judged %s", res)
	}
}

func TestAckedWritesPresent(t *testing.T) {
	ops := []*Op{
		op(0, "put", "r0", "a", 0, 10, ""),
		op(0, "put", "r0", "b", 20, 30, "a"),
		{Client: 9, Kind: "get", Key: "r0", Call: 100, Return: 110, Status: "ok", Out: "a", Final: true},
	}
	if p := AckedWritesPresent(ops); len(p) != 1 {
		t.Fatalf("a lost acknowledged write was not reported: %v", p)
	}
	ops[2].Out = "b"
	if p := AckedWritesPresent(ops); len(p) != 0 {
		t.Fatalf("false alarm: %v", p)
	}
	// A pending write after the last acknowledged one: no claim.
	ops = append(ops, &Op{Client: 1, Kind: "put", Key: "r0", Value: "c", Call: 40, Return: -1, Status: "unknown"})
	ops[2].Out = "c"
	if p := AckedWritesPresent(ops); len(p) != 0 {
		t.Fatalf("false alarm with a pending write: %v", p)
	}
}

func TestHistoryRoundTrip(t *testing.T) {
	path := filepath.Join(t.TempDir(), "h.jsonl")
	ops := []*Op{op(0, "put", "r0", "a", 0, 10, ""), {Client: 1, Kind: "cas", Key: "r0", Expected: "a", Value: "b", Call: 5, Return: -1, Status: "unknown"}}
	if err := WriteHistory(path, ops); err != nil {
		t.Fatal(err)
	}
	back, err := ReadHistory(path)
	if err != nil || len(back) != 2 || *back[1] != *ops[1] {
		t.Fatalf("round trip: %v %+v", err, back)
	}
}

func TestRouting(t *testing.T) {
	// CRC-32C (Castagnoli) of "123456789" is 0xE3069283.
	r := &Routing{}
	_ = r
	if got := crc32cOf([]byte("123456789")); got != 0xE3069283 {
		t.Fatalf("crc32c = %x", got)
	}
}
