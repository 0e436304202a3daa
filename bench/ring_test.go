package bench

import (
	"testing"

	"github.com/seed54442f1a/rdmapool/internal/bridge"
	"github.com/seed54442f1a/rdmapool/internal/verbs"
	"github.com/seed54442f1a/rdmapool/loader/rdmatest"
	"github.com/seed54442f1a/rdmapool/mr"
)

// BenchmarkRing: the bookkeeping of one 64-byte message through the rings
// on registered memory, without the wire: Reserve and Commit on the
// sender's staging ring, Wrote, Readable and Consume on the receiver's, and
// the re-arm (Reset, Arm) each time the 64 KiB buffer is used up.
func BenchmarkRing(b *testing.B) {
	const size, bufLen = 64, 64 << 10
	pd := openPD(b)
	region, err := mr.Register(pd, bufLen, mr.LocalWrite|mr.RemoteWrite)
	if err != nil {
		b.Fatal(err)
	}
	defer region.Close()
	recv := mr.NewRecvRing(region)
	send := mr.NewSendRing(pd, bufLen, bufLen)
	defer send.Close()
	send.Arm(region.Addr(), bufLen, region.RKey())
	staging, err := send.Prepare(bufLen) // the ring registers nothing itself
	if err != nil {
		b.Fatal(err)
	}
	send.Offer(staging)
	var seq uint32
	b.ReportAllocs()
	for b.Loop() {
		if send.Available() < size {
			recv.Reset()
			send.Arm(region.Addr(), bufLen, region.RKey())
		}
		p, ok := send.Reserve(size, seq) // every write before seq has completed
		if !ok {
			b.Fatal("no room")
		}
		p[0] = 1
		send.Commit(len(p), seq)
		seq++
		if err := recv.Wrote(uint32(len(p))); err != nil {
			b.Fatal(err)
		}
		recv.Consume(len(recv.Readable()))
	}
}

// openPD opens the first RDMA device and allocates a protection domain on it,
// both released when the test ends. It fails or skips as rdmatest.Require does.
func openPD(tb testing.TB) mr.PD {
	tb.Helper()
	rdmatest.Require(tb)
	t := verbs.Bound()
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
	return bridge.MRNewPD.(func(verbs.Ptr[verbs.PD]) mr.PD)(pd)
}
