package qp_test

import (
	"io"
	"testing"
	"time"
)

// BenchmarkLargeValue: write a 16 MiB value, read its echo back; MB/s
// counts the value once. With the default options: the buffers start small
// and grow under the load.
func BenchmarkLargeValue(b *testing.B) {
	const size = 16 << 20
	cli, done := benchPair(b, nil)
	defer done()
	val, got := make([]byte, size), make([]byte, size)
	b.ReportAllocs()
	b.SetBytes(size)
	start := time.Now()
	for b.Loop() {
		errc := make(chan error, 1)
		go func() {
			_, err := cli.Write(val)
			errc <- err
		}()
		if _, err := io.ReadFull(cli, got); err != nil {
			b.Fatal(err)
		}
		if err := <-errc; err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(time.Since(start).Milliseconds())/float64(b.N), "ms/value")
}
