package benchrun

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"sync"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
)

// SetupRequests are the requests a connection sends before the tests, in
// valkey-benchmark's order: AUTH with a password (-a; with --user, AUTH
// user password), SELECT with a db other than 0 (--dbnum), HELLO 3 with
// resp3 (-3).
func SetupRequests(user, password string, db int, resp3 bool) [][]byte {
	var reqs [][]byte
	switch {
	case password != "" && user != "":
		reqs = append(reqs, multiBulk("AUTH", user, password))
	case password != "":
		reqs = append(reqs, multiBulk("AUTH", password))
	}
	if db != 0 {
		reqs = append(reqs, multiBulk("SELECT", strconv.Itoa(db)))
	}
	if resp3 {
		reqs = append(reqs, multiBulk("HELLO", "3"))
	}
	return reqs
}

// setup sends cfg.Setup on every client's connection, all clients at
// once, within cfg.Timeout each.
func setup(ctx context.Context, clients []*client, cfg Config) error {
	if len(cfg.Setup) == 0 {
		return nil
	}
	timeout := cfg.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	errs := make([]error, len(clients))
	var wg sync.WaitGroup
	for i, c := range clients {
		wg.Go(func() {
			stop := context.AfterFunc(ctx, func() { c.conn.SetDeadline(time.Unix(1, 0)) })
			defer stop()
			c.conn.SetDeadline(time.Now().Add(timeout))
			defer c.conn.SetDeadline(time.Time{})
			for _, req := range cfg.Setup {
				if _, err := c.roundTrip(req); err != nil {
					errs[i] = err
					return
				}
			}
		})
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return err
	}
	var se *ServerError
	for _, err := range errs { // an error reply says the most
		if errors.As(err, &se) {
			return err
		}
	}
	return errors.Join(errs...)
}

// roundTrip sends one request and returns its reply, outside any test; an
// error reply is a *ServerError.
func (c *client) roundTrip(req []byte) ([]byte, error) {
	name := "request" // errors name the command, never its arguments (AUTH's password)
	if cmd, ok := commandName(req); ok {
		name = cmd
	}
	if _, err := c.conn.Write(req); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	for {
		n, isErr, err := skipReply(c.in[c.r:c.w])
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		if n > 0 {
			// A copy: the buffer's next read may overwrite it.
			reply := append([]byte(nil), c.in[c.r:c.r+n]...)
			c.r += n
			if c.r == c.w {
				c.r, c.w = 0, 0
			}
			if isErr {
				return nil, &ServerError{Msg: errorText(reply)}
			}
			return reply, nil
		}
		if c.w == len(c.in) {
			if c.r > 0 {
				c.w = copy(c.in, c.in[c.r:c.w])
				c.r = 0
			} else {
				c.in = append(c.in, make([]byte, len(c.in))...)
			}
		}
		m, err := c.conn.Read(c.in[c.w:])
		c.w += m
		if err != nil {
			if errors.Is(err, io.EOF) {
				err = fmt.Errorf("server closed the connection: %w", err)
			}
			return nil, fmt.Errorf("%s: %w", name, err)
		}
	}
}

// commandName returns the command name of a multi-bulk request,
// "*N\r\n$L\r\nNAME\r\n...".
func commandName(req []byte) (string, bool) {
	i := lineEnd(req)
	if i < 0 {
		return "", false
	}
	b := req[i+2:]
	j := lineEnd(b)
	if j < 1 || b[0] != '$' {
		return "", false
	}
	l, ok := atoi(b[1:j])
	if !ok || l < 0 || len(b) < j+2+l {
		return "", false
	}
	return string(b[j+2 : j+2+l]), true
}

// clientSeed is client i's random seed: a fixed sequence without a seed,
// else the seed's, splitmix64-mixed so that near seeds differ throughout.
func clientSeed(seed uint64, i int) uint64 {
	if seed == 0 {
		return uint64(i+1) * 0x9E3779B97F4A7C15
	}
	z := seed + uint64(i+1)*0x9E3779B97F4A7C15
	z = (z ^ z>>30) * 0xBF58476D1CE4E5B9
	z = (z ^ z>>27) * 0x94D049BB133111EB
	return z ^ z>>31
}

// histSized is a latency histogram of sigFigs significant figures.
func histSized(sigFigs int) *hdrhistogram.Histogram {
	return hdrhistogram.New(histLowest, histHighest, sigFigs)
}
