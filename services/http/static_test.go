package http

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/syndicate-go/syndicate/dataspace"
	"github.com/syndicate-go/syndicate/dataspace/pattern"
	httpschema "github.com/syndicate-go/syndicate/dataspace/schemas/http"
	"github.com/syndicate-go/syndicate/dataspace/schemas/internalservices"
	"github.com/syndicate-go/syndicate/dataspace/schemas/service"
	"github.com/syndicate-go/syndicate/preserves"
	"github.com/syndicate-go/syndicate/services"
)

// staticTree makes root/{secret.txt, www/{a.txt, noext, sub/b.html,
// idx/index.html, <&>.txt}} and a MIME table; it returns root/www and the
// table's path.
func staticTree(tb testing.TB) (string, string) {
	tb.Helper()
	root := tb.TempDir()
	www := filepath.Join(root, "www")
	files := map[string]string{
		"secret.txt":          "SECRET",
		"www/a.txt":           "hello",
		"www/noext":           "raw",
		"www/sub/b.html":      "<p>b</p>",
		"www/idx/index.html":  "<p>index</p>",
		"www/<&>.txt":         "odd",
		"www/.hidden":         "hidden",
		"www/sub/.git/config": "x",
	}
	for name, body := range files {
		p := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			tb.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			tb.Fatal(err)
		}
	}
	mime := filepath.Join(root, "mime.types")
	os.WriteFile(mime, []byte("# a comment line txt\ntext/plain txt\ntext/html html htm\napplication/x-other txt\n\n"), 0o644)
	return www, mime
}

// staticResponse collects the whole answer staticStream gives in chunks
// of the given size, with no window.
func staticResponse(dir string, drop int, path []string, mime map[string]string) []preserves.Value {
	return staticChunks(dir, drop, path, mime, staticChunk)
}

func staticChunks(dir string, drop int, path []string, mime map[string]string, chunk int) []preserves.Value {
	var out []preserves.Value
	staticStream(context.Background(), dir, drop, path, mime, chunk, func(msgs []preserves.Value) error {
		out = append(out, msgs...)
		return nil
	})
	return out
}

// startStatic runs the static file service NAME in h and returns its
// request handler.
func startStatic(tb testing.TB, h *harness, name preserves.Value) *dataspace.Ref {
	tb.Helper()
	got := make(chan *dataspace.Ref, 1)
	h.do(func(t *dataspace.Turn) {
		t.Assert(h.cfg, services.RunService(name))
		t.During(h.cfg, pattern.Rec(service.LabelServiceObject, pattern.MustLift(name), pattern.Capture()), func(t *dataspace.Turn, caps []preserves.Value) error {
			r, _ := dataspace.RefOf(caps[0])
			select {
			case got <- r:
			default:
			}
			return nil
		})
	})
	select {
	case r := <-got:
		return r
	case <-time.After(10 * time.Second):
		tb.Fatal("no service object")
		return nil
	}
}

func render(msgs []preserves.Value) string {
	var parts []string
	for _, m := range msgs {
		parts = append(parts, preserves.FormatText(m))
	}
	return strings.Join(parts, " ")
}

func TestStaticResponse(t *testing.T) {
	www, mimeFile := staticTree(t)
	mime := loadMimeTypes(mimeFile)
	if mime["txt"] != "text/plain" || mime["htm"] != "text/html" || len(mime) != 3 {
		t.Fatalf("mime table %v", mime)
	}
	const (
		notFound = `<status 404 "Not found"> <done #"">`
		refused  = `<status 500 "Internal server error"> <done #"">`
	)
	cases := []struct {
		drop int
		path []string
		want string
	}{
		{0, []string{"a.txt"}, `<status 200 "OK"> <header content-type "text/plain"> <header content-length "5"> <done #"hello">`},
		{1, []string{"static", "a.txt"}, `<status 200 "OK"> <header content-type "text/plain"> <header content-length "5"> <done #"hello">`},
		{0, []string{"noext"}, `<status 200 "OK"> <header content-length "3"> <done #"raw">`},
		{3, []string{"a"}, notFound}, // Q15
		{2, []string{"a"}, notFound}, // Q15
		{0, []string{"missing"}, notFound},
		{0, []string{"sub"}, `<status 301 "Moved permanently"> <header location "/sub/"> <done #"">`},
		{1, []string{"static"}, `<status 301 "Moved permanently"> <header location "/static/"> <done #"">`},
		{0, []string{"idx", ""}, `<status 200 "OK"> <header content-type "text/html"> <header content-length "12"> <done #"<p>index</p>">`},
		{0, []string{"sub", ""}, `<status 200 "OK"> <header content-type "text/html"> <done #"<a href=\"b.html\">b.html</a><br>\n">`},
		{0, []string{"..", "secret.txt"}, refused},
		{1, []string{"x", "sub", "..", "..", "secret.txt"}, refused},
		{0, []string{"a.txt/../../secret.txt"}, refused},
		{0, []string{".hidden"}, refused},
		{0, []string{"sub", ".git", "config"}, refused},
		{0, []string{"sub", "b.html", ""}, notFound},
	}
	for _, c := range cases {
		if got := render(staticResponse(www, c.drop, c.path, mime)); got != c.want {
			t.Errorf("drop %d %q:\n got %s\nwant %s", c.drop, c.path, got, c.want)
		}
	}
	// The root listing: HTML-escaped names, directories suffixed with /.
	got := render(staticResponse(www, 0, []string{""}, mime))
	for _, line := range []string{`<a href=\"&lt;&amp;&gt;.txt\">&lt;&amp;&gt;.txt</a><br>`, `<a href=\"sub/\">sub/</a><br>`, `<a href=\"a.txt\">a.txt</a><br>`} {
		if !strings.Contains(got, line) {
			t.Errorf("listing lacks %s: %s", line, got)
		}
	}
	if strings.Contains(got, "SECRET") {
		t.Fatal("listing leaked the parent")
	}
	if m := loadMimeTypes(filepath.Join(www, "absent")); len(m) != 0 {
		t.Fatalf("missing MIME file gives %v", m)
	}
}

// The service publishes its handler as a service object (and no state);
// the handler answers requests asserted to it.
func TestStaticFilesService(t *testing.T) {
	www, mimeFile := staticTree(t)
	h := newHarness(t, Options{MimeTypes: mimeFile})
	name := StaticFilesName(www, 1)
	bad := preserves.NewRecord(internalservices.LabelHttpStaticFiles, preserves.Int(1), preserves.Int(2))
	negative := StaticFilesName(www, -1)
	h.do(func(t *dataspace.Turn) {
		t.Assert(h.cfg, services.RunService(bad))
		t.Assert(h.cfg, services.RunService(negative))
	})
	handler := startStatic(t, h, name)
	res := &sink{}
	req := parse(t, httpRequest(`"h"`, 80, "get", "static", "a.txt"), nil)
	h.do(func(t *dataspace.Turn) {
		t.Assert(handler, preserves.Rec("request", req, dataspace.Embed(t.Create(res))))
	})
	want := `!<status 200 "OK"> !<header content-type "text/plain"> !<header content-length "5"> !<done #"hello">`
	waitFor(t, want, func() bool { return res.joined() == want })
	waitFor(t, "malformed warnings", func() bool {
		return h.logs.Has("malformed http-static-files request", `"level":"warn"`, `<http-static-files 1 2>`)
	})
	waitFor(t, "negative N warning", func() bool { return h.logs.Has("malformed http-static-files request", " -1>") })
	h.mu.Lock()
	defer h.mu.Unlock()
	running := false
	for k := range h.present {
		if strings.HasPrefix(k, "cfg <service-state") {
			t.Errorf("static files reported a state: %s", k)
		}
		// Silent (§2.5), but the status sees it at work.
		if strings.HasPrefix(k, "cfg <service-info <http-static-files") && strings.Contains(k, "phase: running") {
			running = true
		}
	}
	if !running {
		t.Error("no <service-info … {phase: running}> for the static files service")
	}
}

// A file goes out in pieces of at most the chunk size, the last in done;
// the content-length is the size at open.
func TestStaticChunks(t *testing.T) {
	dir := t.TempDir()
	for name, body := range map[string]string{"ten": "abcdefghij", "eight": "abcdefgh", "empty": ""} {
		os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644)
	}
	cases := map[string]string{
		"ten":   `<status 200 "OK"> <header content-length "10"> <chunk #"abcd"> <chunk #"efgh"> <done #"ij">`,
		"eight": `<status 200 "OK"> <header content-length "8"> <chunk #"abcd"> <done #"efgh">`,
		"empty": `<status 200 "OK"> <header content-length "0"> <done #"">`,
	}
	for name, want := range cases {
		if got := render(staticChunks(dir, 0, []string{name}, nil, 4)); got != want {
			t.Errorf("%s:\n got %s\nwant %s", name, got, want)
		}
	}
}

// Hostile case (issue 12): a FIFO in the served directory used to pin a
// thread per request, forever, and a device would be read without end.
// Anything but a regular file or a directory is refused before a byte is
// read, also through a symbolic link.
func TestStaticRefusesNonRegularFiles(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	os.Symlink(fifo, filepath.Join(dir, "to-fifo"))
	os.Symlink("/dev/zero", filepath.Join(dir, "zero"))
	const forbidden = `<status 403 "Forbidden"> <done #"">`
	for _, name := range []string{"fifo", "to-fifo", "zero"} {
		got := make(chan string, 1)
		go func() { got <- render(staticResponse(dir, 0, []string{name}, nil)) }()
		select {
		case g := <-got:
			if g != forbidden {
				t.Errorf("%s: %s, want %s", name, g, forbidden)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("%s: no answer: the server blocked opening it", name)
		}
	}
	// A FIFO swapped in after the check is caught after the
	// (non-blocking) open.
	head, f, _ := staticOpen(dir, 0, []string{"fifo"}, nil)
	if f != nil || render(head) != forbidden {
		t.Fatalf("staticOpen on a FIFO: %s (file %v)", render(head), f)
	}
}

// holdingSink keeps the debt of every message until the test releases each
// once (as the HTTP listener does until a chunk is written), and checks that
// no more than the window plus the message in hand is ever owed.
type holdingSink struct {
	dataspace.BaseEntity
	mu       sync.Mutex
	releases []func()
	released int
	body     bytes.Buffer
	done     bool
	maxOwed  atomic.Int32
}

func (k *holdingSink) Message(t *dataspace.Turn, v preserves.Value) error {
	a := t.Account()
	a.Borrow(1)
	k.mu.Lock()
	defer k.mu.Unlock()
	k.releases = append(k.releases, func() { a.Repay(1) })
	if owed := int32(len(k.releases) - k.released); owed > k.maxOwed.Load() {
		k.maxOwed.Store(owed)
	}
	if rec, ok := v.(*preserves.Record); ok && len(rec.Fields) == 1 {
		if b, ok := rec.Fields[0].(preserves.ByteString); ok {
			k.body.WriteString(string(b))
		}
		k.done = k.done || rec.Label == httpschema.LabelDone
	}
	return nil
}

// stalled reports whether the stream waits for a release (or is done).
func (k *holdingSink) stalled() bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.done || len(k.releases)-k.released >= staticWindow+1
}

func (k *holdingSink) releaseOne() bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.released == len(k.releases) {
		return false
	}
	k.releases[k.released]()
	k.released++
	return true
}

// Hostile case (issue 12): four concurrent GETs of a 100 MB file used to
// read it whole, once per request (1.27 GB peak). Now the reader waits
// while the receiver holds the debt of what it was sent: a response
// never has more than the window in flight, however slowly it is taken.
func TestStaticStreamsWithinWindow(t *testing.T) {
	www, mimeFile := staticTree(t)
	data := make([]byte, 20*staticChunk+123)
	for i := range data {
		data[i] = byte(i * 7)
	}
	os.WriteFile(filepath.Join(www, "big"), data, 0o644)
	h := newHarness(t, Options{MimeTypes: mimeFile})
	handler := startStatic(t, h, StaticFilesName(www, 0))
	res := &holdingSink{}
	req := parse(t, httpRequest(`"h"`, 80, "get", "big"), nil)
	h.do(func(t *dataspace.Turn) {
		t.Assert(handler, preserves.Rec("request", req, dataspace.Embed(t.Create(res))))
	})
	for {
		waitFor(t, "the stream to stall on the window", res.stalled)
		if !res.releaseOne() {
			break
		}
	}
	for res.releaseOne() {
	}
	if owed := res.maxOwed.Load(); owed > staticWindow+1 {
		t.Fatalf("%d messages owed at once, window %d", owed, staticWindow)
	}
	res.mu.Lock()
	defer res.mu.Unlock()
	if !res.done || !bytes.Equal(res.body.Bytes(), data) {
		t.Fatalf("done %v, body %d bytes of %d", res.done, res.body.Len(), len(data))
	}
	if n := len(res.releases); n < 21 {
		t.Fatalf("only %d messages for 21 chunks", n)
	}
}

// StaticFilesName returns the service name `<http-static-files DIR N>`.
func StaticFilesName(dir string, n int64) preserves.Value {
	return preserves.NewRecord(internalservices.LabelHttpStaticFiles, preserves.String(dir), preserves.Int(n))
}
