package gnettcp_test

import (
	"context"
	"fmt"
	"log"
	"net"

	"github.com/redis/go-redis/v9"

	"github.com/seed54442f1a/rdmapool/pool"
	"github.com/seed54442f1a/rdmapool/pool/gnettcp"
	"github.com/seed54442f1a/rdmapool/server"
)

// go-redis through a Dialer whose TCP connections run on gnet's event
// loops. (Here on TCP alone: the embedded server listens on TCP only.)
func ExampleEngine() {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		log.Fatal(err)
	}
	srv := server.New(nil)
	go srv.Serve(l)
	defer srv.Close()

	d := pool.Dialer{Options: pool.Options{Policy: pool.TCPOnly, TCPEngine: gnettcp.Engine}}
	defer d.Close()
	rdb := redis.NewClient(&redis.Options{Addr: l.Addr().String(), Dialer: d.DialContext})
	defer rdb.Close()

	pong, err := rdb.Ping(context.Background()).Result()
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(pong, d.Stats()[l.Addr().String()].Dials[pool.TCP])
	// Output: PONG 1
}
