package ingest_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/binary"
	"io"
	"math/big"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"allot/services"
)

// mysqlProxy forwards MySQL protocol connections to the project's
// MariaDB. It can rewrite the text of the queries clients send (to make
// the source report what the test needs), and it can offer TLS, which
// that MariaDB does not, by terminating it: it then sees which
// connections spoke TLS, the binary log's among them.
type mysqlProxy struct {
	t       *testing.T
	ln      net.Listener
	target  string
	rewrite func(query string) string // nil: none
	tls     *tls.Config               // nil: TLS is not offered

	mu    sync.Mutex
	conns []*proxiedConn
}

// proxiedConn is what the proxy saw of one client connection.
type proxiedConn struct {
	tls    bool // the client switched to TLS
	binlog bool // the client asked for the binary log
}

const clientSSL = 0x800 // the capability flag CLIENT_SSL

// startMySQLProxy starts a proxy to the project's MariaDB that rewrites
// query text with rewrite (nil: none) and, with offerTLS, offers TLS.
func startMySQLProxy(t *testing.T, rewrite func(string) string, offerTLS bool) *mysqlProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	target := strings.TrimSuffix(strings.SplitN(services.MariaDBDSN, "tcp(", 2)[1], ")/allot")
	p := &mysqlProxy{t: t, ln: ln, target: target, rewrite: rewrite}
	if offerTLS {
		p.tls = selfSignedTLS(t)
	}
	var wg sync.WaitGroup
	var open sync.Map // net.Conn -> true, closed at the end
	t.Cleanup(func() {
		ln.Close()
		open.Range(func(c, _ any) bool { c.(net.Conn).Close(); return true })
		wg.Wait()
	})
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			open.Store(c, true)
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer open.Delete(c)
				p.serve(c, &open)
			}()
		}
	}()
	return p
}

// dsn is the project's MariaDB as the replication user, through the
// proxy, with the DSN parameters params.
func (p *mysqlProxy) dsn(params string) string {
	dsn := "allot_repl:allot_repl@tcp(" + p.ln.Addr().String() + ")/allot"
	if params != "" {
		dsn += "?" + params
	}
	return dsn
}

// seen returns what the proxy saw of the connections so far.
func (p *mysqlProxy) seen() []proxiedConn {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []proxiedConn
	for _, c := range p.conns {
		out = append(out, *c)
	}
	return out
}

func (p *mysqlProxy) serve(c net.Conn, open *sync.Map) {
	defer c.Close()
	up, err := net.DialTimeout("tcp", p.target, 5*time.Second)
	if err != nil {
		return
	}
	open.Store(up, true)
	defer open.Delete(up)
	defer up.Close()
	rec := &proxiedConn{}
	p.mu.Lock()
	p.conns = append(p.conns, rec)
	p.mu.Unlock()

	// The server's greeting, offering TLS if the proxy terminates it: the
	// capability flags' lower two bytes follow the protocol version, the
	// server version, the connection id and 8+1 bytes of auth data.
	seq, hello, err := readMySQLPacket(up)
	if err != nil {
		return
	}
	if p.tls != nil {
		if i := 1 + strings.IndexByte(string(hello[1:]), 0) + 1 + 4 + 9; i > 9 && i+2 <= len(hello) {
			hello[i+1] |= clientSSL >> 8
		}
	}
	if writeMySQLPacket(c, seq, hello) != nil {
		return
	}
	// The client's answer: an SSL request first if it wants TLS, then
	// its handshake response, one sequence number later than the server
	// (which saw no SSL request) expects it: until the end of the
	// authentication, the proxy shifts the sequence numbers.
	var client net.Conn = c
	seq, resp, err := readMySQLPacket(c)
	if err != nil {
		return
	}
	var shift byte
	if p.tls != nil && len(resp) == 32 && binary.LittleEndian.Uint32(resp)&clientSSL != 0 {
		tc := tls.Server(c, p.tls)
		if tc.Handshake() != nil {
			return
		}
		client = tc
		p.mu.Lock()
		rec.tls = true
		p.mu.Unlock()
		if seq, resp, err = readMySQLPacket(client); err != nil {
			return
		}
		shift = 1
	}
	if len(resp) >= 4 {
		binary.LittleEndian.PutUint32(resp, binary.LittleEndian.Uint32(resp)&^clientSSL)
	}
	if writeMySQLPacket(up, seq-shift, resp) != nil {
		return
	}
	var authenticated atomic.Bool
	go func() { // the server's packets
		defer client.Close()
		defer up.Close()
		for {
			seq, payload, err := readMySQLPacket(up)
			if err != nil {
				return
			}
			if !authenticated.Load() {
				if len(payload) > 0 && (payload[0] == 0x00 || payload[0] == 0xff) { // OK or ERR: authentication ends
					authenticated.Store(true)
				}
				seq += shift
			}
			if writeMySQLPacket(client, seq, payload) != nil {
				return
			}
		}
	}()
	for { // the client's packets
		seq, payload, err := readMySQLPacket(client)
		if err != nil {
			return
		}
		if !authenticated.Load() {
			seq -= shift
		} else if len(payload) > 0 {
			switch payload[0] {
			case 0x03, 0x16: // COM_QUERY, COM_STMT_PREPARE
				if p.rewrite != nil {
					payload = append([]byte{payload[0]}, p.rewrite(string(payload[1:]))...)
				}
			case 0x12, 0x1e: // COM_BINLOG_DUMP, COM_BINLOG_DUMP_GTID
				p.mu.Lock()
				rec.binlog = true
				p.mu.Unlock()
			}
		}
		if writeMySQLPacket(up, seq, payload) != nil {
			return
		}
	}
}

func readMySQLPacket(r io.Reader) (seq byte, payload []byte, err error) {
	var h [4]byte
	if _, err = io.ReadFull(r, h[:]); err != nil {
		return 0, nil, err
	}
	payload = make([]byte, int(h[0])|int(h[1])<<8|int(h[2])<<16)
	if _, err = io.ReadFull(r, payload); err != nil {
		return 0, nil, err
	}
	return h[3], payload, nil
}

func writeMySQLPacket(w io.Writer, seq byte, payload []byte) error {
	n := len(payload)
	_, err := w.Write(append([]byte{byte(n), byte(n >> 8), byte(n >> 16), seq}, payload...))
	return err
}

// selfSignedTLS is a server TLS configuration with a certificate of its
// own for 127.0.0.1 (clients connect with tls=skip-verify).
func selfSignedTLS(t *testing.T) *tls.Config {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "127.0.0.1"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour), IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return &tls.Config{Certificates: []tls.Certificate{{Certificate: [][]byte{der}, PrivateKey: key}}}
}
