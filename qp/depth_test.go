package qp_test

import (
	"bytes"
	"encoding/binary"
	"io"
	"sync"
	"testing"
	"time"

	"github.com/seed54442f1a/rdmapool/qp"
)

// TestSmallQueueDepth: with queues of 16 work requests each way (the
// least QueueDepth), small writes outrun the receives the peer has posted
// and the send queue's room (the writer then waits out RNR retries, 655 ms
// each: so only a few hundred), and a large write in each direction at once
// crosses the buffers many times over; everything arrives, in order.
func TestSmallQueueDepth(t *testing.T) {
	e := newEnv(t, &qp.Options{RecvBufferSize: 16 << 10, QueueDepth: 16})
	cli, srv := e.pair()
	defer cli.Close()
	defer srv.Close()
	cli.SetDeadline(time.Now().Add(90 * time.Second))
	srv.SetDeadline(time.Now().Add(90 * time.Second))
	start := time.Now()

	const n = 600
	werr := make(chan error, 1)
	go func() {
		msg := make([]byte, 8)
		for i := range n {
			binary.LittleEndian.PutUint64(msg, uint64(i))
			if _, err := cli.Write(msg); err != nil {
				werr <- err
				return
			}
		}
		werr <- nil
	}()
	got := make([]byte, 8)
	for i := range n {
		if _, err := io.ReadFull(srv, got); err != nil {
			t.Fatalf("message %d: %v", i, err)
		}
		if v := binary.LittleEndian.Uint64(got); v != uint64(i) {
			t.Fatalf("message %d reads %d", i, v)
		}
		if i%100 == 0 {
			time.Sleep(2 * time.Millisecond) // the writer runs ahead: RNR retries, a full send queue
		}
	}
	if err := <-werr; err != nil {
		t.Fatal(err)
	}

	const size = 512 << 10
	a, b := randBytes(size, 3), randBytes(size, 4)
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	wg.Add(4)
	for _, c := range []struct {
		w, r *qp.Conn
		p    []byte
	}{{cli, srv, a}, {srv, cli, b}} {
		go func() {
			defer wg.Done()
			_, err := c.w.Write(c.p)
			errs <- err
		}()
		go func() {
			defer wg.Done()
			buf := make([]byte, len(c.p))
			_, err := io.ReadFull(c.r, buf)
			if err == nil && !bytes.Equal(buf, c.p) {
				err = io.ErrUnexpectedEOF
				t.Error("data differs")
			}
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
	t.Logf("done in %v", time.Since(start).Round(time.Millisecond))
}
