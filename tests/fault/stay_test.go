package main

import "testing"

// The view line of `amulet status` (crates/amulet/src/membership_command.rs).
func TestViewLineParsing(t *testing.T) {
	out := "cluster 7\nview 3: 4 members; removed [2, 5]; unstable []; stable []\npartition 1 replicas [1, 3, 4]\n"
	if n := viewNumberIn(out); n != 3 {
		t.Fatalf("view number %d, want 3", n)
	}
	if r := removedIn(out); r != "2, 5" {
		t.Fatalf("removed %q, want \"2, 5\"", r)
	}
	none := "view 1: 5 members; removed []; unstable []; stable []\n"
	if n, r := viewNumberIn(none), removedIn(none); n != 1 || r != "" {
		t.Fatalf("got view %d removed %q, want 1 and none", n, r)
	}
	if n, r := viewNumberIn("no view here\n"), removedIn("no view here\n"); n != 0 || r != "" {
		t.Fatalf("got view %d removed %q without a view line", n, r)
	}
}
