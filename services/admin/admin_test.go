package admin

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/syndicate-go/syndicate/dataspace"
	"github.com/syndicate-go/syndicate/dataspace/pattern"
	"github.com/syndicate-go/syndicate/dataspace/relay"
	"github.com/syndicate-go/syndicate/dataspace/relay/client"
	"github.com/syndicate-go/syndicate/preserves"
	"github.com/syndicate-go/syndicate/preserves/testutil"
	"github.com/syndicate-go/syndicate/services"
)

var waitFor = testutil.WaitFor

// host is a minimal server: a config dataspace whose <probe X> assertions
// are mirrored into seen, and an admin endpoint.
type host struct {
	sys *dataspace.System
	fr  dataspace.FacetRef
	env services.Env

	mu   sync.Mutex
	seen map[string]bool
}

func newHost(tb testing.TB) *host {
	h := &host{sys: dataspace.NewSystem(dataspace.Options{}), seen: map[string]bool{}}
	tb.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		require.NoError(tb, h.sys.Shutdown(ctx))
	})
	booted := make(chan struct{})
	h.sys.Spawn("host", func(t *dataspace.Turn) error {
		cfg := t.Create(dataspace.NewDataspace())
		h.env = services.Env{Config: cfg}
		h.fr = t.FacetRef()
		t.PreventInertCheck()
		t.During(cfg, pattern.Rec(preserves.Symbol("probe"), pattern.Bind{Pattern: pattern.Discard{}}), func(t *dataspace.Turn, c []preserves.Value) error {
			k := preserves.FormatText(c[0])
			h.mu.Lock()
			h.seen[k] = true
			h.mu.Unlock()
			t.OnStop(func(*dataspace.Turn) error {
				h.mu.Lock()
				delete(h.seen, k)
				h.mu.Unlock()
				return nil
			})
			return nil
		})
		close(booted)
		return nil
	})
	<-booted
	return h
}

func (h *host) has(k string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.seen[k]
}

// listen runs ListenWith in a fresh child facet and returns that facet's id.
func (h *host) listen(tb testing.TB, path string, opts Options) (dataspace.FacetID, error) {
	var id dataspace.FacetID
	var lerr error
	done := make(chan struct{})
	h.fr.Activate(func(t *dataspace.Turn) error {
		defer close(done)
		id, lerr = t.Facet(func(t *dataspace.Turn) error {
			t.PreventInertCheck()
			return ListenWith(t, h.env, path, opts)
		})
		return nil
	})
	<-done
	return id, lerr
}

func TestAdminServesConfigDataspace(t *testing.T) {
	h := newHost(t)
	path := filepath.Join(t.TempDir(), "run", "syndicate", "admin.sock")
	_, err := h.listen(t, path, Options{})
	require.NoError(t, err)

	fi, err := os.Lstat(path)
	require.NoError(t, err)
	require.NotZero(t, fi.Mode()&os.ModeSocket)
	require.Equal(t, os.FileMode(0o600), fi.Mode().Perm(), "socket is private")
	di, err := os.Stat(filepath.Dir(path))
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o700), di.Mode().Perm(), "created directory is private")

	base := h.sys.Stats(0).Actors
	csys := dataspace.NewSystem(dataspace.Options{})
	defer csys.Shutdown(context.Background())
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, cfg, err := client.Dial(ctx, csys, path)
	require.NoError(t, err)

	var hd dataspace.Handle
	driver := make(chan dataspace.FacetRef, 1)
	csys.Spawn("driver", func(t *dataspace.Turn) error {
		t.PreventInertCheck()
		hd = t.Assert(cfg, preserves.Rec("probe", preserves.String("hello")))
		driver <- t.FacetRef()
		return nil
	})
	fr := <-driver
	waitFor(t, "assertion through the admin socket", func() bool { return h.has(`"hello"`) })
	fr.Activate(func(t *dataspace.Turn) error { t.Retract(hd); return nil })
	waitFor(t, "retraction through the admin socket", func() bool { return !h.has(`"hello"`) })
	// A client that ends while it still asserts something: its
	// assertion goes, and so does the connection's actor (it lived on
	// until shutdown, one per `syndicate` command ever run).
	fr.Activate(func(t *dataspace.Turn) error {
		t.Assert(cfg, preserves.Rec("probe", preserves.String("held")))
		return nil
	})
	waitFor(t, "a held assertion", func() bool { return h.has(`"held"`) })
	conn.Close()
	<-conn.Done()
	waitFor(t, "the held assertion to go with the client", func() bool { return !h.has(`"held"`) })
	waitFor(t, "the connection's actor to end", func() bool { return h.sys.Stats(0).Actors == base })
}

func TestAdminRefusesForeignUID(t *testing.T) {
	h := newHost(t)
	path := filepath.Join(t.TempDir(), "admin.sock")
	other := os.Getuid() + 1
	_, err := h.listen(t, path, Options{UID: &other})
	require.NoError(t, err)

	csys := dataspace.NewSystem(dataspace.Options{})
	defer csys.Shutdown(context.Background())
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, _, err := client.Dial(ctx, csys, path)
	require.NoError(t, err)
	select {
	case <-conn.Done():
	case <-ctx.Done():
		t.Fatal("refused connection was not closed")
	}
	var pe *relay.PeerError
	require.ErrorAs(t, conn.Err(), &pe)
	require.Equal(t, ErrPermission.Error(), pe.Message)
}

func TestAdminStaleAndLiveSockets(t *testing.T) {
	h := newHost(t)
	dir := t.TempDir()
	path := filepath.Join(dir, "admin.sock")

	// A stale socket: bound, then its listener closed without unlinking.
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	require.NoError(t, err)
	ln.SetUnlinkOnClose(false)
	ln.Close()
	_, err = os.Lstat(path)
	require.NoError(t, err, "stale socket file left behind")

	id, err := h.listen(t, path, Options{})
	require.NoError(t, err, "stale socket is replaced")

	_, err = h.listen(t, path, Options{})
	require.ErrorIs(t, err, ErrInUse, "a live socket is never taken over")

	// A regular file is not a socket: refused too.
	plain := filepath.Join(dir, "plain")
	require.NoError(t, os.WriteFile(plain, nil, 0o600))
	_, err = h.listen(t, plain, Options{})
	require.ErrorIs(t, err, ErrInUse)

	// Stopping the endpoint removes its socket file.
	h.fr.Activate(func(t *dataspace.Turn) error { t.StopFacet(id); return nil })
	waitFor(t, "socket removal", func() bool {
		_, err := os.Lstat(path)
		return errors.Is(err, os.ErrNotExist)
	})
}

func TestDefaultPath(t *testing.T) {
	t.Setenv("XDG_RUNTIME_DIR", "/run/user/4242")
	require.Equal(t, "/run/user/4242/syndicate/admin.sock", DefaultPath())
	t.Setenv("XDG_RUNTIME_DIR", "")
	p := DefaultPath()
	if os.Geteuid() == 0 {
		require.Equal(t, "/run/syndicate/admin.sock", p)
	} else {
		require.Equal(t, filepath.Join(os.TempDir(), "syndicate-"+itoa(os.Getuid()), "admin.sock"), p)
	}
}

func itoa(i int) string { return preserves.Int(i).String() }
