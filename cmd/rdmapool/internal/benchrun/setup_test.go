package benchrun

import (
	"strings"
	"testing"
)

func TestCommandName(t *testing.T) {
	for req, want := range map[string]string{string(multiBulk("AUTH", "u", "pw")): "AUTH", "PING\r\n": "", "*1\r\n$9\r\nAUTH\r\n": ""} {
		if got, _ := commandName([]byte(req)); got != want {
			t.Errorf("commandName(%q) = %q, want %q", req, got, want)
		}
	}
}

// SetupRequests are in valkey-benchmark's order: AUTH, SELECT, HELLO 3.
func TestSetupRequests(t *testing.T) {
	var got []string
	for _, r := range SetupRequests("bob", "pw", 2, true) {
		got = append(got, strings.ReplaceAll(string(r), "\r\n", " "))
	}
	want := []string{"*3 $4 AUTH $3 bob $2 pw ", "*2 $6 SELECT $1 2 ", "*2 $5 HELLO $1 3 "}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("got %q, want %q", got, want)
	}
	if r := SetupRequests("", "pw", 0, false); len(r) != 1 || string(r[0]) != string(multiBulk("AUTH", "pw")) {
		t.Errorf("-a alone: %q", r)
	}
	if r := SetupRequests("", "", 0, false); len(r) != 0 {
		t.Errorf("nothing: %q", r)
	}
}

func TestFlatStrings(t *testing.T) {
	for reply, want := range map[string]string{
		"*2\r\n$4\r\nsave\r\n$0\r\n\r\n":     "save,",
		"%1\r\n$10\r\nappendonly\r\n+no\r\n": "appendonly,no",
		"*0\r\n":                             "",
	} {
		got, err := flatStrings([]byte(reply))
		if err != nil || strings.Join(got, ",") != want {
			t.Errorf("%q: %q, %v; want %q", reply, got, err, want)
		}
	}
	for _, bad := range []string{"+OK\r\n", "*1\r\n:1\r\n", "*2\r\n$4\r\nsave\r\n", ""} {
		if _, err := flatStrings([]byte(bad)); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}
