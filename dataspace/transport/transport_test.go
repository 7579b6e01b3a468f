package transport_test

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/syndicate-go/syndicate/dataspace/transport"
	"github.com/syndicate-go/syndicate/preserves"
	"github.com/syndicate-go/syndicate/preserves/schema"
)

func TestParseString(t *testing.T) {
	good := map[string]transport.Address{
		"127.0.0.1:9":             transport.TCPAddr("127.0.0.1", 9),
		"tcp:[::1]:9":             transport.TCPAddr("::1", 9),
		"localhost:0":             transport.TCPAddr("localhost", 0),
		"/a":                      transport.UnixAddr("/a"),
		"unix:b/c":                transport.UnixAddr("b/c"),
		`<tcp "h" 1>`:             transport.TCPAddr("h", 1),
		`<unix "/c">`:             transport.UnixAddr("/c"),
		`<tcp "h" 1 "extension">`: transport.TCPAddr("h", 1),
	}
	for in, want := range good {
		a, err := transport.ParseString(in)
		require.NoError(t, err, in)
		require.Equal(t, want, a, in)
		back, err := transport.ParseString(a.String())
		require.NoError(t, err)
		require.Equal(t, a, back, "ParseString(String()) of %s", in)
		v, err := transport.ParseValue(a.Value())
		require.NoError(t, err)
		require.Equal(t, a, v, "ParseValue(Value()) of %s", in)
	}
	for _, in := range []string{"nohost", "h:70000", "h:x", "unix:", "<tcp h 1>", "<ws \"u\">", "<tcp", ""} {
		_, err := transport.ParseString(in)
		require.ErrorIs(t, err, transport.ErrAddress, in)
	}
}

// TestParseValueErrors: a bad address names the field and its source
// position (the one its record remembers for the atom).
func TestParseValueErrors(t *testing.T) {
	v, err := preserves.ParseTextOptions([]byte("<tcp \"h\"\n  99999>"), preserves.TextOptions{File: "a.pr", Positions: true})
	require.NoError(t, err)
	// Plain, its positions kept aside, as a script asserts it.
	_, err = transport.ParseValue(preserves.StripRemembering(v))
	require.ErrorIs(t, err, transport.ErrAddress)
	var pe *schema.ParseError
	require.True(t, errors.As(err, &pe))
	require.Equal(t, []string{"[1]"}, pe.Path)
	require.Equal(t, "a.pr:2:3", pe.Pos.String())

	for _, src := range []string{`<tcp h 1>`, `<tcp "h">`, `<unix sym>`, `<unix "">`, `<stdio>`, `[tcp "h" 1]`, `<tcp "h" -1>`} {
		v, err := preserves.ParseText(src)
		require.NoError(t, err)
		_, err = transport.ParseValue(v)
		require.ErrorIs(t, err, transport.ErrAddress, src)
		require.ErrorIs(t, err, schema.ErrParse, src)
	}
}

func TestListenDial(t *testing.T) {
	for _, a := range []transport.Address{
		transport.TCPAddr("127.0.0.1", 0),
		transport.UnixAddr(filepath.Join(t.TempDir(), "s")),
	} {
		ln, err := a.Listen(nil)
		require.NoError(t, err, a)
		if a.Network == transport.TCP {
			a.Port = ln.Addr().(*net.TCPAddr).Port
		}
		done := make(chan error, 1)
		go func() {
			c, err := ln.Accept()
			if err == nil {
				_, err = c.Write([]byte("x"))
				c.Close()
			}
			done <- err
		}()
		c, err := a.Dial(context.Background())
		require.NoError(t, err, a)
		buf := make([]byte, 1)
		_, err = c.Read(buf)
		require.NoError(t, err)
		require.Equal(t, "x", string(buf))
		c.Close()
		require.NoError(t, <-done)
		require.NoError(t, ln.Close())
	}
	_, err := transport.Address{}.Dial(context.Background())
	require.ErrorIs(t, err, transport.ErrAddress)
}

func TestListenUnixSafety(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s")
	ln, replaced, err := transport.ListenUnix(path)
	require.NoError(t, err)
	require.False(t, replaced)
	fi, err := os.Stat(path)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), fi.Mode().Perm())

	_, _, err = transport.ListenUnix(path)
	require.ErrorIs(t, err, transport.ErrAddrInUse, "a live socket is never taken over")

	require.NoError(t, ln.Close())
	var stale []string
	ln2, err := transport.UnixAddr(path).Listen(func(p string) { stale = append(stale, p) })
	require.NoError(t, err, "a stale socket is replaced")
	require.Equal(t, []string{path}, stale)
	require.NoError(t, ln2.Close())

	file := filepath.Join(t.TempDir(), "f")
	require.NoError(t, os.WriteFile(file, nil, 0o600))
	_, _, err = transport.ListenUnix(file)
	require.ErrorIs(t, err, transport.ErrAddrInUse, "a file that is not a socket is never replaced")
}

func FuzzParseString(f *testing.F) {
	for _, s := range []string{"127.0.0.1:9", "unix:/x", "/y", "tcp:[::1]:1", "<tcp \"h\" 1>", "<unix \"/p\">", "<tcp \"h\" 99999>", "[1 2]"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		a, err := transport.ParseString(s)
		if err != nil {
			if !errors.Is(err, transport.ErrAddress) {
				t.Fatalf("error %v does not wrap ErrAddress", err)
			}
			return
		}
		back, err := transport.ParseString(a.String())
		if err != nil || back != a {
			t.Fatalf("%q → %+v → %q → %+v, %v", s, a, a.String(), back, err)
		}
	})
}
