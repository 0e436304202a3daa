package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

func TestUsage(t *testing.T) {
	var out, errb bytes.Buffer
	if code := run(nil, &out, &errb); code != 2 || !strings.Contains(errb.String(), "usage: rdmapool") {
		t.Errorf("no command: exit %d, stderr %q", code, errb.String())
	}
	errb.Reset()
	if code := run([]string{"frobnicate"}, &out, &errb); code != 2 || !strings.Contains(errb.String(), `unknown command "frobnicate"`) {
		t.Errorf("unknown command: exit %d, stderr %q", code, errb.String())
	}
	errb.Reset()
	if code := run([]string{"info", "--nope"}, &out, &errb); code != 2 || !strings.Contains(errb.String(), "flag provided but not defined: -nope") {
		t.Errorf("bad flag: exit %d, stderr %q", code, errb.String())
	}
	// A word before --require would hide it from the flag parser.
	errb.Reset()
	if code := run([]string{"info", "local", "--require"}, &out, &errb); code != 2 || !strings.Contains(errb.String(), `unexpected argument "local"`) {
		t.Errorf("info with an argument: exit %d, stderr %q", code, errb.String())
	}
}

func TestInfoJSON(t *testing.T) {
	var out, errb bytes.Buffer
	if code := run([]string{"info", "--json"}, &out, &errb); code != 0 {
		t.Fatalf("info --json: exit %d: %s", code, errb.String())
	}
	var r struct {
		Usable  bool   `json:"usable"`
		Verdict string `json:"verdict"`
		Memlock string `json:"memlock"`
	}
	if err := json.Unmarshal(out.Bytes(), &r); err != nil {
		t.Fatalf("info --json output does not parse: %v\n%s", err, out.String())
	}
	if r.Verdict == "" || r.Memlock == "" {
		t.Errorf("info --json lacks verdict or memlock: %s", out.String())
	}
	if !r.Usable && !strings.HasPrefix(r.Verdict, "RDMA cannot be used: ") {
		t.Errorf("not usable, but the verdict does not say so: %q", r.Verdict)
	}
}
