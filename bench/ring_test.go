package bench

import (
	"testing"

	"github.com/seed54442f1a/rdmapool/internal/testutil/rdmatest"
	"github.com/seed54442f1a/rdmapool/mr"
)

// BenchmarkRing: the bookkeeping of one 64-byte message through the rings
// on registered memory, without the wire: Reserve and Commit on the
// sender's staging ring, Wrote, Readable and Consume on the receiver's, and
// the re-arm (Reset, Arm) each time the 64 KiB buffer is used up.
func BenchmarkRing(b *testing.B) {
	const size, bufLen = 64, 64 << 10
	pd := rdmatest.PD(b)
	region, err := mr.Register(pd, bufLen, mr.LocalWrite|mr.RemoteWrite)
	if err != nil {
		b.Fatal(err)
	}
	defer region.Close()
	recv := mr.NewRecvRing(region)
	send := mr.NewSendRing(pd)
	defer send.Close()
	if err := send.Arm(region.Addr(), bufLen, region.RKey()); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if send.Available() < size {
			recv.Reset()
			if err := send.Arm(region.Addr(), bufLen, region.RKey()); err != nil {
				b.Fatal(err)
			}
		}
		p := send.Reserve(size)
		p[0] = 1
		send.Commit(len(p))
		if err := recv.Wrote(uint32(len(p))); err != nil {
			b.Fatal(err)
		}
		recv.Consume(len(recv.Readable()))
	}
}
