package rdmatest

import (
	"testing"

	"github.com/seed54442f1a/rdmapool/mr"
)

// PD opens the first RDMA device and allocates a protection domain on it,
// both released when the test ends. It fails or skips as Require does.
func PD(tb testing.TB) mr.PD {
	tb.Helper()
	t := Require(tb)
	devs, list, err := t.GetDeviceList()
	if err != nil {
		tb.Fatal(err)
	}
	defer t.FreeDeviceList(list)
	if len(devs) == 0 {
		tb.Fatal("no RDMA device")
	}
	ctx, err := t.OpenDevice(devs[0])
	if err != nil {
		tb.Fatal(err)
	}
	pd, err := t.AllocPD(ctx)
	if err != nil {
		t.CloseDevice(ctx)
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		t.DeallocPD(pd)
		t.CloseDevice(ctx)
	})
	return mr.NewPD(pd)
}
