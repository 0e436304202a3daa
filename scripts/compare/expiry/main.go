// Command expiry (scripts/compare/expiry-vs-valkey-server.sh) times single GETs of a key without expiry, one at a time on one
// connection, while another connection loads -keys SETs of 1 KiB values
// with PX -px (0: no expiry), pipelined; then keeps timing for -after. It
// prints the GET latency percentiles during the load and after it, and
// DBSIZE and the server's RSS (-pid) 5, 10 and 15 s after the load.
package main

import (
	"bufio"
	"flag"
	"fmt"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
)

// rss is the process's VmRSS, RssAnon and RssFile in MB.
func rss(pid int) string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return "?"
	}
	var v [3]float64
	for _, l := range strings.Split(string(b), "\n") {
		for i, p := range []string{"VmRSS:", "RssAnon:", "RssFile:"} {
			if strings.HasPrefix(l, p) {
				n, _ := strconv.Atoi(strings.Fields(l)[1])
				v[i] = float64(n) / 1024
			}
		}
	}
	return fmt.Sprintf("%.1f anon %.1f file %.1f", v[0], v[1], v[2])
}

func readLine(r *bufio.Reader) string {
	l, err := r.ReadString('\n')
	if err != nil {
		panic(err)
	}
	return l
}

// reply reads one simple or bulk reply.
func reply(r *bufio.Reader) string {
	l := readLine(r)
	if l[0] == '$' {
		n, _ := strconv.Atoi(strings.TrimSpace(l[1:]))
		if n >= 0 {
			b := make([]byte, n+2)
			if _, err := io_ReadFull(r, b); err != nil {
				panic(err)
			}
			return string(b[:n])
		}
	}
	return strings.TrimSpace(l)
}

func io_ReadFull(r *bufio.Reader, b []byte) (int, error) {
	n := 0
	for n < len(b) {
		m, err := r.Read(b[n:])
		n += m
		if err != nil {
			return n, err
		}
	}
	return n, nil
}

func pct(d []time.Duration) string {
	if len(d) == 0 {
		return "none"
	}
	slices.Sort(d)
	at := func(p float64) float64 { return float64(d[min(len(d)-1, int(float64(len(d))*p))].Microseconds()) }
	return fmt.Sprintf("n=%d p50=%.0fus p99=%.0fus p99.9=%.0fus p99.99=%.0fus max=%.0fus", len(d), at(0.5), at(0.99), at(0.999), at(0.9999), float64(d[len(d)-1].Microseconds()))
}

func main() {
	port := flag.Int("p", 6379, "port")
	pid := flag.Int("pid", 0, "server pid, for RSS")
	keys := flag.Int("keys", 500000, "keys to load")
	px := flag.Int("px", 1, "PX of each key; 0: none")
	after := flag.Duration("after", 15*time.Second, "how long to go on after the load")
	flag.Parse()
	addr := "127.0.0.1:" + strconv.Itoa(*port)

	pc, err := net.Dial("tcp", addr)
	if err != nil {
		panic(err)
	}
	pr := bufio.NewReader(pc)
	do := func(args ...string) string {
		var b strings.Builder
		fmt.Fprintf(&b, "*%d\r\n", len(args))
		for _, a := range args {
			fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(a), a)
		}
		pc.Write([]byte(b.String()))
		return reply(pr)
	}
	do("SET", "probe", "value")
	get := []byte("*2\r\n$3\r\nGET\r\n$5\r\nprobe\r\n")
	var phase atomic.Int32 // 0 before, 1 load, 2 after
	lats := make([][]time.Duration, 3)
	stop := make(chan struct{})
	probed := make(chan struct{})
	notes := make(chan string)
	noted := make(chan struct{})
	go func() {
		defer close(probed)
		for {
			select {
			case <-stop:
				return
			case q := <-notes:
				fmt.Println(q, "DBSIZE", do("DBSIZE"), "RSS MB", rss(*pid))
				noted <- struct{}{}
				continue
			default:
			}
			t0 := time.Now()
			pc.Write(get)
			if v := reply(pr); v != "value" {
				panic("probe GET: " + v)
			}
			p := phase.Load()
			lats[p] = append(lats[p], time.Since(t0))
		}
	}()
	time.Sleep(2 * time.Second)
	fmt.Println("before load RSS MB", rss(*pid))

	lc, err := net.Dial("tcp", addr)
	if err != nil {
		panic(err)
	}
	val := strings.Repeat("v", 1024)
	phase.Store(1)
	start := time.Now()
	done := make(chan struct{})
	go func() {
		r := bufio.NewReaderSize(lc, 1<<16)
		for range *keys {
			if l := readLine(r); l != "+OK\r\n" {
				panic("SET: " + l)
			}
		}
		close(done)
	}()
	w := bufio.NewWriterSize(lc, 1<<16)
	for i := range *keys {
		k := "key:" + strconv.Itoa(i)
		if *px > 0 {
			p := strconv.Itoa(*px)
			fmt.Fprintf(w, "*5\r\n$3\r\nSET\r\n$%d\r\n%s\r\n$%d\r\n%s\r\n$2\r\nPX\r\n$%d\r\n%s\r\n", len(k), k, len(val), val, len(p), p)
		} else {
			fmt.Fprintf(w, "*3\r\n$3\r\nSET\r\n$%d\r\n%s\r\n$%d\r\n%s\r\n", len(k), k, len(val), val)
		}
	}
	w.Flush()
	<-done
	phase.Store(2)
	fmt.Printf("load took %v, RSS MB %s\n", time.Since(start).Round(time.Millisecond), rss(*pid))
	end := time.Now()
	for _, s := range []time.Duration{5 * time.Second, 10 * time.Second, 15 * time.Second} {
		if s > *after {
			break
		}
		time.Sleep(time.Until(end.Add(s)))
		notes <- fmt.Sprintf("%v after load:", s)
		<-noted
	}
	time.Sleep(time.Until(end.Add(*after)))
	close(stop)
	<-probed
	fmt.Println("GET before load:", pct(lats[0]))
	fmt.Println("GET during load:", pct(lats[1]))
	fmt.Println("GET after load: ", pct(lats[2]))
}
