package server

import (
	"bytes"
	"fmt"
	"runtime"
	"testing"
	"time"
)

// TestLargeValueMemory: a command that stores a large value allocates
// about its size (the value is read into one allocation and stored as it
// is), and once it is deleted the memory goes back to the operating system
// within a few seconds.
func TestLargeValueMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("-short")
	}
	_, addr := startServer(t, nil)
	rc := dialRaw(t, addr)
	const size = 64 << 20
	chunk := bytes.Repeat([]byte("v"), 1<<20)
	for _, tc := range []struct {
		cmd   []string // the value follows
		reply string
	}{
		{[]string{"SET", "big"}, "+OK\r\n"},
		{[]string{"RPUSH", "big"}, ":1\r\n"},
		{[]string{"HSET", "big", "f"}, ":1\r\n"},
		{[]string{"XADD", "big", "1-1", "f"}, "$3\r\n1-1\r\n"},
	} {
		var ms runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&ms)
		allocBefore, heldBefore := ms.TotalAlloc, ms.HeapSys-ms.HeapReleased

		head := fmt.Sprintf("*%d\r\n", len(tc.cmd)+1)
		for _, a := range tc.cmd {
			head += fmt.Sprintf("$%d\r\n%s\r\n", len(a), a)
		}
		rc.send(head + fmt.Sprintf("$%d\r\n", size))
		for range size / len(chunk) {
			if _, err := rc.c.Write(chunk); err != nil {
				t.Fatal(err)
			}
		}
		rc.send("\r\n")
		rc.expect(tc.reply)
		runtime.ReadMemStats(&ms)
		if alloc := ms.TotalAlloc - allocBefore; alloc > size*3/2 {
			t.Errorf("%s of %d MiB allocated %d MiB", tc.cmd[0], size>>20, alloc>>20)
		}
		rc.expectReply(t, []string{"del", "big"}, ":1\r\n")
		deadline := time.Now().Add(time.Minute)
		for {
			runtime.ReadMemStats(&ms)
			held := ms.HeapSys - ms.HeapReleased
			if held < heldBefore+size/4 {
				break
			}
			if time.Now().After(deadline) {
				t.Errorf("a minute after the DEL of %s's value the heap holds %d MiB from the system, %d MiB before",
					tc.cmd[0], held>>20, heldBefore>>20)
				break
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
}
