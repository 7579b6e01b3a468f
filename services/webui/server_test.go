package webui

import (
	"bufio"
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/syndicate-go/syndicate/dataspace"
	"github.com/syndicate-go/syndicate/dataspace/pattern"
	"github.com/syndicate-go/syndicate/preserves"
	"github.com/syndicate-go/syndicate/preserves/testutil"
)

func TestListenRefusesOtherHosts(t *testing.T) {
	t.Parallel()
	for _, addr := range []string{"0.0.0.0:0", "[::]:0", ":0", "example.com:0"} {
		_, err := Listen(nil, nil, Options{Listen: addr})
		require.ErrorIs(t, err, ErrNotLoopback, addr)
	}
}

// TestGuard checks the page's doors: the token once, then its cookie;
// the page's own Host; the page's own Origin for a change.
func TestGuard(t *testing.T) {
	t.Parallel()
	s, err := Listen(nil, nil, Options{Token: "sesame"})
	require.NoError(t, err)
	defer s.ln.Close()
	h := s.Handler()
	host := s.Addr().String()
	do := func(method, target string, hdr map[string]string) *http.Response {
		r := httptest.NewRequest(method, "http://"+host+target, nil)
		for k, v := range hdr {
			r.Header.Set(k, v)
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return w.Result()
	}
	require.Equal(t, http.StatusForbidden, do("GET", "/", nil).StatusCode, "no token")
	require.Equal(t, http.StatusForbidden, do("GET", "/?token=sesamf", nil).StatusCode, "a wrong token")
	resp := do("GET", "/?token=sesame", nil)
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	require.Equal(t, "/", resp.Header.Get("Location"), "the token leaves the address bar")
	cookies := resp.Cookies()
	require.Len(t, cookies, 1)
	c := cookies[0]
	require.Equal(t, "sesame", c.Value)
	require.True(t, c.HttpOnly)
	require.Equal(t, http.SameSiteStrictMode, c.SameSite)
	cookie := c.Name + "=" + c.Value

	resp = do("GET", "/", map[string]string{"Cookie": cookie})
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Contains(t, resp.Header.Get("Content-Security-Policy"), "script-src 'self'")
	require.Equal(t, http.StatusForbidden, do("GET", "/", map[string]string{"Cookie": c.Name + "=sesamf"}).StatusCode, "a wrong cookie")

	r := httptest.NewRequest("GET", "http://"+host+"/", nil)
	r.Host = "rebound.example:" + strings.Split(host, ":")[1]
	r.Header.Set("Cookie", cookie)
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	require.Equal(t, http.StatusForbidden, w.Code, "another Host (DNS rebinding)")

	for _, origin := range []string{"", "http://evil.example", "null"} {
		hdr := map[string]string{"Cookie": cookie, "Content-Type": "application/x-www-form-urlencoded"}
		if origin != "" {
			hdr["Origin"] = origin
		}
		require.Equal(t, http.StatusForbidden, do("POST", "/api/restart", hdr).StatusCode, "a change from Origin %q", origin)
	}
}

func TestFeedCoalescesAndBounds(t *testing.T) {
	t.Parallel()
	f := newFeed()
	f.set("services", 1)
	f.set("services", 2)
	got := f.take()
	require.Len(t, got, 1, "a state replaces the pending one")
	require.Equal(t, "2", string(got[0].data))
	for i := range maxEvents {
		require.True(t, f.push("change", i))
	}
	require.False(t, f.push("change", "one too many"), "the queue is bounded")
	require.False(t, f.push("change", "and stays overrun"))
	f.resync("matches", []int{})
	got = f.take()
	require.Len(t, got, 1, "the overrun queue is replaced by the state")
	require.Equal(t, "matches", got[0].name)
	require.True(t, f.push("change", "after"))
}

func TestClip(t *testing.T) {
	t.Parallel()
	s := strings.Repeat("é", maxTextLen) // 2 bytes each
	c := clip(s)
	require.LessOrEqual(t, len(c), maxTextLen+len("…"))
	require.True(t, strings.HasSuffix(c, "…"))
	require.NotContains(t, c, "\uFFFD")
	require.Equal(t, "short", clip("short"))
}

// bridge is an in-process server: a dataspace with the page bridged to it.
type bridge struct {
	sys  *dataspace.System
	fr   dataspace.FacetRef
	ds   *dataspace.Ref
	srv  *Server
	base string
	cli  *http.Client

	mu   sync.Mutex
	msgs []string
}

func newBridge(t *testing.T) *bridge {
	b := &bridge{sys: dataspace.NewSystem(dataspace.Options{})}
	booted := make(chan struct{})
	b.sys.Spawn("server", func(t *dataspace.Turn) error {
		t.PreventInertCheck()
		b.ds = t.Create(dataspace.NewDataspace())
		b.fr = t.FacetRef()
		t.OnMessage(b.ds, pattern.Capture(), func(_ *dataspace.Turn, c []preserves.Value) error {
			b.mu.Lock()
			b.msgs = append(b.msgs, preserves.FormatText(c[0]))
			b.mu.Unlock()
			return nil
		})
		close(booted)
		return nil
	})
	<-booted
	eng := Engines{Pattern: func(text string) (pattern.Pattern, error) {
		v, err := preserves.ParseText(text)
		if err != nil {
			return nil, err
		}
		return pattern.Lift(v)
	}}
	srv, err := Listen(b.sys, b.ds, Options{Token: "sesame", Engines: eng})
	require.NoError(t, err)
	b.srv = srv
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan struct{})
	go func() { _ = srv.Serve(ctx); close(served) }()
	t.Cleanup(func() {
		cancel()
		<-served
		sctx, c := context.WithTimeout(context.Background(), 10*time.Second)
		defer c()
		require.NoError(t, b.sys.Shutdown(sctx))
	})
	b.base = "http://" + srv.Addr().String()
	jar := &cookieJar{}
	b.cli = &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := b.cli.Get(b.base + "/?token=sesame")
	require.NoError(t, err)
	resp.Body.Close()
	return b
}

// cookieJar keeps the page's one cookie.
type cookieJar struct {
	mu sync.Mutex
	c  []*http.Cookie
}

func (j *cookieJar) SetCookies(_ *url.URL, cs []*http.Cookie) {
	j.mu.Lock()
	j.c = append(j.c, cs...)
	j.mu.Unlock()
}

func (j *cookieJar) Cookies(*url.URL) []*http.Cookie {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.c
}

func (b *bridge) assert(text string) (retract func()) {
	v, _ := preserves.ParseText(text)
	hc := make(chan dataspace.Handle, 1)
	b.fr.Activate(func(t *dataspace.Turn) error { hc <- t.Assert(b.ds, v); return nil })
	h := <-hc
	return func() { b.fr.Activate(func(t *dataspace.Turn) error { t.Retract(h); return nil }) }
}

// events reads a stream's events ("name data" lines) until the test ends.
func (b *bridge) events(t *testing.T, path string) func() []string {
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, "GET", b.base+path, nil)
	resp, err := b.cli.Do(req)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	var mu sync.Mutex
	var got []string
	done := make(chan struct{})
	go func() {
		defer close(done)
		sc := bufio.NewScanner(resp.Body)
		name := ""
		for sc.Scan() {
			line := sc.Text()
			switch {
			case strings.HasPrefix(line, "event: "):
				name = strings.TrimPrefix(line, "event: ")
			case strings.HasPrefix(line, "data: "):
				mu.Lock()
				got = append(got, name+" "+strings.TrimPrefix(line, "data: "))
				mu.Unlock()
			}
		}
	}()
	t.Cleanup(func() { cancel(); resp.Body.Close(); <-done })
	return func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), got...)
	}
}

func contains(events []string, s string) bool {
	for _, e := range events {
		if strings.Contains(e, s) {
			return true
		}
	}
	return false
}

// TestObserveStream follows the dataspace browser's stream: the matches
// once synced, then each assertion appearing and going, and messages.
func TestObserveStream(t *testing.T) {
	t.Parallel()
	b := newBridge(t)
	retract := b.assert(`<probe "before">`)
	got := b.events(t, "/events/observe?pattern="+url.QueryEscape("<probe>"))
	testutil.WaitFor(t, "the matches", func() bool {
		return contains(got(), `matches {"assertions":[{"id":1,"text":"\u003cprobe \"before\"\u003e"}],"total":1}`)
	})
	retract()
	testutil.WaitFor(t, "the retraction", func() bool { return contains(got(), `change {"op":"-","id":1}`) })
	b.assert(`<probe "<b>after</b>">`)
	testutil.WaitFor(t, "the assertion", func() bool {
		return contains(got(), `change {"op":"+","id":2,"text":"\u003cprobe \"\u003cb\u003eafter\u003c/b\u003e\"\u003e"}`)
	})
	b.fr.Activate(func(t *dataspace.Turn) error {
		t.Message(b.ds, preserves.NewRecord(preserves.Symbol("probe"), preserves.Int(7)))
		return nil
	})
	testutil.WaitFor(t, "the message", func() bool { return contains(got(), `change {"op":"!","text":"\u003cprobe 7\u003e"}`) })

	resp, err := b.cli.Get(b.base + "/events/observe?pattern=" + url.QueryEscape("<probe"))
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusBadRequest, resp.StatusCode, "a pattern that does not parse")
}

// TestActions sends each operator request only about a service it
// concerns: restart a running one, stop a wanted one, start a stopped,
// required or declared one.
func TestActions(t *testing.T) {
	t.Parallel()
	b := newBridge(t)
	post := func(act, name string) int {
		req, _ := http.NewRequest("POST", b.base+"/api/"+act, strings.NewReader(url.Values{"name": {name}}.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Origin", b.base)
		resp, err := b.cli.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		return resp.StatusCode
	}
	for _, act := range []string{"restart", "stop", "start"} {
		require.Equal(t, http.StatusNotFound, post(act, "<daemon web>"), "%s of a service nothing knows", act)
	}
	b.assert(`<run-service <daemon web>>`)
	require.Equal(t, http.StatusNoContent, post("restart", "<daemon web>"))
	require.Equal(t, http.StatusNoContent, post("stop", "<daemon web>"))
	require.Equal(t, http.StatusNotFound, post("start", "<daemon web>"), "running, not stopped")
	b.assert(`<service-stopped <daemon web> "2026-01-01T00:00:00Z">`)
	require.Equal(t, http.StatusNoContent, post("start", "<daemon web>"))
	b.assert(`<daemon idle {argv: ["true"]}>`)
	require.Equal(t, http.StatusNoContent, post("start", "<daemon idle>"), "declared, nothing requires it")
	require.Equal(t, http.StatusNotFound, post("frobnicate", "<daemon web>"))
	require.Equal(t, http.StatusBadRequest, post("stop", "<daemon"), "a name that does not parse")
	// The answer comes once the message is sent; the observer playing the
	// server sees it in a turn of its own, which a loaded machine may run
	// after the answer arrived.
	want := []string{"<restart-service <daemon web>>", "<stop-service <daemon web>>", "<start-service <daemon web>>", "<start-service <daemon idle>>"}
	msgs := func() []string {
		b.mu.Lock()
		defer b.mu.Unlock()
		return slices.Clone(b.msgs)
	}
	testutil.WaitFor(t, "the four requests", func() bool { return len(msgs()) >= len(want) })
	require.Equal(t, want, msgs(), "one message per accepted request, in order")
}
