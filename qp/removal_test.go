//go:build unix

package qp_test

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/seed54442f1a/rdmapool/internal/testutil"
	"github.com/seed54442f1a/rdmapool/internal/verbs"
	"github.com/seed54442f1a/rdmapool/loader/rdmatest"
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
	dev, netdev := vmDevice()
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
		addBack(t, dev, netdev)
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

// vmDevice is the VM's soft-RoCE device and the network device under it.
func vmDevice() (dev, netdev string) {
	dev, netdev = os.Getenv("RDMAPOOL_TEST_DEV"), "veth0"
	if dev == "" {
		dev = "rxe0"
	}
	return dev, netdev
}

// addBack adds the soft-RoCE device dev on netdev again and waits for its
// port to be ACTIVE.
func addBack(t *testing.T, dev, netdev string) {
	t.Helper()
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
}

// TestDeviceRemovedDuringDial deletes the soft-RoCE device while a Dial
// waits for the peer's answer (a listener built on the binding that never
// answers). The Dial must fail with ErrDeviceRemoved, which makes a pool
// fall back to TCP, and let go of the device: the removal waits for that.
// It only runs in the project's VM: it removes a device.
func TestDeviceRemovedDuringDial(t *testing.T) {
	if !testutil.InVM() {
		t.Skip("skipped: removes an RDMA device, so it only runs in the project's VM (make test-rxe)")
	}
	rdmatest.Require(t)
	before := rdmatest.Resources(t)
	dev, netdev := vmDevice()
	tb := verbs.Bound()

	ch, err := tb.CreateEventChannel()
	if err != nil {
		t.Fatal(err)
	}
	lid, err := tb.CreateID(ch, 0, verbs.PSTCP)
	if err != nil {
		t.Fatal(err)
	}
	ids := []verbs.Ptr[verbs.CMID]{lid}
	letGo := func() { // the silent listener's part of letting go of the device
		for _, id := range ids {
			if err := tb.DestroyID(id); err != nil {
				t.Errorf("silent listener: %v", err)
			}
		}
		ids = nil
		if !ch.IsNil() {
			tb.DestroyEventChannel(ch)
			ch = verbs.Ptr[verbs.EventChannel]{}
		}
		tb.ReleaseDeadDevices()
	}
	defer func() { letGo() }()
	sa, err := tb.Sockaddr(netip.AddrPortFrom(rdmatest.Addr(t), 0))
	if err != nil {
		t.Fatal(err)
	}
	err = tb.BindAddr(lid, sa)
	verbs.Release(tb, sa)
	if err == nil {
		err = tb.Listen(lid, 8)
	}
	if err != nil {
		t.Fatal(err)
	}
	local, _ := verbs.CMIDAddrs(lid)

	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	dialed := make(chan error, 1)
	go func() {
		c, err := qp.Dial(ctx, local.String(), nil)
		if err == nil {
			c.Close()
		}
		dialed <- err
	}()
	pfd := []unix.PollFd{{Fd: int32(verbs.EventChannelFD(ch)), Events: unix.POLLIN}}
	if n, _ := unix.Poll(pfd, 20000); n != 1 {
		t.Fatal("silent listener: no connect request within 20 s")
	}
	ev, err := tb.TakeCMEvent(ch)
	if err != nil {
		t.Fatal(err)
	}
	if ev.Event != verbs.EventConnectRequest {
		t.Fatalf("silent listener: event %s, want a connect request", tb.EventStr(ev.Event))
	}
	ids = append(ids, ev.ID) // not answered: the Dial waits

	deleted := make(chan error, 1)
	go func() {
		out, err := exec.CommandContext(ctx, "rdma", "link", "delete", dev).CombinedOutput()
		if err != nil {
			err = fmt.Errorf("rdma link delete %s: %v %s (the removal waits until every user let go of the device)", dev, err, out)
		}
		deleted <- err
	}()
	restored := false
	restore := func() { // also when the test fails half-way
		if restored {
			return
		}
		restored = true
		letGo()
		if err := <-deleted; err != nil {
			t.Error(err)
		}
		addBack(t, dev, netdev)
	}
	defer restore()
	select {
	case err := <-dialed:
		if !errors.Is(err, qp.ErrDeviceRemoved) {
			t.Errorf("Dial when the device went: %v, want ErrDeviceRemoved", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Dial did not end within 30 s of the device's removal")
	}
	restore()
	rdmatest.CheckNoLeaks(t, before)
}
