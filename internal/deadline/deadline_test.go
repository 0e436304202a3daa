package deadline

import (
	"testing"
	"time"
)

func TestDeadline(t *testing.T) {
	d := New()
	if d.Expired() {
		t.Fatal("a new deadline has expired")
	}
	d.Set(time.Now().Add(-time.Second))
	if !d.Expired() {
		t.Fatal("a deadline in the past has not expired")
	}
	d.Set(time.Time{})
	if d.Expired() {
		t.Fatal("a cleared deadline has expired")
	}
	d.Set(time.Now().Add(20 * time.Millisecond))
	select {
	case <-d.Wait():
	case <-time.After(time.Minute):
		t.Fatal("the deadline did not pass")
	}
	if !d.Expired() {
		t.Fatal("a deadline that passed by its timer has not expired")
	}
	// Re-arming later: the earlier arming does not fire.
	d.Set(time.Now().Add(10 * time.Millisecond))
	d.Set(time.Now().Add(time.Hour))
	time.Sleep(50 * time.Millisecond)
	if d.Expired() {
		t.Fatal("a deadline an hour away expired")
	}
	d.Set(time.Time{})
}

func TestSetDoesNotAllocate(t *testing.T) {
	d := New()
	d.Set(time.Now().Add(time.Hour)) // makes the timer
	if n := testing.AllocsPerRun(100, func() {
		d.Set(time.Now().Add(time.Hour))
		d.Set(time.Time{})
	}); n != 0 {
		t.Errorf("Set allocates %v times", n)
	}
}
