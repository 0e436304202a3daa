package respserver

import (
	"bytes"
	"fmt"
	"runtime"
	"testing"
	"time"
)

// TestLargeValueMemory: a large SET allocates about its size (the value is
// read into one allocation and stored as it is), and once it is deleted
// the memory goes back to the operating system within a few seconds.
func TestLargeValueMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("-short")
	}
	_, addr := startServer(t, nil)
	rc := dialRaw(t, addr)
	const size = 64 << 20
	chunk := bytes.Repeat([]byte("v"), 1<<20)
	var ms runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&ms)
	allocBefore, heldBefore := ms.TotalAlloc, ms.HeapSys-ms.HeapReleased

	rc.send(fmt.Sprintf("*3\r\n$3\r\nSET\r\n$3\r\nbig\r\n$%d\r\n", size))
	for range size / len(chunk) {
		if _, err := rc.c.Write(chunk); err != nil {
			t.Fatal(err)
		}
	}
	rc.send("\r\n")
	rc.expect("+OK\r\n")
	runtime.ReadMemStats(&ms)
	if alloc := ms.TotalAlloc - allocBefore; alloc > size*3/2 {
		t.Errorf("a SET of %d MiB allocated %d MiB", size>>20, alloc>>20)
	}
	rc.expectReply(t, []string{"strlen", "big"}, fmt.Sprintf(":%d\r\n", size))
	rc.expectReply(t, []string{"del", "big"}, ":1\r\n")
	deadline := time.Now().Add(5 * time.Second)
	for {
		runtime.ReadMemStats(&ms)
		held := ms.HeapSys - ms.HeapReleased
		if held < heldBefore+size/4 {
			break
		}
		if time.Now().After(deadline) {
			t.Errorf("5 s after the DEL the heap holds %d MiB from the system, %d MiB before the SET", held>>20, heldBefore>>20)
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
}
