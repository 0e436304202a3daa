package qp_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/seed54442f1a/rdmapool/internal/testutil"
	"github.com/seed54442f1a/rdmapool/qp"
)

// TestDeviceRemoval deletes the soft-RoCE device under live connections:
// each fails with ErrDeviceRemoved, the listener ends, everything is freed
// (the kernel's removal completes), and the device is added back. It only
// runs in the project's VM: it removes a device.
func TestDeviceRemoval(t *testing.T) {
	if !testutil.InVM() {
		t.Skip("skipped: removes an RDMA device, so it only runs in the project's VM (make test-rxe)")
	}
	dev, netdev := os.Getenv("RDMAPOOL_TEST_DEV"), "veth0"
	if dev == "" {
		dev = "rxe0"
	}
	e := newEnv(t, &qp.Options{RecvBufferSize: 16 << 10})
	cli, srv := e.pair()
	defer cli.Close()
	defer srv.Close()
	type read struct {
		side string
		err  error
	}
	reads := make(chan read, 2)
	for side, c := range map[string]*qp.Conn{"client": cli, "server": srv} {
		go func() {
			_, err := c.Read(make([]byte, 1))
			reads <- read{side, err}
		}()
	}
	accepted := make(chan error, 1)
	go func() {
		_, err := e.l.AcceptConn(context.Background())
		accepted <- err
	}()

	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	start := time.Now()
	out, err := exec.CommandContext(ctx, "rdma", "link", "delete", dev).CombinedOutput()
	if err != nil {
		t.Fatalf("rdma link delete %s: %v %s (the removal waits until every user let go of the device)", dev, err, out)
	}
	t.Logf("rdma link delete %s took %v", dev, time.Since(start).Round(time.Millisecond))
	defer func() {
		// The connections' teardown first: librdmacm re-reads its device
		// list as a teardown's last step, which is not to race with the
		// device coming back.
		cli.Close()
		srv.Close()
		out, err := exec.Command("rdma", "link", "add", dev, "type", "rxe", "netdev", netdev).CombinedOutput()
		if err != nil {
			t.Errorf("adding %s back: %v %s", dev, err, out)
		}
		for range 100 {
			out, _ := exec.Command("rdma", "link", "show", dev+"/1").CombinedOutput()
			if strings.Contains(string(out), "ACTIVE") {
				return
			}
			time.Sleep(100 * time.Millisecond)
		}
		t.Errorf("%s is not ACTIVE again", dev)
	}()
	for range 2 {
		select {
		case r := <-reads:
			if !errors.Is(r.err, qp.ErrDeviceRemoved) {
				t.Errorf("Read on the %s's connection, whose device went: %v, want ErrDeviceRemoved", r.side, r.err)
			}
		case <-time.After(30 * time.Second):
			t.Fatal("a Read did not end after the device was removed")
		}
	}
	select {
	case err := <-accepted:
		if !errors.Is(err, qp.ErrDeviceRemoved) {
			t.Errorf("Accept after the device went: %v, want ErrDeviceRemoved", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Accept did not end after the device was removed")
	}
	if _, err := cli.Write([]byte("x")); !errors.Is(err, qp.ErrDeviceRemoved) {
		t.Errorf("Write after removal: %v, want ErrDeviceRemoved", err)
	}
}
