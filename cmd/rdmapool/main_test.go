package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/seed54442f1a/rdmapool/loader"
	"github.com/seed54442f1a/rdmapool/loader/probe"
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

// A failed device listing is the report's answer for devices, not "none".
func TestInfoListingFailed(t *testing.T) {
	r := probe.Report{
		Libraries: &loader.Libraries{},
		ListErr:   errors.New("ibv_get_device_list: Function not implemented"),
		Verdict:   "RDMA cannot be used: listing devices failed: ...",
	}
	var text, js bytes.Buffer
	writeText(&text, r)
	if s := text.String(); !strings.Contains(s, "Devices:\n  not listed: ibv_get_device_list: Function not implemented\n") || strings.Contains(s, "none") {
		t.Errorf("text report:\n%s", s)
	}
	writeJSON(&js, r)
	var got struct {
		ListError string `json:"list_error"`
	}
	if err := json.Unmarshal(js.Bytes(), &got); err != nil || got.ListError != r.ListErr.Error() {
		t.Errorf("JSON report (%v):\n%s", err, js.String())
	}
}
