package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"

	"github.com/syndicate-go/syndicate/dataspace"
	"github.com/syndicate-go/syndicate/dataspace/caveat"
	"github.com/syndicate-go/syndicate/preserves"
	"github.com/syndicate-go/syndicate/services"
	"github.com/syndicate-go/syndicate/services/admin"
	"github.com/syndicate-go/syndicate/services/gatekeeper"
	"github.com/syndicate-go/syndicate/services/listener"
)

// relayListener starts a Unix relay listener (the `-s PATH` of the server)
// on s with a sturdy ref to the config dataspace bound at its gatekeeper,
// and returns the listener's address and the ref, as --connect and --ref
// take them.
func relayListener(t *testing.T, s *testServer) (addr, ref string) {
	t.Helper()
	sock := filepath.Join(t.TempDir(), "relay.sock")
	key := []byte("secret key")
	done := make(chan error, 1)
	s.fr.Activate(func(t *dataspace.Turn) error {
		gk := gatekeeper.New(t, s.cfg, zerolog.Nop())
		env := services.Env{Config: s.cfg, Gatekeeper: gk}
		if err := listener.Boot(t, env); err != nil {
			done <- err
			return nil
		}
		t.Assert(s.cfg, services.RunService(preserves.Rec("relay-listener", preserves.Rec("unix", preserves.String(sock)), dataspace.Embed(gk))))
		t.Assert(s.cfg, preserves.Rec("bind",
			preserves.Rec("ref", preserves.NewDictionary(
				preserves.DictEntry{Key: preserves.Symbol("oid"), Value: preserves.String("config")},
				preserves.DictEntry{Key: preserves.Symbol("key"), Value: preserves.ByteStringFrom(key)})),
			dataspace.Embed(s.cfg), preserves.Bool(false)))
		done <- nil
		return nil
	})
	require.NoError(t, <-done)
	waitFor(t, "relay listener socket", func() bool { _, err := os.Stat(sock); return err == nil })
	return `<unix "` + sock + `">`, preserves.FormatText(caveat.Mint(preserves.String("config"), key).ToValue())
}

// TestConnectWithSturdyRef reaches the config dataspace through a Unix relay
// listener and a sturdy ref bound at the primordial gatekeeper, instead of
// the admin socket.
func TestConnectWithSturdyRef(t *testing.T) {
	s := newTestServer(t, admin.Options{})
	addr, ref := relayListener(t, s)
	s.assert(t, "<probe 1>")

	code, out, errs := cliRun(t, "--connect", addr, "--ref", ref, "dump", "<probe _>")
	require.Equal(t, 0, code, errs)
	require.Equal(t, "<probe 1>\n", out)

	bad := preserves.FormatText(caveat.Mint(preserves.String("config"), []byte("wrong")).ToValue())
	code, _, errs = cliRun(t, "dump", "--connect", addr, "--ref", bad)
	require.Equal(t, 1, code)
	require.Regexp(t, `^syndicate: the gatekeeper at .* refused the ref: .*\n$`, errs)
}

// Hostile case (issue 12): an admin socket in a directory of another user
// (here our own server's, handed to nobody) is refused before a command
// is sent.
func TestRefusesForeignAdminDirectory(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to give a directory to another user (services/admin tests the check itself)")
	}
	s := newTestServer(t, admin.Options{})
	require.NoError(t, os.Chown(filepath.Dir(s.path), 65534, 65534))
	code, _, errs := cliRun(t, "--admin", s.path, "assert", "<probe 1>")
	require.Equal(t, 1, code)
	require.Regexp(t, `^syndicate: refusing admin socket .*: admin: unsafe socket directory: .* belongs to uid 65534, not 0\n$`, errs)
	require.NoError(t, os.Chown(filepath.Dir(s.path), 0, 0))
	code, out, errs := cliRun(t, "--admin", s.path, "dump", "<probe _>")
	require.Equal(t, 0, code, errs)
	require.Empty(t, out, "the refused assert reached the server")
}
