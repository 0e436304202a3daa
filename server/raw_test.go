package server

import (
	"errors"
	"fmt"
	"io"
	"net"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

// Tests that look at the bytes on the wire.

func TestInline(t *testing.T) {
	_, addr := startServer(t, nil)
	rc := dialRaw(t, addr)
	rc.send("PING\r\n")
	rc.expect("+PONG\r\n")
	rc.send("ping hello\n") // LF alone ends a line too
	rc.expect("$5\r\nhello\r\n")
	rc.send("\r\n   \r\nPING\r\n") // blank lines get no reply
	rc.expect("+PONG\r\n")
	rc.send(`SET k "a b\x41\n" ` + "\r\n")
	rc.expect("+OK\r\n")
	rc.send("GET k\r\n")
	rc.expect("$5\r\na bA\n\r\n")
	rc.send(`set k2 'it\'s' ex 100` + "\r\n")
	rc.expect("+OK\r\n")
	rc.send("get k2\r\n")
	rc.expect("$4\r\nit's\r\n")
	rc.send("set k3 \"\"\r\nstrlen k3\r\n")
	rc.expect("+OK\r\n")
	rc.expect(":0\r\n")
	// Inline and multibulk requests mixed in one write.
	rc.send("PING\r\n" + encode("ECHO", "x") + "ECHO y\r\n")
	rc.expect("+PONG\r\n")
	rc.expect("$1\r\nx\r\n")
	rc.expect("$1\r\ny\r\n")
	rc.send("GET\r\n")
	rc.expect("-ERR wrong number of arguments for 'get' command\r\n")
}

func TestInlineUnbalancedQuotes(t *testing.T) {
	_, addr := startServer(t, nil)
	for _, line := range []string{`SET k "abc`, `SET k 'abc`, `SET k "abc"def`, `ECHO "`} {
		rc := dialRaw(t, addr)
		rc.send("PING\r\n" + line + "\r\nPING\r\n")
		rc.expect("+PONG\r\n")
		rc.expect("-ERR Protocol error: unbalanced quotes in request\r\n")
		rc.expectClosed()
	}
}

func TestErrors(t *testing.T) {
	_, addr := startServer(t, nil)
	rc := dialRaw(t, addr)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"foo", "a", "b"}, "-ERR unknown command 'foo', with args beginning with: 'a' 'b' \r\n"},
		{[]string{"foo"}, "-ERR unknown command 'foo', with args beginning with: \r\n"},
		{[]string{"foo", "a\r\nb"}, "-ERR unknown command 'foo', with args beginning with: 'a  b' \r\n"},
		{[]string{"foo", strings.Repeat("x", 200)}, "-ERR unknown command 'foo', with args beginning with: '" + strings.Repeat("x", 128) + "' \r\n"},
		{[]string{"GET"}, "-ERR wrong number of arguments for 'get' command\r\n"},
		{[]string{"get", "a", "b"}, "-ERR wrong number of arguments for 'get' command\r\n"},
		{[]string{"SET", "k"}, "-ERR wrong number of arguments for 'set' command\r\n"},
		{[]string{"mset", "a", "1", "b"}, "-ERR wrong number of arguments for 'mset' command\r\n"},
		{[]string{"hset", "h", "f"}, "-ERR wrong number of arguments for 'hset' command\r\n"},
		{[]string{"ping", "a", "b"}, "-ERR wrong number of arguments for 'ping' command\r\n"},
		{[]string{"client", "setname"}, "-ERR wrong number of arguments for 'client|setname' command\r\n"},
		{[]string{"client", "maint_notifications", "on"}, "-ERR unknown subcommand 'maint_notifications'. Try CLIENT HELP.\r\n"},
		{[]string{"cluster", "shards"}, "-ERR This instance has cluster support disabled\r\n"},
		{[]string{"set", "k", "v", "nx", "xx"}, "-ERR syntax error\r\n"},
		{[]string{"set", "k", "v", "ex", "0"}, "-ERR invalid expire time in 'set' command\r\n"},
		{[]string{"set", "k", "v", "ex", "x"}, "-ERR value is not an integer or out of range\r\n"},
		{[]string{"set", "k", "v", "ex", "10", "px", "10"}, "-ERR syntax error\r\n"},
		{[]string{"set", "k", "v", "keepttl"}, "+OK\r\n"},
		{[]string{"incr", "k"}, "-ERR value is not an integer or out of range\r\n"},
		{[]string{"lpush", "k", "x"}, "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n"},
		{[]string{"lpop", "k", "1"}, "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n"},
		{[]string{"hget", "k", "f"}, "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n"},
		{[]string{"sadd", "k", "m"}, "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n"},
		{[]string{"zadd", "k", "1", "m"}, "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n"},
		{[]string{"set", "k", "2", "get"}, "$1\r\nv\r\n"},
		{[]string{"rpush", "l", "a"}, ":1\r\n"},
		{[]string{"get", "l"}, "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n"},
		{[]string{"set", "l", "x", "get"}, "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n"},
		{[]string{"set", "l", "x"}, "+OK\r\n"}, // SET replaces any type
		{[]string{"set", "n", "9223372036854775807"}, "+OK\r\n"},
		{[]string{"incr", "n"}, "-ERR increment or decrement would overflow\r\n"},
		{[]string{"lpop", "missing", "2"}, "*-1\r\n"},
		{[]string{"lpop", "missing", "-1"}, "-ERR value is out of range, must be positive\r\n"},
		{[]string{"zadd", "z", "nan", "m"}, "-ERR value is not a valid float\r\n"},
		{[]string{"zadd", "z", "nx", "xx", "1", "m"}, "-ERR XX and NX options at the same time are not compatible\r\n"},
		{[]string{"select", "0"}, "+OK\r\n"},
		{[]string{"select", "16"}, "-ERR DB index is out of range\r\n"},
		{[]string{"hello", "4"}, "-NOPROTO unsupported protocol version\r\n"},
		{[]string{"hello", "x"}, "-ERR Protocol version is not an integer or out of range\r\n"},
		{[]string{"hello", "3", "foo"}, "-ERR Syntax error in HELLO option 'foo'\r\n"},
		{[]string{"auth", "x"}, "-ERR AUTH <password> called without any password configured for the default user. Are you sure your configuration is correct?\r\n"},
		{[]string{"client", "tracking", "on", "optin", "optout"}, "-ERR You can't specify both OPTIN mode and OPTOUT mode\r\n"},
		{[]string{"client", "tracking", "off"}, "+OK\r\n"},
		{[]string{"xadd", "s", "0-0", "f", "v"}, "-ERR The ID specified in XADD must be greater than 0-0\r\n"},
		{[]string{"xadd", "s", "5-1", "f", "v"}, "$3\r\n5-1\r\n"},
		{[]string{"xadd", "s", "5-1", "f", "v"}, "-ERR The ID specified in XADD is equal or smaller than the target stream top item\r\n"},
		{[]string{"xadd", "s", "5-*", "f", "v"}, "$3\r\n5-2\r\n"},
		{[]string{"xadd", "s", "x", "f", "v"}, "-ERR Invalid stream ID specified as stream command argument\r\n"},
		{[]string{"xadd", "s", "*", "f"}, "-ERR wrong number of arguments for 'xadd' command\r\n"},
		{[]string{"xlen", "s"}, ":2\r\n"},
	} {
		if got := rc.do(tc.args...); got != tc.want {
			t.Errorf("%q: got %q, want %q", tc.args, got, tc.want)
		}
	}
	// The connection is still usable after every error.
	rc.expectNothingPending(t)
}

func (rc *rawClient) expectNothingPending(t *testing.T) {
	t.Helper()
	if got := rc.do("PING"); got != "+PONG\r\n" {
		t.Errorf("PING after the errors: %q", got)
	}
}

// TestMalformed: a request that cannot be parsed gets valkey's protocol
// error, after the replies to the requests before it, and the connection
// closes. The server goes on serving others.
func TestMalformed(t *testing.T) {
	_, addr := startServer(t, &Options{MaxBulkLen: 1 << 20})
	for _, tc := range []struct{ name, req, reply string }{
		{"multibulk not a number", "*abc\r\n", "invalid multibulk length"},
		{"multibulk with plus", "*+1\r\n", "invalid multibulk length"},
		{"multibulk leading zero", "*01\r\n", "invalid multibulk length"},
		{"multibulk too many", "*2000000\r\n", "invalid multibulk length"},
		{"multibulk overflow", "*99999999999999999999999\r\n", "invalid multibulk length"},
		{"multibulk CR without LF", "*1\rx", "invalid multibulk length"},
		{"bulk not a number", "*1\r\n$x\r\n", "invalid bulk length"},
		{"bulk negative", "*1\r\n$-5\r\n", "invalid bulk length"},
		{"bulk over MaxBulkLen", "*1\r\n$1048577\r\n", "invalid bulk length"},
		{"bulk over 512 MiB", "*1\r\n$536870913\r\n", "invalid bulk length"},
		{"bulk int64 max", "*1\r\n$9223372036854775807\r\n", "invalid bulk length"},
		{"not a bulk", "*1\r\n:5\r\n", "expected '$', got ':'"},
		{"binary type byte", "*1\r\n\x00\r\n", `expected '$', got '\x00'`},
		{"bulk without CRLF", "*1\r\n$4\r\nPINGxx", "bulk string not terminated by CRLF"},
		{"huge multibulk header", "*" + strings.Repeat("1", 70<<10), "too big mbulk count string"},
		{"huge bulk header", "*1\r\n$" + strings.Repeat("1", 70<<10), "too big bulk count string"},
		{"huge inline", "PING " + strings.Repeat("x", 70<<10), "too big inline request"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rc := dialRaw(t, addr)
			rc.send(encode("PING") + tc.req)
			rc.expect("+PONG\r\n")
			rc.expect("-ERR Protocol error: " + tc.reply + "\r\n")
			rc.expectClosed()
		})
	}
	rc := dialRaw(t, addr)
	rc.expectNothingPending(t)
}

// TestQueryBufferLimit: a request larger than MaxQueryBuffer closes the
// connection without growing past the limit.
func TestQueryBufferLimit(t *testing.T) {
	srv, addr := startServer(t, &Options{MaxQueryBuffer: 256 << 10})
	rc := dialRaw(t, addr)
	rc.send(encode("SET", "k", strings.Repeat("v", 200<<10))) // fits
	rc.expect("+OK\r\n")
	// An announced length within MaxBulkLen, but more data than the buffer
	// may hold: the server closes before it is all sent.
	go func() {
		rc.c.Write([]byte("*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$1000000\r\n"))
		rc.c.Write(make([]byte, 1000002))
	}()
	rc.expectClosed()
	if st := srv.Stats(); st.TotalConnections != 1 {
		t.Errorf("stats: %+v", st)
	}
}

// TestSplitAndPipelined: a request may arrive in pieces of any size, and
// many may arrive at once; each gets its reply in order.
func TestSplitAndPipelined(t *testing.T) {
	srv, addr := startServer(t, nil)
	rc := dialRaw(t, addr)
	req := encode("SET", "key", "value") + "PING\r\n" + encode("GET", "key")
	for i := 0; i < len(req); i++ {
		rc.send(req[i : i+1])
		time.Sleep(100 * time.Microsecond)
	}
	rc.expect("+OK\r\n")
	rc.expect("+PONG\r\n")
	rc.expect("$5\r\nvalue\r\n")

	var b strings.Builder
	for i := range 1000 {
		b.WriteString(encode("SET", fmt.Sprint("k", i), fmt.Sprint(i)))
		b.WriteString(encode("GET", fmt.Sprint("k", i)))
	}
	rc.send(b.String())
	for i := range 1000 {
		rc.expect("+OK\r\n")
		v := fmt.Sprint(i)
		rc.expect(fmt.Sprintf("$%d\r\n%s\r\n", len(v), v))
	}
	if got := rc.do("DBSIZE"); got != ":1001\r\n" {
		t.Errorf("DBSIZE %q", got)
	}
	if st := srv.Stats(); st.Commands < 2004 || st.Connections != 1 {
		t.Errorf("stats %+v", st)
	}
}

// TestLargeValues: values larger than the read buffer, the output buffer and
// the direct-write threshold.
func TestLargeValues(t *testing.T) {
	_, addr := startServer(t, nil)
	rc := dialRaw(t, addr)
	for _, n := range []int{bigBulk - 1, bigBulk, 1 << 20, 5<<20 + 3} {
		v := strings.Repeat(string(rune('a'+n%26)), n)
		rc.send(encode("SET", "big", v) + encode("GET", "big") + encode("STRLEN", "big"))
		rc.expect("+OK\r\n")
		rc.expect(fmt.Sprintf("$%d\r\n%s\r\n", n, v))
		rc.expect(fmt.Sprintf(":%d\r\n", n))
	}
}

func TestRESP3Replies(t *testing.T) {
	_, addr := startServer(t, nil)
	rc := dialRaw(t, addr)
	setup := [][]string{
		{"hset", "h", "f", "v"}, {"zadd", "z", "1.5", "a", "2", "b"}, {"sadd", "s", "m"},
		{"rpush", "l", "x"}, {"set", "str", "v"},
	}
	for _, a := range setup {
		rc.do(a...)
	}
	for _, tc := range []struct {
		args         []string
		resp2, resp3 string
	}{
		{[]string{"get", "nokey"}, "$-1\r\n", "_\r\n"},
		{[]string{"hget", "h", "nofield"}, "$-1\r\n", "_\r\n"},
		{[]string{"hgetall", "h"}, "*2\r\n$1\r\nf\r\n$1\r\nv\r\n", "%1\r\n$1\r\nf\r\n$1\r\nv\r\n"},
		{[]string{"smembers", "s"}, "*1\r\n$1\r\nm\r\n", "~1\r\n$1\r\nm\r\n"},
		{[]string{"zscore", "z", "a"}, "$3\r\n1.5\r\n", ",1.5\r\n"},
		{[]string{"zrange", "z", "0", "-1", "withscores"},
			"*4\r\n$1\r\na\r\n$3\r\n1.5\r\n$1\r\nb\r\n$1\r\n2\r\n",
			"*2\r\n*2\r\n$1\r\na\r\n,1.5\r\n*2\r\n$1\r\nb\r\n,2\r\n"},
		{[]string{"lpop", "nokey", "1"}, "*-1\r\n", "_\r\n"},
		{[]string{"config", "get", "appendonly"}, "*2\r\n$10\r\nappendonly\r\n$2\r\nno\r\n", "%1\r\n$10\r\nappendonly\r\n$2\r\nno\r\n"},
		{[]string{"client", "getname"}, "$-1\r\n", "_\r\n"},
	} {
		if got := rc.do(tc.args...); got != tc.resp2 {
			t.Errorf("RESP2 %q: got %q, want %q", tc.args, got, tc.resp2)
		}
		rc.do("hello", "3")
		if got := rc.do(tc.args...); got != tc.resp3 {
			t.Errorf("RESP3 %q: got %q, want %q", tc.args, got, tc.resp3)
		}
		rc.do("hello", "2")
	}
}

func TestHello(t *testing.T) {
	_, addr := startServer(t, nil)
	rc := dialRaw(t, addr)
	id := strings.TrimSuffix(strings.TrimPrefix(rc.do("client", "id"), ":"), "\r\n")
	want3 := "%7\r\n$6\r\nserver\r\n$6\r\nvalkey\r\n$7\r\nversion\r\n$5\r\n8.0.0\r\n$5\r\nproto\r\n:3\r\n" +
		"$2\r\nid\r\n:" + id + "\r\n$4\r\nmode\r\n$10\r\nstandalone\r\n$4\r\nrole\r\n$6\r\nmaster\r\n$7\r\nmodules\r\n*0\r\n"
	if got := rc.do("HELLO", "3", "AUTH", "default", "any", "SETNAME", "me"); got != want3 {
		t.Errorf("HELLO 3: %q\nwant %q", got, want3)
	}
	rc.expectReply(t, []string{"client", "getname"}, "$2\r\nme\r\n")
	want2 := "*14\r\n" + strings.Replace(strings.TrimPrefix(want3, "%7\r\n"), ":3\r\n", ":2\r\n", 1)
	if got := rc.do("HELLO", "2"); got != want2 {
		t.Errorf("HELLO 2: %q\nwant %q", got, want2)
	}
	if got := rc.do("HELLO"); got != want2 {
		t.Errorf("HELLO: %q", got)
	}
	rc.expectReply(t, []string{"client", "setname", "a b"}, "-ERR Client names cannot contain spaces, newlines or special characters.\r\n")
	rc.expectReply(t, []string{"auth", "someone", "x"}, "-WRONGPASS invalid username-password pair or user is disabled.\r\n")
	rc.expectReply(t, []string{"auth", "default", "x"}, "+OK\r\n")
}

func (rc *rawClient) expectReply(t *testing.T, args []string, want string) {
	t.Helper()
	if got := rc.do(args...); got != want {
		t.Errorf("%q: got %q, want %q", args, got, want)
	}
}

func TestPassword(t *testing.T) {
	_, addr := startServer(t, &Options{Password: "secret"})
	rc := dialRaw(t, addr)
	rc.expectReply(t, []string{"get", "k"}, "-NOAUTH Authentication required.\r\n")
	rc.expectReply(t, []string{"nosuch"}, "-ERR unknown command 'nosuch', with args beginning with: \r\n")
	rc.expectReply(t, []string{"hello", "3"}, "-NOAUTH HELLO must be called with the client already authenticated, otherwise the HELLO <proto> AUTH <user> <pass> option can be used to authenticate the client and select the RESP protocol version at the same time\r\n")
	rc.expectReply(t, []string{"auth", "wrong"}, "-WRONGPASS invalid username-password pair or user is disabled.\r\n")
	rc.expectReply(t, []string{"hello", "3", "auth", "default", "wrong"}, "-WRONGPASS invalid username-password pair or user is disabled.\r\n")
	rc.expectReply(t, []string{"get", "k"}, "-NOAUTH Authentication required.\r\n")
	rc.expectReply(t, []string{"auth", "secret"}, "+OK\r\n")
	rc.expectReply(t, []string{"get", "k"}, "$-1\r\n")

	rc2 := dialRaw(t, addr)
	if got := rc2.do("hello", "3", "auth", "default", "secret"); !strings.HasPrefix(got, "%7\r\n") {
		t.Errorf("HELLO 3 AUTH: %q", got)
	}
	rc2.expectReply(t, []string{"get", "k"}, "_\r\n")
}

// TestUnauthenticatedLimits: while a password is set and the client has
// not authenticated, a multibulk request of more than 10 arguments or with
// an argument over 16 KiB is a protocol error, as in valkey, so that such a
// client cannot make the server buffer large requests. AUTH lifts the
// limits from the next request on, even in the same pipeline.
func TestUnauthenticatedLimits(t *testing.T) {
	_, addr := startServer(t, &Options{Password: "secret"})
	const noauth = "-NOAUTH Authentication required.\r\n"
	const wrongpass = "-WRONGPASS invalid username-password pair or user is disabled.\r\n"
	for _, tc := range []struct {
		name, req string
		before    []string // the replies before the error
		reply     string
	}{
		{"11 arguments", "*11\r\n", []string{noauth}, "unauthenticated multibulk length"},
		{"bulk of 16385", "*1\r\n$16385\r\n", []string{noauth}, "unauthenticated bulk length"},
		{"bulk of 100 MB", "*1\r\n$100000000\r\n", []string{noauth}, "unauthenticated bulk length"},
		{"over the absolute limit", "*2000000\r\n", []string{noauth}, "invalid multibulk length"},
		{"after a failed AUTH", encode("AUTH", "wrong") + "*11\r\n", []string{noauth, wrongpass}, "unauthenticated multibulk length"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rc := dialRaw(t, addr)
			rc.send(encode("PING") + tc.req)
			for _, r := range tc.before {
				rc.expect(r)
			}
			rc.expect("-ERR Protocol error: " + tc.reply + "\r\n")
			rc.expectClosed()
		})
	}

	// At the limits: refused for want of AUTH, not by the reader.
	rc := dialRaw(t, addr)
	rc.expectReply(t, []string{"rpush", "l", "1", "2", "3", "4", "5", "6", "7", "8"}, noauth)
	rc.expectReply(t, []string{"set", "k", strings.Repeat("v", 16<<10)}, noauth)
	// AUTH then, in the same write, requests over the limits.
	rc.send(encode("AUTH", "secret") +
		encode("SET", "k", strings.Repeat("v", 100<<10)) +
		encode("RPUSH", "l", "1", "2", "3", "4", "5", "6", "7", "8", "9", "10"))
	rc.expect("+OK\r\n")
	rc.expect("+OK\r\n")
	rc.expect(":10\r\n")
	rc.expectReply(t, []string{"strlen", "k"}, ":102400\r\n")

	// HELLO ... AUTH lifts them too.
	rc2 := dialRaw(t, addr)
	rc2.send(encode("HELLO", "2", "AUTH", "default", "secret") + encode("LLEN", "l") + encode("ECHO", strings.Repeat("e", 20000)))
	rc2.reply()
	rc2.expect(":10\r\n")
	rc2.expect("$20000\r\n" + strings.Repeat("e", 20000) + "\r\n")
}

func TestQuit(t *testing.T) {
	_, addr := startServer(t, nil)
	rc := dialRaw(t, addr)
	rc.send(encode("QUIT") + encode("PING"))
	rc.expect("+OK\r\n")
	rc.expectClosed()
}

func TestExpiry(t *testing.T) {
	_, addr := startServer(t, nil)
	rc := dialRaw(t, addr)
	rc.expectReply(t, []string{"set", "k", "v", "px", "100"}, "+OK\r\n")
	rc.expectReply(t, []string{"ttl", "k"}, ":0\r\n")
	if got := rc.do("pttl", "k"); got == ":-1\r\n" || got == ":-2\r\n" {
		t.Errorf("PTTL %q", got)
	}
	rc.expectReply(t, []string{"set", "p", "v", "ex", "100"}, "+OK\r\n")
	rc.expectReply(t, []string{"ttl", "p"}, ":100\r\n")
	rc.expectReply(t, []string{"persist", "p"}, ":1\r\n")
	rc.expectReply(t, []string{"ttl", "p"}, ":-1\r\n")
	rc.expectReply(t, []string{"expire", "p", "50"}, ":1\r\n")
	rc.expectReply(t, []string{"set", "p", "w", "keepttl"}, "+OK\r\n")
	rc.expectReply(t, []string{"ttl", "p"}, ":50\r\n")
	rc.expectReply(t, []string{"set", "p", "w"}, "+OK\r\n")
	rc.expectReply(t, []string{"ttl", "p"}, ":-1\r\n")
	rc.expectReply(t, []string{"ttl", "nokey"}, ":-2\r\n")
	time.Sleep(150 * time.Millisecond)
	rc.expectReply(t, []string{"get", "k"}, "$-1\r\n")
	rc.expectReply(t, []string{"exists", "k"}, ":0\r\n")
	rc.expectReply(t, []string{"set", "k", "v2", "nx"}, "+OK\r\n") // the expired key counts as missing
	rc.expectReply(t, []string{"expire", "k", "0"}, ":1\r\n")
	rc.expectReply(t, []string{"exists", "k"}, ":0\r\n")
}

func TestDataTypes(t *testing.T) {
	_, addr := startServer(t, nil)
	rc := dialRaw(t, addr)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"rpush", "l", "a", "b", "c"}, ":3\r\n"},
		{[]string{"lpush", "l", "z"}, ":4\r\n"},
		{[]string{"lrange", "l", "0", "-1"}, "*4\r\n$1\r\nz\r\n$1\r\na\r\n$1\r\nb\r\n$1\r\nc\r\n"},
		{[]string{"lrange", "l", "-2", "100"}, "*2\r\n$1\r\nb\r\n$1\r\nc\r\n"},
		{[]string{"lrange", "l", "5", "10"}, "*0\r\n"},
		{[]string{"lpop", "l"}, "$1\r\nz\r\n"},
		{[]string{"rpop", "l", "2"}, "*2\r\n$1\r\nc\r\n$1\r\nb\r\n"},
		{[]string{"llen", "l"}, ":1\r\n"},
		{[]string{"rpop", "l"}, "$1\r\na\r\n"},
		{[]string{"exists", "l"}, ":0\r\n"}, // an emptied list is deleted
		{[]string{"type", "l"}, "+none\r\n"},
		{[]string{"hset", "h", "a", "1", "b", "2"}, ":2\r\n"},
		{[]string{"hset", "h", "a", "3"}, ":0\r\n"},
		{[]string{"hget", "h", "a"}, "$1\r\n3\r\n"},
		{[]string{"hlen", "h"}, ":2\r\n"},
		{[]string{"hdel", "h", "a", "x"}, ":1\r\n"},
		{[]string{"type", "h"}, "+hash\r\n"},
		{[]string{"sadd", "s", "a", "b", "a"}, ":2\r\n"},
		{[]string{"sismember", "s", "a"}, ":1\r\n"},
		{[]string{"scard", "s"}, ":2\r\n"},
		{[]string{"srem", "s", "a"}, ":1\r\n"},
		{[]string{"spop", "s"}, "$1\r\nb\r\n"},
		{[]string{"spop", "s"}, "$-1\r\n"},
		{[]string{"zadd", "z", "3", "c", "1", "a", "2", "b"}, ":3\r\n"},
		{[]string{"zadd", "z", "ch", "5", "a", "4", "d"}, ":2\r\n"},
		{[]string{"zadd", "z", "nx", "0", "a"}, ":0\r\n"},
		{[]string{"zadd", "z", "xx", "0", "e"}, ":0\r\n"},
		{[]string{"zcard", "z"}, ":4\r\n"},
		{[]string{"zrange", "z", "0", "-1"}, "*4\r\n$1\r\nb\r\n$1\r\nc\r\n$1\r\nd\r\n$1\r\na\r\n"},
		{[]string{"zpopmin", "z"}, "*2\r\n$1\r\nb\r\n$1\r\n2\r\n"},
		{[]string{"zpopmin", "z", "2"}, "*4\r\n$1\r\nc\r\n$1\r\n3\r\n$1\r\nd\r\n$1\r\n4\r\n"},
		{[]string{"zrem", "z", "a"}, ":1\r\n"},
		{[]string{"zpopmin", "z"}, "*0\r\n"},
		{[]string{"zadd", "z", "-inf", "m", "+inf", "n"}, ":2\r\n"},
		{[]string{"zscore", "z", "m"}, "$4\r\n-inf\r\n"},
		{[]string{"mset", "a", "1", "b", "2"}, "+OK\r\n"},
		{[]string{"mget", "a", "nokey", "b", "h"}, "*4\r\n$1\r\n1\r\n$-1\r\n$1\r\n2\r\n$-1\r\n"},
		{[]string{"incrby", "a", "10"}, ":11\r\n"},
		{[]string{"decr", "a"}, ":10\r\n"},
		{[]string{"decrby", "a", "-5"}, ":15\r\n"},
		{[]string{"incr", "new"}, ":1\r\n"},
		{[]string{"append", "a", "x"}, ":3\r\n"},
		{[]string{"get", "a"}, "$3\r\n15x\r\n"},
		{[]string{"del", "a", "b", "nokey"}, ":2\r\n"},
		{[]string{"exists", "h", "h", "nokey"}, ":2\r\n"},
		{[]string{"set", "k", "v", "nx"}, "+OK\r\n"},
		{[]string{"set", "k", "w", "nx"}, "$-1\r\n"},
		{[]string{"set", "k2", "w", "xx"}, "$-1\r\n"},
		{[]string{"set", "k2", "w", "nx", "get"}, "$-1\r\n"},
		{[]string{"dbsize"}, ":5\r\n"}, // h, z, new, k, k2
		{[]string{"flushall"}, "+OK\r\n"},
		{[]string{"dbsize"}, ":0\r\n"},
		{[]string{"echo", "hi"}, "$2\r\nhi\r\n"},
		{[]string{"ping", "hi"}, "$2\r\nhi\r\n"},
		{[]string{"config", "get", "save"}, "*2\r\n$4\r\nsave\r\n$0\r\n\r\n"},
		{[]string{"config", "get", "nosuch"}, "*0\r\n"},
		{[]string{"readonly"}, "+OK\r\n"},
		{[]string{"client", "setinfo", "lib-name", "x"}, "+OK\r\n"},
	} {
		if got := rc.do(tc.args...); got != tc.want {
			t.Errorf("%q: got %q, want %q", tc.args, got, tc.want)
		}
	}
	if got := rc.do("command", "count"); got != fmt.Sprintf(":%d\r\n", len(commands)) {
		t.Errorf("COMMAND COUNT %q", got)
	}
	if got := rc.do("info"); !strings.Contains(got, "connected_clients:1\r\n") || !strings.Contains(got, "valkey_version:") {
		t.Errorf("INFO %q", got)
	}
	if got := rc.do("client", "info"); !strings.Contains(got, "lib-name=x") {
		t.Errorf("CLIENT INFO %q", got)
	}
}

// TestCloseLeavesNoGoroutines: Close ends open connections, including ones
// in the middle of a request, and every goroutine of the server.
func TestCloseLeavesNoGoroutines(t *testing.T) {
	before := runtime.NumGoroutine()
	srv := New(testOpts(nil))
	var serveErrs sync.WaitGroup
	for range 2 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		serveErrs.Add(1)
		go func() {
			defer serveErrs.Done()
			if err := srv.Serve(l); !errors.Is(err, ErrServerClosed) {
				t.Errorf("Serve: %v", err)
			}
		}()
		for range 5 {
			rc := dialRaw(t, l.Addr().String())
			rc.expectReply(t, []string{"ping"}, "+PONG\r\n")
			rc.send("*3\r\n$3\r\nSET\r\n") // half a request
		}
	}
	time.Sleep(50 * time.Millisecond)
	if st := srv.Stats(); st.Connections != 10 || st.TotalConnections != 10 {
		t.Errorf("stats before Close: %+v", st)
	}
	srv.Close()
	serveErrs.Wait()
	if st := srv.Stats(); st.Connections != 0 {
		t.Errorf("stats after Close: %+v", st)
	}
	l, _ := net.Listen("tcp", "127.0.0.1:0")
	if err := srv.Serve(l); !errors.Is(err, ErrServerClosed) {
		t.Errorf("Serve after Close: %v", err)
	}
	checkGoroutines(t, before)
}

// TestMaxClients: a connection beyond MaxClients gets valkey's error and is
// closed; once a client leaves, another may connect.
func TestMaxClients(t *testing.T) {
	srv, addr := startServer(t, &Options{MaxClients: 2})
	rc1 := dialRaw(t, addr)
	rc1.expectReply(t, []string{"ping"}, "+PONG\r\n")
	rc2 := dialRaw(t, addr)
	rc2.expectReply(t, []string{"ping"}, "+PONG\r\n")
	rc3 := dialRaw(t, addr)
	rc3.expect("-ERR max number of clients reached\r\n")
	rc3.expectClosed()
	if st := srv.Stats(); st.Connections != 2 || st.TotalConnections != 2 || st.RejectedConnections != 1 {
		t.Errorf("stats: %+v", st)
	}
	rc1.c.Close()
	deadline := time.Now().Add(10 * time.Second)
	for srv.Stats().Connections > 1 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	dialRaw(t, addr).expectReply(t, []string{"ping"}, "+PONG\r\n")
	rc2.expectReply(t, []string{"ping"}, "+PONG\r\n")
}

// chanListener returns the connections sent on its channel, and an error
// once the channel is closed, whether or not the listener is closed.
type chanListener chan net.Conn

func (l chanListener) Accept() (net.Conn, error) {
	if c, ok := <-l; ok {
		return c, nil
	}
	return nil, net.ErrClosed
}
func (l chanListener) Close() error   { return nil }
func (l chanListener) Addr() net.Addr { return &net.TCPAddr{} }

// slowCloseConn's Close waits until release is closed, as an RDMA
// connection's waits for its teardown.
type slowCloseConn struct {
	net.Conn
	closing, release chan struct{}
}

func (c *slowCloseConn) Close() error {
	close(c.closing)
	<-c.release
	return c.Conn.Close()
}

// TestCloseAcceptedAfterClose: a connection accepted after Close is closed
// without holding the server's lock, so the server answers meanwhile.
func TestCloseAcceptedAfterClose(t *testing.T) {
	srv := New(testOpts(nil))
	l := make(chanListener)
	served := make(chan error, 1)
	go func() { served <- srv.Serve(l) }()
	for serving := false; !serving; time.Sleep(time.Millisecond) {
		srv.mu.Lock()
		serving = len(srv.listeners) == 1
		srv.mu.Unlock()
	}
	closed := make(chan struct{})
	go func() { srv.Close(); close(closed) }()
	for !srv.isClosed() {
		time.Sleep(time.Millisecond)
	}
	a, b := net.Pipe()
	defer b.Close()
	nc := &slowCloseConn{Conn: a, closing: make(chan struct{}), release: make(chan struct{})}
	l <- nc
	<-nc.closing
	stats := make(chan Stats, 1)
	go func() { stats <- srv.Stats() }()
	select {
	case <-stats:
	case <-time.After(time.Minute):
		t.Errorf("Stats blocked while a connection closes")
	}
	close(nc.release)
	close(l)
	<-closed
	if err := <-served; !errors.Is(err, ErrServerClosed) {
		t.Errorf("Serve returned %v, want ErrServerClosed", err)
	}
}

// TestServeListenerClosed: Serve returns when its listener is closed, and
// the server goes on with its other listeners.
func TestServeListenerClosed(t *testing.T) {
	srv, addr := startServer(t, nil)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(l) }()
	dialRaw(t, l.Addr().String()).expectReply(t, []string{"ping"}, "+PONG\r\n")
	l.Close()
	if err := <-done; !errors.Is(err, net.ErrClosed) {
		t.Errorf("Serve after its listener closed: %v", err)
	}
	dialRaw(t, addr).expectReply(t, []string{"ping"}, "+PONG\r\n")
}

// TestProtocolErrorCloses: after a protocol error the server sends the
// error and closes cleanly, even with much of the client's input unread:
// the client reads the replies, then EOF, not a reset (ECONNRESET), which
// a socket closed with unread input sends. The input goes on arriving
// while the server answers.
func TestProtocolErrorCloses(t *testing.T) {
	_, addr := startServer(t, nil)
	for _, tc := range []struct{ name, input, reply string }{
		{"100000 nested arrays", encode("PING") + strings.Repeat("*1\r\n", 100000),
			"-ERR Protocol error: expected '$', got '*'\r\n"},
		{"garbage after a command", encode("PING") + "*1\r\n$x\r\n" + strings.Repeat("garbage ", 1<<17),
			"-ERR Protocol error: invalid bulk length\r\n"},
		{"unbalanced quotes", "PING\r\nSET k \"v\r\n" + strings.Repeat("x", 1<<20),
			"-ERR Protocol error: unbalanced quotes in request\r\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			// Write from another goroutine: the server stops reading
			// requests at the error, and the input may not all fit in
			// the socket buffers.
			go func() {
				c.SetWriteDeadline(time.Now().Add(10 * time.Second))
				io.WriteString(c, tc.input)
			}()
			c.SetReadDeadline(time.Now().Add(10 * time.Second))
			got, err := io.ReadAll(c)
			if want := "+PONG\r\n" + tc.reply; string(got) != want || err != nil {
				t.Errorf("read %q, %v; want %q, then EOF", got, err, want)
			}
		})
	}
}
