package listener

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/syndicate-go/syndicate/dataspace"
	"github.com/syndicate-go/syndicate/dataspace/caveat"
	"github.com/syndicate-go/syndicate/dataspace/dataspacetest"
	"github.com/syndicate-go/syndicate/dataspace/pattern"
	"github.com/syndicate-go/syndicate/dataspace/relay/client"
	"github.com/syndicate-go/syndicate/dataspace/schemas/internalservices"
	"github.com/syndicate-go/syndicate/dataspace/transport"
	"github.com/syndicate-go/syndicate/preserves"
	"github.com/syndicate-go/syndicate/preserves/testutil"
	"github.com/syndicate-go/syndicate/services"
	"github.com/syndicate-go/syndicate/services/gatekeeper"
)

var waitFor = testutil.WaitFor

// server is a minimal server: config dataspace, primordial gatekeeper over
// it, the listener service, and a mirror of the config dataspace.
type server struct {
	sys *dataspace.System
	fr  dataspace.FacetRef
	cfg *dataspace.Ref
	gk  *dataspace.Ref

	mu      sync.Mutex
	present map[string]int
	history []string
}

func newServer(tb testing.TB) *server { return newServerWith(tb, Options{}) }

func newServerWith(tb testing.TB, opts Options) *server {
	s := &server{sys: dataspacetest.NewSystem(tb, dataspace.Options{}), present: make(map[string]int)}
	ch := make(chan struct{})
	s.sys.Spawn("server", func(t *dataspace.Turn) error {
		t.PreventInertCheck()
		s.fr = t.FacetRef()
		s.cfg = t.Create(dataspace.NewDataspace())
		s.gk = gatekeeper.New(t, s.cfg, zerolog.Nop())
		t.During(s.cfg, pattern.Capture(), func(t *dataspace.Turn, caps []preserves.Value) error {
			k := preserves.FormatText(caps[0])
			s.mu.Lock()
			s.present[k]++
			s.history = append(s.history, "+"+k)
			s.mu.Unlock()
			t.OnStop(func(*dataspace.Turn) error {
				s.mu.Lock()
				if s.present[k]--; s.present[k] == 0 {
					delete(s.present, k)
				}
				s.history = append(s.history, "-"+k)
				s.mu.Unlock()
				return nil
			})
			return nil
		})
		env := services.Env{Config: s.cfg, Gatekeeper: s.gk, Logger: zerolog.Nop()}
		opts.Supervise = services.SuperviseOptions{Delay: 20 * time.Millisecond, Backoff: 200 * time.Millisecond}
		if err := BootWith(t, env, opts); err != nil {
			return err
		}
		close(ch)
		return nil
	})
	<-ch
	return s
}

func (s *server) do(fn func(t *dataspace.Turn)) {
	s.fr.Activate(func(t *dataspace.Turn) error { fn(t); return nil })
}

func (s *server) has(v preserves.Value) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.present[preserves.FormatText(v)] > 0
}

func (s *server) hist() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.history...)
}

func freePort(tb testing.TB) int {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

func tcpName(gk *dataspace.Ref, port int) preserves.Value {
	return preserves.NewRecord(internalservices.LabelRelayListener, preserves.NewRecord(symTCP, preserves.String("127.0.0.1"), preserves.Int(port)), dataspace.Embed(gk))
}

func state(name preserves.Value, st preserves.Symbol) preserves.Value {
	return services.ServiceState(name, st)
}

// Services scenarios 2, 55, 56, 57 and 60 over a TCP listener.
func TestScenarios2And55To57And60OverTCP(t *testing.T) {
	s := newServer(t)
	port := freePort(t)
	name := tcpName(s.gk, port)
	s.do(func(t *dataspace.Turn) { t.Assert(s.cfg, services.RunService(name)) })
	waitFor(t, "ready", func() bool {
		return s.has(state(name, services.StateReady)) && s.has(state(name, services.StateStarted))
	})

	// A bound dataspace behind sturdy ref "x" with the empty key, and a
	// bind observer (scenario 56).
	target := &sink{}
	bound := &sink{}
	s.do(func(t *dataspace.Turn) {
		t.Assert(s.cfg, preserves.Rec("bind",
			preserves.Rec("ref", preserves.NewDictionary(
				preserves.DictEntry{Key: preserves.Symbol("oid"), Value: preserves.String("x")},
				preserves.DictEntry{Key: preserves.Symbol("key"), Value: preserves.ByteString("")})),
			dataspace.Embed(t.Create(target)), dataspace.Embed(t.Create(bound))))
	})
	root := caveat.Mint(preserves.String("x"), nil)
	waitFor(t, "bound", func() bool {
		return bound.hasAssert(preserves.FormatText(preserves.Rec("bound", root.ToValue())))
	})

	// Binary client (scenario 2, 55).
	cli := dataspace.NewSystem(dataspace.Options{})
	defer cli.Shutdown(context.Background())
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	conn, gk, err := client.Dial(ctx, cli, preserves.Rec("tcp", preserves.String("127.0.0.1"), preserves.Int(port)))
	if err != nil {
		t.Fatal(err)
	}
	ds, release, err := client.Resolve(ctx, cli, gk, root.ToValue())
	if err != nil {
		t.Fatal(err)
	}
	a := cli.Spawn("use", func(t *dataspace.Turn) error { t.Message(ds, preserves.Symbol("over-the-wire")); return nil })
	<-a.Done()
	waitFor(t, "message at target", func() bool { return target.hasMsg("over-the-wire") })
	release()
	wrong := caveat.Mint(preserves.String("x"), []byte("other key"))
	if _, _, err := client.Resolve(ctx, cli, gk, wrong.ToValue()); !isResolveErr(err, "sturdyref-failed-validation") {
		t.Fatalf("wrong sig: %v", err)
	}
	// Scenario 57.
	if _, _, err := client.Resolve(ctx, cli, gk, preserves.Rec("frob", preserves.Int(1))); !isResolveErr(err, "unsupported") {
		t.Fatalf("frob: %v", err)
	}
	if _, _, err := client.Resolve(ctx, cli, gk, preserves.Rec("ref", preserves.Int(3))); !isResolveErr(err, "invalid") {
		t.Fatalf("<ref 3>: %v", err)
	}
	conn.Close()

	// Text client (scenario 60): first byte '['.
	tc, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", port))
	if err != nil {
		t.Fatal(err)
	}
	defer tc.Close()
	io.WriteString(tc, "[[0 <A <resolve <frob 1> #:[0 1]> 0>]]\n")
	line, err := bufio.NewReader(tc).ReadString('\n')
	if err != nil || line != "[[1 <A <error unsupported> 0>]]\n" {
		t.Fatalf("text reply %q %v", line, err)
	}

	// Plain HTTP without an httpd gets 503 with an empty body (the
	// connection stays open: keep-alive).
	hc, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", port))
	if err != nil {
		t.Fatal(err)
	}
	defer hc.Close()
	io.WriteString(hc, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
	resp, err := http.ReadResponse(bufio.NewReader(hc), nil)
	if err != nil || resp.StatusCode != http.StatusServiceUnavailable || resp.ContentLength != 0 {
		t.Fatalf("http reply %v %v", resp, err)
	}

	// restart-service: complete, then started and ready again; the text
	// connection survives (Q2).
	s.do(func(t *dataspace.Turn) { t.Message(s.cfg, services.RestartService(name)) })
	waitFor(t, "complete", func() bool {
		for _, h := range s.hist() {
			if h == "+"+preserves.FormatText(state(name, services.StateComplete)) {
				return true
			}
		}
		return false
	})
	waitFor(t, "ready again", func() bool { return s.has(state(name, services.StateReady)) })
	io.WriteString(tc, "[[0 <A <resolve <frob 2> #:[0 2]> 1>]]\n")
	tc.SetReadDeadline(time.Now().Add(5 * time.Second))
	rest := make([]byte, 64)
	n, err := tc.Read(rest)
	if err != nil || !strings.Contains(string(rest[:n]), "unsupported") {
		t.Fatalf("connection did not survive the listener restart: %q %v", rest[:n], err)
	}
}

func isResolveErr(err error, sym string) bool {
	var re *client.ResolveError
	return errors.As(err, &re) && preserves.Equal(re.Detail, preserves.Symbol(sym))
}

// sink records what reaches an entity.
type sink struct {
	dataspace.BaseEntity
	mu  sync.Mutex
	log []string
}

func (k *sink) Assert(_ *dataspace.Turn, v preserves.Value, _ dataspace.Handle) error {
	k.mu.Lock()
	k.log = append(k.log, "+"+preserves.FormatText(v))
	k.mu.Unlock()
	return nil
}

func (k *sink) Message(_ *dataspace.Turn, v preserves.Value) error {
	k.mu.Lock()
	k.log = append(k.log, "!"+preserves.FormatText(v))
	k.mu.Unlock()
	return nil
}

func (k *sink) hasAssert(s string) bool { return k.seen("+" + s) }
func (k *sink) hasMsg(s string) bool    { return k.seen("!" + s) }
func (k *sink) seen(s string) bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	for _, l := range k.log {
		if l == s {
			return true
		}
	}
	return false
}

// Bind failure: failed, then retried; once the port is free, ready.
func TestTCPListenerBindFailureRetries(t *testing.T) {
	s := newServer(t)
	blocker, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := blocker.Addr().(*net.TCPAddr).Port
	name := tcpName(s.gk, port)
	var h dataspace.Handle
	s.do(func(t *dataspace.Turn) { h = t.Assert(s.cfg, services.RunService(name)) })
	waitFor(t, "failed", func() bool { return s.has(state(name, services.StateFailed)) })
	blocker.Close()
	waitFor(t, "ready after the port frees up", func() bool { return s.has(state(name, services.StateReady)) })
	s.do(func(t *dataspace.Turn) { t.Retract(h) })
	waitFor(t, "states withdrawn", func() bool {
		return !s.has(state(name, services.StateReady)) && !s.has(state(name, services.StateStarted))
	})
	// The port is released.
	waitFor(t, "port free", func() bool {
		ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
		if err == nil {
			ln.Close()
		}
		return err == nil
	})
}

// The 3-field form reports state under the 2-field name (and mirrors it
// under its own); a bad port fails.
func TestTCPListenerNames(t *testing.T) {
	s := newServer(t)
	port := freePort(t)
	three := preserves.NewRecord(internalservices.LabelRelayListener, preserves.NewRecord(symTCP, preserves.String("127.0.0.1"), preserves.Int(port)), dataspace.Embed(s.gk), dataspace.Embed(s.cfg))
	bad := tcpName(s.gk, 70000)
	malformed := preserves.NewRecord(internalservices.LabelRelayListener, preserves.NewRecord(symTCP, preserves.Int(1), preserves.Int(1)), dataspace.Embed(s.gk))
	s.do(func(t *dataspace.Turn) {
		t.Assert(s.cfg, services.RunService(three))
		t.Assert(s.cfg, services.RunService(bad))
		t.Assert(s.cfg, services.RunService(malformed))
	})
	waitFor(t, "ready under the 2-field name", func() bool { return s.has(state(tcpName(s.gk, port), services.StateReady)) })
	// …and mirrors it under the name asked for, so that status does not
	// show it starting for ever (operator issue).
	waitFor(t, "ready under the 3-field name", func() bool { return s.has(state(three, services.StateReady)) })
	waitFor(t, "bad port failed", func() bool { return s.has(state(bad, services.StateFailed)) })
	waitFor(t, "malformed failed", func() bool { return s.has(state(malformed, services.StateFailed)) })
}

// Services scenario 61.
func TestScenario61UnixListener(t *testing.T) {
	s := newServer(t)
	dir := t.TempDir()
	path := filepath.Join(dir, "relay.sock")
	// A stale socket file: bound, then its listener gone without unlinking.
	stale, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	stale.(*net.UnixListener).SetUnlinkOnClose(false)
	stale.Close()
	name := preserves.NewRecord(internalservices.LabelRelayListener, preserves.NewRecord(symUnix, preserves.String(path)), dataspace.Embed(s.gk))
	s.do(func(t *dataspace.Turn) { t.Assert(s.cfg, services.RunService(name)) })
	waitFor(t, "ready", func() bool { return s.has(state(name, services.StateReady)) })
	fi, err := os.Stat(path)
	if err != nil || fi.Mode()&os.ModeSocket == 0 || fi.Mode().Perm() != 0o600 {
		t.Fatalf("socket file %v %v", fi.Mode(), err)
	}
	// A client works over it, text syntax included.
	uc, err := net.Dial("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	io.WriteString(uc, "[[0 <A <resolve <frob 1> #:[0 1]> 0>]]\n")
	line, err := bufio.NewReader(uc).ReadString('\n')
	if err != nil || line != "[[1 <A <error unsupported> 0>]]\n" {
		t.Fatalf("reply %q %v", line, err)
	}
	uc.Close()
	// A second server on the same path refuses to start: live owner.
	s2 := newServer(t)
	name2 := preserves.NewRecord(internalservices.LabelRelayListener, preserves.NewRecord(symUnix, preserves.String(path)), dataspace.Embed(s2.gk))
	s2.do(func(t *dataspace.Turn) { t.Assert(s2.cfg, services.RunService(name2)) })
	waitFor(t, "second listener failed", func() bool { return s2.has(state(name2, services.StateFailed)) })
	if s2.has(state(name2, services.StateReady)) {
		t.Fatal("second listener took over a live socket")
	}
	// The first still serves.
	if c, err := net.Dial("unix", path); err != nil {
		t.Fatalf("first listener gone: %v", err)
	} else {
		c.Close()
	}
	// A regular file at the path is never clobbered.
	reg := filepath.Join(dir, "file")
	os.WriteFile(reg, []byte("keep"), 0o644)
	if _, _, err := transport.ListenUnix(reg); !errors.Is(err, ErrAddrInUse) {
		t.Fatalf("regular file: %v", err)
	}
}

// Connections from untrusted peers are limited (issue 12): one that sends
// nothing, over TCP (where the first byte is sniffed) or a Unix socket, is
// closed after FirstEventTimeout; one that piles up unresolvable resolves
// is closed past MaxInitialAssertions.
func TestUnauthenticatedPeerLimits(t *testing.T) {
	s := newServerWith(t, Options{FirstEventTimeout: 300 * time.Millisecond, MaxInitialAssertions: 2})
	port := freePort(t)
	tcp := tcpName(s.gk, port)
	sock := filepath.Join(t.TempDir(), "relay.sock")
	unix := preserves.NewRecord(internalservices.LabelRelayListener, preserves.NewRecord(symUnix, preserves.String(sock)), dataspace.Embed(s.gk))
	s.do(func(t *dataspace.Turn) {
		t.Assert(s.cfg, services.RunService(tcp))
		t.Assert(s.cfg, services.RunService(unix))
	})
	waitFor(t, "both listeners", func() bool {
		return s.has(state(tcp, services.StateReady)) && s.has(state(unix, services.StateReady))
	})
	closedByServer := func(c net.Conn) string {
		t.Helper()
		c.SetReadDeadline(time.Now().Add(testutil.WaitPatience))
		b, err := io.ReadAll(c)
		if ne, ok := err.(net.Error); ok && ne.Timeout() {
			t.Fatal("the server kept the connection open")
		}
		return string(b)
	}
	resolves := "[[0 <A <resolve <ref {oid: 1 sig: #x\"00\"}> #:[0 1]> 0>] [0 <A <resolve <ref {oid: 2 sig: #x\"00\"}> #:[0 2]> 1>] [0 <A <resolve <ref {oid: 3 sig: #x\"00\"}> #:[0 3]> 2>]]\n"
	for _, addr := range [][2]string{{"tcp", fmt.Sprintf("127.0.0.1:%d", port)}, {"unix", sock}} {
		silent, err := net.Dial(addr[0], addr[1])
		if err != nil {
			t.Fatal(err)
		}
		defer silent.Close()
		closedByServer(silent)

		greedy, err := net.Dial(addr[0], addr[1])
		if err != nil {
			t.Fatal(err)
		}
		defer greedy.Close()
		io.WriteString(greedy, resolves)
		if out := closedByServer(greedy); !strings.Contains(out, "more than 2 assertions") {
			t.Fatalf("%s: got %q", addr[0], out)
		}

	}
}

// All of a listener's connections together hold at most
// MaxListenerAssertions at the gatekeeper: two connections with two
// pending resolves each exceed a quota of three; the second is closed.
func TestListenerAssertionQuota(t *testing.T) {
	s := newServerWith(t, Options{MaxListenerAssertions: 3})
	port := freePort(t)
	name := tcpName(s.gk, port)
	s.do(func(t *dataspace.Turn) { t.Assert(s.cfg, services.RunService(name)) })
	waitFor(t, "the listener", func() bool { return s.has(state(name, services.StateReady)) })
	var pair []net.Conn
	for i := range 2 {
		c, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", port))
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		c.SetReadDeadline(time.Now().Add(testutil.WaitPatience))
		io.WriteString(c, "[[0 <A <resolve <ref {oid: 1 sig: #x\"00\"}> #:[0 1]> 0>] [0 <A <resolve <ref {oid: 2 sig: #x\"00\"}> #:[0 2]> 1>]]\n")
		if i == 0 { // the sync's answer: both resolves are counted
			io.WriteString(c, "[[0 <S #:[0 9]>]]\n")
			if _, err := bufio.NewReader(c).ReadString('\n'); err != nil {
				t.Fatal(err)
			}
		}
		pair = append(pair, c)
	}
	out, err := io.ReadAll(pair[1])
	if err != nil || !strings.Contains(string(out), "from all connections") {
		t.Fatalf("got %q, %v", out, err)
	}
}
