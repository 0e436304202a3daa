package qp_test

import (
	"bytes"
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

	// The writer runs ahead of the pauses: RNR retries, a full send queue.
	sendNumbered(t, cli, srv, 600, 100)

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
