package qp_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log"
	"time"

	"github.com/seed54442f1a/rdmapool/qp"
)

// The examples need an RDMA device and a peer, so they are compiled but not
// run. The addresses are placeholders for your server's RDMA address and port.

// A client: send a PING to a Valkey server over RDMA and read its reply.
func ExampleDial() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, err := qp.Dial(ctx, "192.0.2.10:6379", nil)
	if err != nil {
		log.Fatal(err) // errors.Is(err, loader.ErrUnavailable) when there is no RDMA
	}
	defer c.Close()

	if _, err := io.WriteString(c, "*1\r\n$4\r\nPING\r\n"); err != nil {
		log.Fatal(err)
	}
	reply, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%q\n", reply) // "+PONG\r\n"
}

// A server: accept RDMA connections on every RDMA device and echo what each
// sends.
func ExampleListen() {
	l, err := qp.Listen(":6379", nil)
	if err != nil {
		log.Fatal(err)
	}
	defer l.Close()
	log.Println("listening on", l.Addr())

	for {
		c, err := l.Accept()
		if err != nil {
			log.Fatal(err) // net.ErrClosed once l is closed
		}
		go func() {
			defer c.Close()
			io.Copy(c, c)
		}()
	}
}

// Reading without a copy: the leased slice is the receive buffer itself and
// is valid only until Release.
func ExampleConn_Lease() {
	c, err := qp.Dial(context.Background(), "192.0.2.10:6379", nil)
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()

	var total int
	for {
		b, err := c.Lease()
		if err == io.EOF {
			break // the peer closed and everything it sent was read
		}
		if err != nil {
			log.Fatal(err)
		}
		total += len(b) // use b here; do not keep it
		// Consume all of it; a smaller n leaves the rest for the next
		// Lease or Read.
		if err := c.Release(len(b)); err != nil {
			log.Fatal(err)
		}
	}
	fmt.Println("read", total, "bytes")
}

// Writing without a copy: Reserve returns registered send memory, perhaps
// less than asked for, and Commit sends what was filled of it.
func ExampleConn_Reserve() {
	c, err := qp.Dial(context.Background(), "192.0.2.10:6379", nil)
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()

	msg := []byte("*3\r\n$3\r\nSET\r\n$3\r\nkey\r\n$5\r\nvalue\r\n")
	for len(msg) > 0 {
		b, err := c.Reserve(len(msg))
		if err != nil {
			log.Fatal(err)
		}
		n := copy(b, msg) // or encode straight into b
		if err := c.Commit(n); err != nil {
			log.Fatal(err)
		}
		msg = msg[n:]
	}
}
