package main

// Operations, histories and the porcupine models.

import (
	"bufio"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"sort"
	"strings"

	"github.com/anishathalye/porcupine"
)

// Op is one operation of a history, one JSON line of history.jsonl.
type Op struct {
	Client   int    `json:"client"`
	Kind     string `json:"op"` // get put cas del size scan snap
	Key      string `json:"key,omitempty"`
	Value    string `json:"value,omitempty"`    // put: the new value; cas: the new value
	Expected string `json:"expected,omitempty"` // cas
	Call     int64  `json:"call"`               // ns since the run started
	Return   int64  `json:"return"`             // ns; Pending: never returned
	Status   string `json:"status"`             // ok | unknown (may or may not have applied) | fail (did not apply)
	// Results (status ok): get/put/del give the value found before ("" absent),
	// cas gives Flag, size gives Count, scan/snap give Entries ("k=v,...").
	Out     string `json:"out,omitempty"`
	Flag    bool   `json:"flag,omitempty"`
	Count   int    `json:"count,omitempty"`
	Entries string `json:"entries,omitempty"`
	Err     string `json:"error,omitempty"`
	Final   bool   `json:"final,omitempty"` // a read of the final check
}

// Pending is the return time of an operation that never returned.
const Pending = math.MaxInt64 / 4

func (o *Op) IsWrite() bool { return o.Kind == "put" || o.Kind == "del" || o.Kind == "cas" }

func (o *Op) String() string {
	res := ""
	if o.Status != "ok" {
		res = "?"
	} else {
		switch o.Kind {
		case "get", "put", "del":
			res = show(o.Out)
		case "cas":
			res = fmt.Sprint(o.Flag)
		case "size":
			res = fmt.Sprint(o.Count)
		default:
			res = "{" + o.Entries + "}"
		}
	}
	switch o.Kind {
	case "get", "del":
		return fmt.Sprintf("%s(%s) -> %s", o.Kind, o.Key, res)
	case "put":
		return fmt.Sprintf("put(%s, %s) -> %s", o.Key, o.Value, res)
	case "cas":
		return fmt.Sprintf("cas(%s, %s -> %s) -> %s", o.Key, show(o.Expected), o.Value, res)
	default:
		return fmt.Sprintf("%s() -> %s", o.Kind, res)
	}
}

func show(v string) string {
	if v == "" {
		return "nil"
	}
	return v
}

func WriteHistory(path string, ops []*Op) error { return writeJSONL(path, ops) }

func ReadHistory(path string) ([]*Op, error) { return readJSONL[Op](path) }

// writeJSONL writes one JSON object a line (a history file).
func writeJSONL[T any](path string, items []*T) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	defer f.Close()
	w := bufio.NewWriter(f)
	enc := json.NewEncoder(w)
	for _, o := range items {
		enc.Encode(o)
	}
	return w.Flush()
}

// readJSONL reads what writeJSONL wrote.
func readJSONL[T any](path string) ([]*T, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var items []*T
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		var o T
		if err := json.Unmarshal(sc.Bytes(), &o); err != nil {
			return nil, err
		}
		items = append(items, &o)
	}
	return items, sc.Err()
}

// ---- register model: one register per key --------------------------------

func registerStep(state string, o *Op) (bool, string) {
	if o.Status != "ok" {
		// Never returned: it may take effect at any point after its call
		// (or never, which looks the same as at the end).
		switch o.Kind {
		case "put":
			return true, o.Value
		case "del":
			return true, ""
		case "cas":
			if state == o.Expected {
				return true, o.Value
			}
			return true, state
		}
		return true, state
	}
	switch o.Kind {
	case "get":
		return o.Out == state, state
	case "put":
		return o.Out == state, o.Value
	case "del":
		return o.Out == state, ""
	case "cas":
		if o.Flag {
			return state == o.Expected, o.Value
		}
		return state != o.Expected, state
	}
	return false, state
}

var RegisterModel = porcupine.Model{
	Partition: func(history []porcupine.Operation) [][]porcupine.Operation {
		byKey := map[string][]porcupine.Operation{}
		var keys []string
		for _, op := range history {
			k := op.Input.(*Op).Key
			if _, ok := byKey[k]; !ok {
				keys = append(keys, k)
			}
			byKey[k] = append(byKey[k], op)
		}
		sort.Strings(keys)
		var out [][]porcupine.Operation
		for _, k := range keys {
			out = append(out, byKey[k])
		}
		return out
	},
	Init: func() interface{} { return "" },
	Step: func(state, input, output interface{}) (bool, interface{}) {
		return registerStep(state.(string), input.(*Op))
	},
	Equal:             func(a, b interface{}) bool { return a.(string) == b.(string) },
	DescribeOperation: func(input, output interface{}) string { return input.(*Op).String() },
	DescribeState:     func(s interface{}) string { return show(s.(string)) },
}

// ---- map model: the whole (small) map --------------------------------------

// A map state is its canonical text "k=v,k=v" in key order.
func decodeMap(s string) map[string]string {
	m := map[string]string{}
	if s == "" {
		return m
	}
	for _, kv := range strings.Split(s, ",") {
		i := strings.IndexByte(kv, '=')
		m[kv[:i]] = kv[i+1:]
	}
	return m
}

func encodeMap(m map[string]string) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + "=" + m[k]
	}
	return strings.Join(parts, ",")
}

func mapStep(state string, o *Op) (bool, string) {
	switch o.Kind {
	case "size":
		if o.Status != "ok" {
			return true, state
		}
		return o.Count == len(decodeMap(state)), state
	case "scan", "snap":
		if o.Status != "ok" {
			return true, state
		}
		return o.Entries == state, state
	}
	m := decodeMap(state)
	ok, v := registerStep(m[o.Key], o)
	if !ok {
		return false, state
	}
	if v == "" {
		delete(m, o.Key)
	} else {
		m[o.Key] = v
	}
	return true, encodeMap(m)
}

var MapModel = porcupine.Model{
	Init: func() interface{} { return "" },
	Step: func(state, input, output interface{}) (bool, interface{}) {
		return mapStep(state.(string), input.(*Op))
	},
	Equal:             func(a, b interface{}) bool { return a.(string) == b.(string) },
	DescribeOperation: func(input, output interface{}) string { return input.(*Op).String() },
	DescribeState:     func(s interface{}) string { return "{" + s.(string) + "}" },
}

// ---- checks -----------------------------------------------------------------

// ToPorcupine turns a history into porcupine operations.
func ToPorcupine(ops []*Op) []porcupine.Operation {
	out := make([]porcupine.Operation, 0, len(ops))
	for _, o := range ops {
		if o.Status == "fail" {
			continue // definitely did not apply: constrains nothing
		}
		ret := o.Return
		if o.Status != "ok" {
			ret = Pending
		}
		out = append(out, porcupine.Operation{ClientId: o.Client, Input: o, Call: o.Call, Output: o, Return: ret})
	}
	return out
}

// AckedWritesPresent checks the final reads: for every key, if its last
// acknowledged write (by return time) follows every other write that may
// have applied to the key, the final read shows exactly that write.
func AckedWritesPresent(ops []*Op) []string {
	final := map[string]*Op{} // key -> final get
	var finalScan *Op
	for _, o := range ops {
		if !o.Final || o.Status != "ok" {
			continue
		}
		if o.Kind == "get" {
			final[o.Key] = o
		} else if o.Kind == "scan" || o.Kind == "snap" {
			finalScan = o
		}
	}
	var scanned map[string]string
	if finalScan != nil {
		scanned = decodeMap(finalScan.Entries)
	}
	writes := map[string][]*Op{}
	for _, o := range ops {
		if o.IsWrite() && !o.Final {
			writes[o.Key] = append(writes[o.Key], o)
		}
	}
	var problems []string
	for key, ws := range writes {
		var last *Op
		for _, w := range ws {
			if w.Status == "ok" && (w.Kind != "cas" || w.Flag) && (last == nil || w.Return > last.Return) {
				last = w
			}
		}
		if last == nil {
			continue
		}
		clear := true
		for _, w := range ws {
			if w == last || w.Status == "fail" || (w.Kind == "cas" && w.Status == "ok" && !w.Flag) {
				continue
			}
			ret := w.Return
			if w.Status != "ok" {
				ret = Pending
			}
			if ret >= last.Call {
				clear = false
				break
			}
		}
		if !clear {
			continue
		}
		want := last.Value
		if last.Kind == "del" {
			want = ""
		}
		var got string
		var have bool
		if g, ok := final[key]; ok {
			got, have = g.Out, true
		} else if scanned != nil {
			got, have = scanned[key], true
		}
		if have && got != want {
			problems = append(problems, fmt.Sprintf("key %s: last acknowledged write %s (client %d, returned at %.3fs) but the final read gives %s",
				key, last.String(), last.Client, float64(last.Return)/1e9, show(got)))
		}
	}
	sort.Strings(problems)
	return problems
}
