package listener

import (
	"net"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/rs/zerolog"

	"github.com/syndicate-go/syndicate/dataspace"
	"github.com/syndicate-go/syndicate/dataspace/dataspacetest"
	"github.com/syndicate-go/syndicate/dataspace/pattern"
	"github.com/syndicate-go/syndicate/dataspace/schemas/internalservices"
	"github.com/syndicate-go/syndicate/preserves"
	"github.com/syndicate-go/syndicate/preserves/testutil"
	"github.com/syndicate-go/syndicate/services"
	"github.com/syndicate-go/syndicate/services/gatekeeper"
)

// newServerOpts is newServer with options and a captured log.
func newServerOpts(tb testing.TB, opts Options) (*server, *testutil.Buffer) {
	logs := &testutil.Buffer{}
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
			s.mu.Unlock()
			t.OnStop(func(*dataspace.Turn) error {
				s.mu.Lock()
				if s.present[k]--; s.present[k] == 0 {
					delete(s.present, k)
				}
				s.mu.Unlock()
				return nil
			})
			return nil
		})
		env := services.Env{Config: s.cfg, Gatekeeper: s.gk, Logger: zerolog.New(logs)}
		if err := BootWith(t, env, opts); err != nil {
			return err
		}
		close(ch)
		return nil
	})
	<-ch
	return s, logs
}

// A dry run binds nothing but reports started and ready, and says what it
// would have bound.
func TestDryRunBindsNothing(t *testing.T) {
	s, logs := newServerOpts(t, Options{DryRun: true})
	port := freePort(t)
	path := filepath.Join(t.TempDir(), "relay.sock")
	tcp := tcpName(s.gk, port)
	unixName := preserves.NewRecord(internalservices.LabelRelayListener, preserves.NewRecord(symUnix, preserves.String(path)), dataspace.Embed(s.gk))
	s.do(func(t *dataspace.Turn) {
		t.Assert(s.cfg, services.RunService(tcp))
		t.Assert(s.cfg, services.RunService(unixName))
	})
	for _, n := range []preserves.Value{tcp, unixName} {
		waitFor(t, "started", func() bool { return s.has(state(n, services.StateStarted)) })
		waitFor(t, "ready", func() bool { return s.has(state(n, services.StateReady)) })
	}
	if _, err := os.Lstat(path); !os.IsNotExist(err) {
		t.Errorf("unix socket file created in a dry run: %v", err)
	}
	// The port is still free: nothing listens on it.
	ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if err != nil {
		t.Errorf("port %d bound in a dry run: %v", port, err)
	} else {
		ln.Close()
	}
	if !logs.Has("dry run: would listen", `"network":"tcp"`, `"addr":"127.0.0.1:`+strconv.Itoa(port)+`"`) ||
		!logs.Has("dry run: would listen", `"network":"unix"`, path) {
		t.Errorf("no dry-run log lines: %q", logs.Lines())
	}
}

// Every malformed relay-listener request is a warning naming it and a
// failed state under the requested name (operator issue: never silently
// ignored).
func TestMalformedRequestsWarnAndFail(t *testing.T) {
	s, logs := newServerOpts(t, Options{})
	gk := dataspace.Embed(s.gk)
	bad := []preserves.Value{
		preserves.NewRecord(internalservices.LabelRelayListener),
		preserves.NewRecord(internalservices.LabelRelayListener, preserves.NewRecord(symTCP, preserves.String("h"), preserves.Int(1))),
		preserves.NewRecord(internalservices.LabelRelayListener, preserves.NewRecord(symTCP, preserves.Int(1), preserves.Int(1)), gk),
		preserves.NewRecord(internalservices.LabelRelayListener, preserves.NewRecord(symTCP, preserves.String("h")), gk),
		preserves.NewRecord(internalservices.LabelRelayListener, preserves.NewRecord(symUnix, preserves.Int(3)), gk),
		preserves.NewRecord(internalservices.LabelRelayListener, preserves.NewRecord(symUnix, preserves.String("/x")), gk, gk),
		preserves.NewRecord(internalservices.LabelRelayListener, preserves.NewRecord(preserves.Symbol("udp"), preserves.String("/x")), gk),
		preserves.NewRecord(internalservices.LabelRelayListener, preserves.String("x"), gk),
		preserves.NewRecord(internalservices.LabelRelayListener, preserves.NewRecord(symUnix, preserves.String("/x")), preserves.String("not a capability")),
	}
	s.do(func(t *dataspace.Turn) {
		for _, v := range bad {
			t.Assert(s.cfg, services.RunService(v))
		}
	})
	for _, v := range bad {
		waitFor(t, "failed "+preserves.FormatText(v), func() bool { return s.has(state(v, services.StateFailed)) })
	}
	if !logs.Has("malformed relay-listener request", `"level":"warn"`, `<relay-listener <tcp 1 1>`) {
		t.Errorf("no warning naming the request: %q", logs.Lines())
	}
}

// A malformed request made by a script names the script position.
func TestMalformedRequestFromScriptNamesPosition(t *testing.T) {
	s, logs := newServerOpts(t, Options{})
	plain := preserves.NewRecord(internalservices.LabelRelayListener, preserves.NewRecord(symTCP, preserves.String("h")), dataspace.Embed(s.gk))
	at := preserves.Pos{File: "/etc/syndicate/net.pr", Line: 2, Col: 18}
	s.do(func(t *dataspace.Turn) {
		preserves.Remember(plain, at, nil) // as a script compiled with positions does
		t.Assert(s.cfg, services.RunService(plain))
	})
	waitFor(t, "failed", func() bool { return s.has(state(plain, services.StateFailed)) })
	waitFor(t, "warning", func() bool {
		return logs.Has("malformed relay-listener request", `"pos":"/etc/syndicate/net.pr:2:18"`)
	})
}
