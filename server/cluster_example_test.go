package server_test

import (
	"context"
	"fmt"
	"log"
	"net"

	"github.com/redis/go-redis/v9"

	"github.com/seed54442f1a/rdmapool/server"
)

// Three in-process nodes, each serving a third of the slots, and a
// go-redis ClusterClient that finds them from one seed.
func ExampleCluster() {
	cl := server.NewCluster()
	var seeds []string
	for i := range 3 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			log.Fatal(err)
		}
		first, last := i*server.NumSlots/3, (i+1)*server.NumSlots/3-1
		id, err := cl.AddNode(l.Addr().String(), server.SlotRange{First: first, Last: last})
		if err != nil {
			log.Fatal(err)
		}
		srv, err := cl.NewServer(id, nil)
		if err != nil {
			log.Fatal(err)
		}
		defer srv.Close()
		go srv.Serve(l)
		seeds = append(seeds, l.Addr().String())
	}

	rdb := redis.NewClusterClient(&redis.ClusterOptions{Addrs: seeds[:1]})
	defer rdb.Close()
	ctx := context.Background()
	for _, k := range []string{"a", "b", "c"} {
		if err := rdb.Set(ctx, k, "v-"+k, 0).Err(); err != nil {
			log.Fatal(err)
		}
	}
	v, err := rdb.Get(ctx, "c").Result()
	if err != nil {
		log.Fatal(err)
	}
	slot, _ := rdb.ClusterKeySlot(ctx, "c").Result()
	fmt.Println(v, slot)
	// Output: v-c 7365
}
