// Command dialer is bench/size/own with a pool.Dialer as go-redis's
// dialer: what the binary gains is what the Dialer costs in size.
package main

import (
	"context"
	"fmt"
	"os"

	"github.com/redis/go-redis/v9"

	"github.com/seed54442f1a/rdmapool/pool"
)

func main() {
	var d pool.Dialer
	defer d.Close()
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:6379", Dialer: d.DialContext})
	defer rdb.Close()
	if err := rdb.Ping(context.Background()).Err(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
