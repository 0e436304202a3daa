package main

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/seed54442f1a/rdmapool/cmd/rdmapool/internal/benchrun"
	"github.com/seed54442f1a/rdmapool/pool"
)

// loop is -l: the run again and again until a signal, which ends it with
// exit status 0 after the loops it completed. The text reports come as
// each test ends; --csv's header once, then each loop's rows; a blank line
// ends each loop's text or -q lines, as valkey-benchmark's. Only the first
// loop says which transport ran.
func loop(ctx context.Context, runOne func(pool.Policy, string, bool) (*benchrun.Outcome, error),
	policy pool.Policy, reason string, f *benchFlags, stdout, stderr io.Writer) int {
	for n := 0; ; n++ {
		o, err := runOne(policy, reason, true)
		if ctx.Err() != nil {
			fmt.Fprintf(stderr, "rdmapool bench: stopped after %d loops\n", n)
			return 0
		}
		if err != nil {
			var se *benchrun.ServerError
			if errors.As(err, &se) {
				err = se
			}
			fmt.Fprintf(stderr, "rdmapool bench: loop %d: %v\n", n+1, err)
			return 1
		}
		switch {
		case f.csv && n == 0:
			err = benchrun.WriteCSV(stdout, o)
		case f.csv:
			err = benchrun.WriteCSVRows(stdout, o)
		default:
			_, err = fmt.Fprintln(stdout)
		}
		if err != nil {
			fmt.Fprintf(stderr, "rdmapool bench: cannot write the report: %v\n", err)
			return 1
		}
	}
}

// idle is -I: cfg.Clients connections, set up, held until a signal (exit
// status 0); exit 1 when they cannot be opened.
func idle(ctx context.Context, f *benchFlags, cfg benchrun.Config, rdmaDown error, stdout, stderr, info io.Writer, server string) int {
	reason := ""
	if rdmaDown != nil {
		switch cfg.Policy {
		case pool.RDMAOnly:
			fmt.Fprintf(stderr, "rdmapool bench: --transport rdma: RDMA is unavailable: %v\n", rdmaDown)
			return 1
		case pool.Auto:
			cfg.Policy, reason = pool.TCPOnly, "auto: RDMA unavailable: "+rdmaDown.Error()
		}
	}
	if reason == "" {
		reason = "--transport " + f.transport
	}
	fmt.Fprintf(stdout, "Creating %d idle connections and waiting forever (Ctrl+C when done)\n", cfg.Clients)
	err := benchrun.Idle(ctx, cfg, func(o *benchrun.Outcome) {
		fmt.Fprintf(info, "server: %s; transport: %s (%s)\n", describeServer(server, cfg), o.Transport, reason)
	})
	if err != nil {
		var se *benchrun.ServerError
		if errors.As(err, &se) {
			err = se
		}
		fmt.Fprintf(stderr, "rdmapool bench: %v\n", err)
		return 1
	}
	return 0
}
