package http

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/syndicate-go/syndicate/dataspace"
	"github.com/syndicate-go/syndicate/dataspace/pattern"
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
		{0, []string{"a.txt"}, `<status 200 "OK"> <header content-type "text/plain"> <done #"hello">`},
		{1, []string{"static", "a.txt"}, `<status 200 "OK"> <header content-type "text/plain"> <done #"hello">`},
		{0, []string{"noext"}, `<status 200 "OK"> <done #"raw">`},
		{3, []string{"a"}, notFound}, // Q15
		{2, []string{"a"}, notFound}, // Q15
		{0, []string{"missing"}, notFound},
		{0, []string{"sub"}, `<status 301 "Moved permanently"> <header location "/sub/"> <done #"">`},
		{1, []string{"static"}, `<status 301 "Moved permanently"> <header location "/static/"> <done #"">`},
		{0, []string{"idx", ""}, `<status 200 "OK"> <header content-type "text/html"> <done #"<p>index</p>">`},
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
	bad := preserves.NewRecord(symStaticFiles, preserves.Int(1), preserves.Int(2))
	negative := StaticFilesName(www, -1)
	var handler *dataspace.Ref
	got := make(chan *dataspace.Ref, 1)
	h.do(func(t *dataspace.Turn) {
		t.Assert(h.cfg, services.RunService(name))
		t.Assert(h.cfg, services.RunService(bad))
		t.Assert(h.cfg, services.RunService(negative))
		t.During(h.cfg, pattern.Rec(services.LabelServiceObject, pattern.MustLift(name), pattern.Capture()), func(t *dataspace.Turn, caps []preserves.Value) error {
			r, _ := dataspace.RefOf(caps[0])
			select {
			case got <- r:
			default:
			}
			return nil
		})
	})
	select {
	case handler = <-got:
	case <-time.After(10 * time.Second):
		t.Fatal("no service object")
	}
	res := &sink{}
	req := parse(t, httpRequest(`"h"`, 80, "get", "static", "a.txt"), nil)
	h.do(func(t *dataspace.Turn) {
		t.Assert(handler, preserves.Rec("request", req, dataspace.Embed(t.Create(res))))
	})
	want := `!<status 200 "OK"> !<header content-type "text/plain"> !<done #"hello">`
	waitFor(t, want, func() bool { return res.joined() == want })
	waitFor(t, "malformed warnings", func() bool {
		return h.logs.Has("malformed http-static-files request", `"level":"warn"`, `<http-static-files 1 2>`)
	})
	waitFor(t, "negative N warning", func() bool { return h.logs.Has("malformed http-static-files request", " -1>") })
	h.mu.Lock()
	defer h.mu.Unlock()
	for k := range h.present {
		if strings.HasPrefix(k, "cfg <service-state") {
			t.Errorf("static files reported a state: %s", k)
		}
	}
}
