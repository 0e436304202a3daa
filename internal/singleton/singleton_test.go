package singleton

import (
	"errors"
	"testing"
)

func TestSharedStartsOnceStopsAfterLast(t *testing.T) {
	starts, stops := 0, 0
	s := Shared[int]{Stop: func(v int) {
		if v != 1 {
			t.Errorf("Stop(%d), want the value started", v)
		}
		stops++
	}}
	start := func() (int, error) { starts++; return starts, nil }
	for range 3 {
		if v, err := s.Acquire(start); err != nil || v != 1 {
			t.Fatalf("Acquire = %d, %v; want 1, nil", v, err)
		}
	}
	if !s.Peek(func(v int) {}) || starts != 1 {
		t.Fatalf("after three Acquires: running %v, %d starts; want running, 1", s.Peek(func(int) {}), starts)
	}
	s.Release()
	s.Release()
	if stops != 0 {
		t.Fatal("stopped before the last Release")
	}
	s.Release()
	if stops != 1 || s.Peek(func(int) { t.Error("Peek ran f with nothing running") }) {
		t.Fatalf("after the last Release: %d stops, running %v; want 1, not running", stops, s.Peek(func(int) {}))
	}
	if v, _ := s.Acquire(start); v != 2 {
		t.Errorf("Acquire after the stop = %d, want a new start (2)", v)
	}
}

func TestSharedFailedStartCountsNoUser(t *testing.T) {
	var s Shared[string]
	boom := errors.New("boom")
	if _, err := s.Acquire(func() (string, error) { return "", boom }); !errors.Is(err, boom) {
		t.Fatalf("Acquire = %v, want the start's error", err)
	}
	if s.Peek(func(string) {}) {
		t.Fatal("a failed start left a resource running")
	}
	if v, err := s.Acquire(func() (string, error) { return "ok", nil }); err != nil || v != "ok" {
		t.Fatalf("Acquire after a failure = %q, %v; want a new start", v, err)
	}
}

func TestSharedReleaseWithoutAcquirePanics(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("Release without Acquire did not panic")
		}
	}()
	var s Shared[int]
	s.Release()
}
