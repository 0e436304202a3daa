package pool

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"math/big"
	"net"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/seed54442f1a/rdmapool/internal/testutil"
)

// tlsEchoServer serves TLS echo on 127.0.0.1 with a certificate for
// 127.0.0.1 that the returned config trusts.
func tlsEchoServer(t *testing.T) (*testutil.Server, *tls.Config) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1)},
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	srv := &tls.Config{Certificates: []tls.Certificate{{Certificate: [][]byte{der}, PrivateKey: key}}}
	s := testutil.NewServer(t, func(c net.Conn) {
		tc := tls.Server(c, srv)
		defer tc.Close()
		io.Copy(tc, tc)
	})
	roots := x509.NewCertPool()
	roots.AddCert(cert)
	return s, &tls.Config{RootCAs: roots} // no ServerName: DialValkey takes the host
}

// TestDialValkeyTLS: a TLS connection from DialValkey is the pool's:
// counted, bounded by MaxOpen, dialled with the given net.Dialer, and under
// Auto reported as a fallback once it exists, without making the pool's
// other dials skip RDMA.
func TestDialValkeyTLS(t *testing.T) {
	s, cfg := tlsEchoServer(t)
	var hooked []FallbackReason
	d := &Dialer{Options: Options{MaxOpen: 1, OnFallback: func(fe *FallbackError) { hooked = append(hooked, fe.Reason) }}}
	defer d.Close()
	var controls atomic.Int32
	nd := &net.Dialer{Control: func(string, string, syscall.RawConn) error {
		controls.Add(1)
		return nil
	}}
	ctx := context.Background()
	c, err := d.DialValkey(ctx, s.Addr(), nd, cfg)
	if err != nil {
		t.Fatal(err)
	}
	ping(t, c)
	if controls.Load() != 1 {
		t.Errorf("the net.Dialer's Control ran %d times, want 1", controls.Load())
	}
	p, err := d.Pool(s.Addr())
	if err != nil {
		t.Fatal(err)
	}
	st := p.Stats()
	if st.Open != 1 || st.InUse != 1 || st.Dials[TCP] != 1 || st.Fallbacks[ReasonTLS] != 1 || len(hooked) != 1 {
		t.Errorf("stats %+v, hook %v; want one TLS connection open, dialled and reported", st, hooked)
	}
	p.mu.Lock()
	tcpUntil := p.tcpUntil
	p.mu.Unlock()
	if !tcpUntil.IsZero() {
		t.Errorf("the TLS fallback made the pool use TCP until %v", tcpUntil)
	}
	short, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	if c2, err := d.DialValkey(short, s.Addr(), nil, cfg); !errors.Is(err, context.DeadlineExceeded) {
		if c2 != nil {
			c2.Close()
		}
		t.Errorf("a second TLS dial at MaxOpen 1: %v, want it to wait until its deadline", err)
	}
	c.Close()
	if st := p.Stats(); st.Open != 0 || st.Idle != 0 {
		t.Errorf("after the client closed it: %+v, want it closed", st)
	}

	// A TLS dial that fails is a dial error, and no fallback.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := l.Addr().String()
	l.Close()
	if c, err := d.DialValkey(ctx, dead, nil, cfg); err == nil {
		c.Close()
		t.Fatal("a TLS dial with nothing listening succeeded")
	}
	if st := d.Stats()[dead]; st.DialErrors != 1 || len(st.Fallbacks) != 0 || st.Open != 0 {
		t.Errorf("after a failed TLS dial: %+v", st)
	}
}

// TestDialValkeyTLSTakesIdlePlace: at MaxOpen, a TLS dial closes an idle
// connection (which it could not use) and takes its place.
func TestDialValkeyTLSTakesIdlePlace(t *testing.T) {
	s, cfg := tlsEchoServer(t)
	d := &Dialer{Options: Options{Policy: TCPOnly, MaxOpen: 1}}
	defer d.Close()
	p, err := d.Pool(s.Addr())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	plain, err := p.Get(ctx)
	if err != nil {
		t.Fatal(err)
	}
	plain.Close() // idle
	c, err := d.DialValkey(ctx, s.Addr(), nil, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ping(t, c)
	if st := p.Stats(); st.Open != 1 || st.Idle != 0 || st.Evicted != 1 || len(st.Fallbacks) != 0 {
		t.Errorf("stats %+v, want the TLS connection alone open, in the idle one's place, and no fallback under TCPOnly", st)
	}
}
