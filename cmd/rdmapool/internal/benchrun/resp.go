package benchrun

import (
	"errors"
	"fmt"
)

// maxDepth bounds the nesting of aggregate replies the parser follows.
const maxDepth = 16

// errProtocol is a reply that is not RESP.
var errProtocol = errors.New("protocol error in reply")

// skipReply returns the length of the first complete RESP2/RESP3 reply in b,
// or 0 when b holds only part of one, and whether it is an error reply. It
// does not allocate.
func skipReply(b []byte) (n int, isErr bool, err error) {
	n, err = skip(b, 0)
	return n, n > 0 && (b[0] == '-' || b[0] == '!'), err
}

func skip(b []byte, depth int) (int, error) {
	if len(b) == 0 {
		return 0, nil
	}
	line := lineEnd(b)
	if line < 0 {
		return 0, nil
	}
	head := line + 2 // bytes of the type line with its CRLF
	switch b[0] {
	case '+', '-', ':', ',', '#', '_', '(':
		return head, nil
	case '$', '!', '=': // bulk string, bulk error, verbatim string
		l, ok := atoi(b[1:line])
		if !ok {
			return 0, fmt.Errorf("%w: bad length %q", errProtocol, b[:line])
		}
		if l < 0 {
			return head, nil // null
		}
		if len(b) < head+l+2 {
			return 0, nil
		}
		return head + l + 2, nil
	case '*', '%', '~', '>', '|': // array, map, set, push, attribute
		l, ok := atoi(b[1:line])
		if !ok {
			return 0, fmt.Errorf("%w: bad length %q", errProtocol, b[:line])
		}
		if l < 0 {
			return head, nil
		}
		if depth >= maxDepth {
			return 0, fmt.Errorf("%w: nested deeper than %d", errProtocol, maxDepth)
		}
		if b[0] == '%' || b[0] == '|' {
			l *= 2
		}
		off := head
		for range l {
			m, err := skip(b[off:], depth+1)
			if m == 0 || err != nil {
				return 0, err
			}
			off += m
		}
		if b[0] == '|' { // an attribute precedes the reply it describes
			m, err := skip(b[off:], depth+1)
			if m == 0 || err != nil {
				return 0, err
			}
			off += m
		}
		return off, nil
	}
	return 0, fmt.Errorf("%w: unexpected byte %q", errProtocol, b[0])
}

// lineEnd returns the index of the first CRLF in b, or -1.
func lineEnd(b []byte) int {
	for i := 0; i+1 < len(b); i++ {
		if b[i] == '\r' && b[i+1] == '\n' {
			return i
		}
	}
	return -1
}

// atoi parses a RESP length ("-1" included).
func atoi(b []byte) (int, bool) {
	neg := false
	if len(b) > 0 && b[0] == '-' {
		neg, b = true, b[1:]
	}
	if len(b) == 0 || len(b) > 18 {
		return 0, false
	}
	n := 0
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int(c-'0')
	}
	if neg {
		n = -n
	}
	return n, true
}
