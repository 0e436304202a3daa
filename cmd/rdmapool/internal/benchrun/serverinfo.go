package benchrun

import (
	"context"
	"fmt"
	"net"
	"time"
)

// ServerConfig is what valkey-benchmark shows of a server's configuration.
type ServerConfig struct {
	Save, AppendOnly string
}

// FetchConfig reads the server's "save" and "appendonly" configuration, as
// valkey-benchmark does before its tests, over a TCP connection of its own
// to addr that sends setup first (AUTH, SELECT, HELLO 3).
func FetchConfig(ctx context.Context, addr string, setup [][]byte, timeout time.Duration) (ServerConfig, error) {
	var d net.Dialer
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	nc, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return ServerConfig{}, err
	}
	defer nc.Close()
	nc.SetDeadline(time.Now().Add(timeout))
	stop := context.AfterFunc(ctx, func() { nc.SetDeadline(time.Unix(1, 0)) })
	defer stop()
	c := &client{conn: nc, in: make([]byte, 4096)}
	for _, req := range setup {
		if _, err := c.roundTrip(req); err != nil {
			return ServerConfig{}, err
		}
	}
	var sc ServerConfig
	for _, p := range []struct {
		name string
		to   *string
	}{{"save", &sc.Save}, {"appendonly", &sc.AppendOnly}} {
		reply, err := c.roundTrip(multiBulk("CONFIG", "GET", p.name))
		if err != nil {
			return ServerConfig{}, err
		}
		strs, err := flatStrings(reply)
		if err != nil || len(strs) != 2 || strs[0] != p.name {
			return ServerConfig{}, fmt.Errorf("CONFIG GET %s: unexpected reply %q", p.name, trimCRLF(reply))
		}
		*p.to = strs[1]
	}
	return sc, nil
}

// flatStrings returns the strings of a reply that is an array, set or map
// of bulk or simple strings, RESP2 or RESP3.
func flatStrings(reply []byte) ([]string, error) {
	i := lineEnd(reply)
	if i < 0 || len(reply) == 0 {
		return nil, errProtocol
	}
	n, ok := atoi(reply[1:i])
	switch {
	case !ok:
		return nil, errProtocol
	case reply[0] == '%':
		n *= 2
	case reply[0] != '*' && reply[0] != '~':
		return nil, fmt.Errorf("%w: not an array", errProtocol)
	}
	b := reply[i+2:]
	var out []string
	for range max(n, 0) {
		j := lineEnd(b)
		if j < 0 || len(b) == 0 {
			return nil, errProtocol
		}
		switch b[0] {
		case '+':
			out = append(out, string(b[1:j]))
			b = b[j+2:]
		case '$':
			l, ok := atoi(b[1:j])
			if !ok || l < 0 || len(b) < j+2+l+2 {
				return nil, errProtocol
			}
			out = append(out, string(b[j+2:j+2+l]))
			b = b[j+2+l+2:]
		default:
			return nil, fmt.Errorf("%w: not a string", errProtocol)
		}
	}
	return out, nil
}
