package server

import (
	"bytes"
	"fmt"
	"io"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"weak"
)

// chunkReader returns its data a few bytes at a time.
type chunkReader struct {
	data  []byte
	sizes []byte
	i     int
}

func (c *chunkReader) Read(p []byte) (int, error) {
	if len(c.data) == 0 {
		return 0, io.EOF
	}
	n := 1 << 20
	if len(c.sizes) > 0 {
		n = int(c.sizes[c.i%len(c.sizes)]) + 1
		c.i++
	}
	n = min(n, len(p), len(c.data))
	copy(p, c.data[:n])
	c.data = c.data[n:]
	return n, nil
}

// parseAll feeds data to a reader in chunks and returns every request, or
// the protocol error that ended parsing.
func parseAll(data, sizes []byte, maxBuffer int) (reqs [][]string, err error) {
	p := newReader(maxBuffer, 1<<20)
	src := &chunkReader{data: data, sizes: sizes}
	for {
		args, err := p.next()
		if err != nil {
			return reqs, err
		}
		if args == nil {
			if err := p.fill(src); err != nil {
				if err == io.EOF {
					return reqs, nil
				}
				return reqs, err
			}
			continue
		}
		req := make([]string, len(args))
		for i, a := range args {
			req[i] = string(a)
		}
		reqs = append(reqs, req)
	}
}

func TestReaderChunks(t *testing.T) {
	big := strings.Repeat("x", 100<<10)
	input := encode("SET", "k", big) + "PING\r\n" + "*0\r\n" + encode("ECHO", "") + "  echo 'a b' \"\\x41\\t\"\n" + encode("GET", "k")
	want := [][]string{{"SET", "k", big}, {"PING"}, {"ECHO", ""}, {"echo", "a b", "A\t"}, {"GET", "k"}}
	for _, sizes := range [][]byte{nil, {0}, {2, 7, 255}, {100}} {
		reqs, err := parseAll([]byte(input), sizes, 1<<30)
		if err != nil {
			t.Fatalf("chunks %v: %v", sizes, err)
		}
		if len(reqs) != len(want) {
			t.Fatalf("chunks %v: %d requests, want %d", sizes, len(reqs), len(want))
		}
		for i := range want {
			if strings.Join(reqs[i], "|") != strings.Join(want[i], "|") {
				t.Errorf("chunks %v: request %d is %.40q, want %.40q", sizes, i, reqs[i], want[i])
			}
		}
	}
}

func TestSplitArgs(t *testing.T) {
	for in, want := range map[string][]string{
		``:                      nil,
		`  a   b `:              {"a", "b"},
		`"a b" c`:               {"a b", "c"},
		`"\x41\x4a\n\"\\"`:      {"AJ\n\"\\"},
		`'it\'s' "x\y"`:         {"it's", "xy"},
		`a"b c"`:                {"ab c"},
		`"" ''`:                 {"", ""},
		"\tset\tk\tv":           {"set", "k", "v"},
		`"\xZZ"`:                {"xZZ"},
		`'\x41'`:                {`\x41`},
		`"unterminated`:         {"!"},
		`"closed"then`:          {"!"},
		`'single`:               {"!"},
		`"ends with backslash\`: {"!"},
	} {
		args, ok := splitArgs([]byte(in), nil)
		got := make([]string, len(args))
		for i, a := range args {
			got[i] = string(a)
		}
		if !ok {
			got = []string{"!"}
		}
		if strings.Join(got, "|") != strings.Join(want, "|") || len(got) != len(want) {
			t.Errorf("splitArgs(%q) = %q, want %q", in, got, want)
		}
	}
}

// FuzzReader: any input, in any chunks, parses without a panic, within the
// buffer limit; a well-formed request parses back to its arguments.
func FuzzReader(f *testing.F) {
	f.Add([]byte(encode("SET", "k", "v")), []byte{3}, "x")
	f.Add([]byte("*2\r\n$3\r\nGET\r\n$-1\r\n"), []byte{0}, "")
	f.Add([]byte("PING \"a\\x\r\n"), []byte{}, "y z")
	f.Add([]byte("*1\r\n$5\r\nab"), []byte{1, 2}, "")
	f.Fuzz(func(t *testing.T, data, sizes []byte, arg string) {
		const maxBuffer = 64 << 10
		parseAll(data, sizes, maxBuffer) // must not panic

		reqs, err := parseAll([]byte(encode("CMD", arg)), sizes, 1<<20)
		if err != nil || len(reqs) != 1 || len(reqs[0]) != 2 || reqs[0][1] != arg {
			t.Errorf("encode(CMD, %q): %q, %v", arg, reqs, err)
		}
		p := newReader(maxBuffer, 1<<20)
		src := &chunkReader{data: bytes.Clone(data), sizes: sizes}
		for {
			if _, err := p.next(); err != nil {
				return
			}
			if err := p.fill(src); err != nil {
				break
			}
			if len(p.buf) > maxBuffer {
				t.Fatalf("buffer grew to %d, over %d", len(p.buf), maxBuffer)
			}
		}
	})
}

// TestReaderKeepsLittle: once a large request has been handled and nothing
// is buffered, the reader drops its grown buffer and argument tables, and
// nothing it keeps refers to the old buffer. A request that follows in the
// same buffer parses whole whether or not it is all there.
func TestReaderKeepsLittle(t *testing.T) {
	many := "*131072\r\n" + strings.Repeat("$40\r\n"+strings.Repeat("x", 40)+"\r\n", 1<<17)
	for _, tc := range []struct{ name, req, rest string }{
		{"many arguments", many, ""},
		// The GET request's start arrives with the large one.
		{"header follows", many + "*2\r\n", "$3\r\nGET\r\n$1\r\nk\r\n"},
		{"argument follows", many + "*2\r\n$3\r\nGET\r\n", "$1\r\nk\r\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := newReader(1<<30, 512<<20)
			// next returns the next request, reading from src as needed.
			next := func(src io.Reader) string {
				t.Helper()
				for {
					args, err := p.next()
					if err != nil {
						t.Fatal(err)
					}
					if args != nil {
						return string(bytes.Join(args, []byte(" ")))
					}
					if err := p.fill(src); err != nil {
						t.Fatal(err)
					}
				}
			}
			next(strings.NewReader(tc.req))
			if len(p.buf) <= keepBuffer {
				t.Fatalf("the request did not grow the buffer: %d", len(p.buf))
			}
			old := weak.Make(&p.buf[0])
			if tc.rest != "" {
				if got := next(strings.NewReader(tc.rest)); got != "GET k" {
					t.Fatalf("after the large request: %.40q", got)
				}
			}
			if got := next(strings.NewReader("PING\r\n")); got != "PING" {
				t.Fatalf("after the large request: %.40q", got)
			}
			if len(p.buf) > keepBuffer || cap(p.args) > keepArgs || cap(p.offs) > 2*keepArgs {
				t.Errorf("kept: buffer %d, args %d, offs %d", len(p.buf), cap(p.args), cap(p.offs))
			}
			runtime.GC()
			if old.Value() != nil {
				t.Errorf("the large request's buffer is still reachable")
			}
			runtime.KeepAlive(p)
		})
	}
}

// TestReaderBigArgument: an argument of bigArg bytes or more is read into
// an allocation of its own, whatever the chunks it comes in, and the
// buffer does not grow for it; take hands it over without a copy, and the
// reader keeps no reference to it after the next request.
func TestReaderBigArgument(t *testing.T) {
	big := strings.Repeat("v", 8<<20)
	reqs := encode("SET", "k", big) + encode("HSET", "h", big[:bigArg], "x", big[:bigArg+1]) + encode("GET", "k")
	for _, sizes := range [][]byte{{255}, {1, 7, 200}, {0}} {
		p := newReader(1<<30, 512<<20)
		src := &chunkReader{data: []byte(reqs), sizes: sizes}
		if sizes[0] == 0 {
			src = &chunkReader{data: []byte(reqs), sizes: nil} // all at once, as one read can
		}
		var got []string
		var kept, dropped weak.Pointer[byte]
		var keep []byte // what a command that takes the value holds
		for len(got) < 3 {
			args, err := p.next()
			if err != nil {
				t.Fatal(err)
			}
			if args == nil {
				if err := p.fill(src); err != nil {
					t.Fatalf("after %d requests: %v", len(got), err)
				}
				if len(p.buf) > initialBuffer {
					t.Fatalf("the buffer grew to %d", len(p.buf))
				}
				continue
			}
			got = append(got, fmt.Sprintf("%s %d", args[0], len(bytes.Join(args, nil))))
			switch string(args[0]) {
			case "SET":
				if v := p.take(args[2]); &v[0] != &args[2][0] || string(v) != big {
					t.Errorf("take copied the big argument, or it is not the value sent")
				} else {
					keep, kept = v, weak.Make(&v[0])
				}
			case "HSET":
				if string(args[2]) != big[:bigArg] || string(args[4]) != big[:bigArg+1] {
					t.Errorf("HSET's arguments are not what was sent")
				}
				if v := p.take(args[1]); &v[0] == &args[1][0] {
					t.Errorf("take did not copy a small argument")
				}
				dropped = weak.Make(&args[4][0])
			}
		}
		want := []string{"SET " + strconv.Itoa(len(big)+4), "HSET " + strconv.Itoa(2*bigArg+7), "GET 4"}
		if strings.Join(got, ",") != strings.Join(want, ",") {
			t.Errorf("chunks %v: requests %q, want %q", sizes, got, want)
		}
		if p.next(); p.dropped < bigArg {
			t.Errorf("the big arguments not taken were not counted as dropped: %d", p.dropped)
		}
		runtime.GC()
		if dropped.Value() != nil {
			t.Errorf("the reader still refers to a big argument of an earlier request")
		}
		if kept.Value() == nil {
			t.Errorf("the taken value was collected")
		}
		runtime.KeepAlive(keep)
	}
}

// BenchmarkReaderParse: parse requests as a connection's reader does, 100
// per buffer (SET of a 16-byte value); an op is one request.
func BenchmarkReaderParse(b *testing.B) {
	const perFill = 100
	data := []byte(strings.Repeat("*3\r\n$3\r\nSET\r\n$6\r\nkey:42\r\n$16\r\n0123456789abcdef\r\n", perFill))
	p := newReader(1<<30, 1<<20)
	src := &bytes.Reader{}
	b.ReportAllocs()
	b.SetBytes(int64(len(data) / perFill))
	for i := 0; i < b.N; {
		args, err := p.next()
		if err != nil {
			b.Fatal(err)
		}
		if args != nil {
			i++
			continue
		}
		if src.Len() == 0 {
			src.Reset(data)
		}
		if err := p.fill(src); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkReplyEncode: encode the replies of one GET (a 16-byte bulk
// string), one INCR (an integer) and one LRANGE of two (an array), into a
// connection's output buffer as the commands do; an op is the three.
func BenchmarkReplyEncode(b *testing.B) {
	c := &conn{out: make([]byte, 0, 16<<10), proto: 2}
	v := []byte("0123456789abcdef")
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		if len(c.out) > 15<<10 {
			c.out = c.out[:0]
		}
		c.addBulk(v)
		c.addInt(int64(i))
		c.addLen('*', 2)
		c.addBulk(v[:1])
		c.addBulk(v[1:2])
	}
}
