package http_test

// End to end over loopback TCP: a relay listener with an HTTPD space, the
// router and the static file server, driven by net/http clients (services
// scenario 62, Q15, and path safety over the wire).

import (
	"bufio"
	"fmt"
	"io"
	"net"
	nethttp "net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/syndicate-go/syndicate/dataspace"
	"github.com/syndicate-go/syndicate/dataspace/dataspacetest"
	"github.com/syndicate-go/syndicate/dataspace/pattern"
	"github.com/syndicate-go/syndicate/dataspace/schemas/service"
	"github.com/syndicate-go/syndicate/preserves"
	"github.com/syndicate-go/syndicate/preserves/testutil"
	"github.com/syndicate-go/syndicate/services"
	shttp "github.com/syndicate-go/syndicate/services/http"
	"github.com/syndicate-go/syndicate/services/listener"
)

var waitFor = testutil.WaitFor

// handler answers every `<request REQ RES>` with 200 "hi" and keeps REQ.
type handler struct {
	dataspace.BaseEntity
	mu   sync.Mutex
	reqs []preserves.Value
}

func (h *handler) Assert(t *dataspace.Turn, v preserves.Value, _ dataspace.Handle) error {
	r, ok := v.(*preserves.Record)
	if !ok || len(r.Fields) != 2 {
		return nil
	}
	h.mu.Lock()
	h.reqs = append(h.reqs, r.Fields[0])
	h.mu.Unlock()
	if res, ok := dataspace.RefOf(r.Fields[1]); ok {
		t.Message(res, preserves.Rec("status", preserves.Int(200), preserves.String("OK")))
		t.Message(res, preserves.Rec("done", preserves.String("hi")))
	}
	return nil
}

func (h *handler) requests() []preserves.Value {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]preserves.Value(nil), h.reqs...)
}

type world struct {
	sys      *dataspace.System
	fr       dataspace.FacetRef
	cfg, web *dataspace.Ref
	mu       sync.Mutex
	webHas   map[string]int
	objects  map[string]*dataspace.Ref
}

func newWorld(tb testing.TB, mimeFile string) *world {
	w := &world{sys: dataspacetest.NewSystem(tb, dataspace.Options{}), webHas: map[string]int{}, objects: map[string]*dataspace.Ref{}}
	ch := make(chan error, 1)
	w.sys.Spawn("server", func(t *dataspace.Turn) error {
		t.PreventInertCheck()
		w.fr = t.FacetRef()
		w.cfg = t.Create(dataspace.NewDataspace())
		w.web = t.Create(dataspace.NewDataspace())
		gk := t.Create(dataspace.BaseEntity{})
		t.During(w.web, pattern.Capture(), func(t *dataspace.Turn, caps []preserves.Value) error {
			k := preserves.FormatText(caps[0])
			w.mu.Lock()
			w.webHas[k]++
			w.mu.Unlock()
			t.OnStop(func(*dataspace.Turn) error {
				w.mu.Lock()
				w.webHas[k]--
				w.mu.Unlock()
				return nil
			})
			return nil
		})
		t.During(w.cfg, pattern.Rec(service.LabelServiceObject, pattern.Capture(), pattern.Capture()), func(t *dataspace.Turn, caps []preserves.Value) error {
			r, _ := dataspace.RefOf(caps[1])
			w.mu.Lock()
			w.objects[preserves.FormatText(caps[0])] = r
			w.mu.Unlock()
			return nil
		})
		env := services.Env{Config: w.cfg, Gatekeeper: gk, Logger: zerolog.Nop()}
		err := services.Boot(t, env)
		if err == nil {
			err = listener.BootWith(t, env, listener.Options{Supervise: services.SuperviseOptions{Delay: 20 * time.Millisecond, Backoff: 200 * time.Millisecond}})
		}
		if err == nil {
			err = shttp.BootWith(t, env, shttp.Options{MimeTypes: mimeFile})
		}
		ch <- err
		return err
	})
	if err := <-ch; err != nil {
		tb.Fatal(err)
	}
	return w
}

func (w *world) do(fn func(t *dataspace.Turn)) {
	w.fr.Activate(func(t *dataspace.Turn) error { fn(t); return nil })
}

func (w *world) inWeb(text string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.webHas[text] > 0
}

func (w *world) object(name preserves.Value) *dataspace.Ref {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.objects[preserves.FormatText(name)]
}

func freePort(tb testing.TB) int {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

func bind(host preserves.Value, port int, method preserves.Value, path preserves.Sequence, h *dataspace.Ref) preserves.Value {
	return preserves.Rec("http-bind", host, preserves.Int(port), method, path, dataspace.Embed(h))
}

func get(tb testing.TB, cl *nethttp.Client, method, url string) (*nethttp.Response, string) {
	tb.Helper()
	req, _ := nethttp.NewRequest(method, url, nil)
	resp, err := cl.Do(req)
	if err != nil {
		tb.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	return resp, string(body)
}

// Services scenario 62, plus the static file server behind the router.
func TestScenario62AndStaticFilesOverHTTP(t *testing.T) {
	root := t.TempDir()
	www := filepath.Join(root, "www")
	os.MkdirAll(www, 0o755)
	os.WriteFile(filepath.Join(www, "a.txt"), []byte("hello"), 0o644)
	os.WriteFile(filepath.Join(root, "secret.txt"), []byte("SECRET"), 0o644)
	big := strings.Repeat("0123456789abcdef", 3<<16) // 3 MiB: 48 chunks
	os.WriteFile(filepath.Join(www, "big"), []byte(big), 0o644)
	hasFIFO := syscall.Mkfifo(filepath.Join(www, "fifo"), 0o644) == nil
	mime := filepath.Join(root, "mime.types")
	os.WriteFile(mime, []byte("text/plain txt\n"), 0o644)

	w := newWorld(t, mime)
	port := freePort(t)
	h := &handler{}
	static1 := shttp.StaticFilesName(www, 1)
	static3 := shttp.StaticFilesName(www, 3)
	w.do(func(t *dataspace.Turn) {
		gk := t.Create(dataspace.BaseEntity{})
		addr := preserves.Rec("tcp", preserves.String("127.0.0.1"), preserves.Int(port))
		t.Assert(w.cfg, services.RequireService(preserves.Rec("relay-listener", addr, dataspace.Embed(gk), dataspace.Embed(w.web))))
		t.Assert(w.cfg, services.RequireService(shttp.RouterName(w.web)))
		t.Assert(w.cfg, services.RequireService(static1))
		t.Assert(w.cfg, services.RequireService(static3))
		t.Assert(w.web, bind(preserves.Bool(false), port, preserves.Symbol("get"), preserves.Sequence{preserves.String("d")}, t.Create(h)))
	})
	waitFor(t, "static services", func() bool { return w.object(static1) != nil && w.object(static3) != nil })
	w.do(func(t *dataspace.Turn) {
		rest := preserves.Symbol("...")
		t.Assert(w.web, bind(preserves.Bool(false), port, preserves.Symbol("get"), preserves.Sequence{preserves.String("static"), rest}, w.object(static1)))
		t.Assert(w.web, bind(preserves.Bool(false), port, preserves.Bool(false), preserves.Sequence{preserves.String("deep"), rest}, w.object(static3)))
	})
	for _, svc := range []string{
		fmt.Sprintf(`<http-service #f %d get ["d"]>`, port),
		fmt.Sprintf(`<http-service #f %d get ["static" ...]>`, port),
		fmt.Sprintf(`<http-service #f %d #f ["deep" ...]>`, port),
	} {
		waitFor(t, svc, func() bool { return w.inWeb(svc) })
	}
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	waitFor(t, "listening", func() bool {
		c, err := net.Dial("tcp", base[len("http://"):])
		if err == nil {
			c.Close()
		}
		return err == nil
	})
	tr := &nethttp.Transport{}
	defer tr.CloseIdleConnections()
	cl := &nethttp.Client{Transport: tr, Timeout: 10 * time.Second}

	resp, body := get(t, cl, "GET", base+"/d")
	if resp.StatusCode != 200 || body != "hi" {
		t.Fatalf("GET /d: %d %q", resp.StatusCode, body)
	}
	checkScenario62Request(t, h, port)

	if resp, _ := get(t, cl, "GET", base+"/zz"); resp.StatusCode != 404 {
		t.Fatalf("GET /zz: %d", resp.StatusCode)
	}
	if resp, _ := get(t, cl, "POST", base+"/d"); resp.StatusCode != 405 || resp.Header.Get("Allow") != "GET" {
		t.Fatalf("POST /d: %d %v", resp.StatusCode, resp.Header)
	}

	// Static files behind the router.
	resp, body = get(t, cl, "GET", base+"/static/a.txt")
	if resp.StatusCode != 200 || body != "hello" || resp.Header.Get("Content-Type") != "text/plain" {
		t.Fatalf("GET /static/a.txt: %d %q %v", resp.StatusCode, body, resp.Header)
	}
	// A file of many chunks arrives whole, with its length; a FIFO is
	// refused at once (it used to pin a thread per request, forever).
	resp, body = get(t, cl, "GET", base+"/static/big")
	if resp.StatusCode != 200 || body != big || resp.ContentLength != int64(len(big)) {
		t.Fatalf("GET /static/big: %d, %d bytes of %d, length %d", resp.StatusCode, len(body), len(big), resp.ContentLength)
	}
	if hasFIFO {
		if resp, _ := get(t, cl, "GET", base+"/static/fifo"); resp.StatusCode != 403 {
			t.Fatalf("GET /static/fifo: %d", resp.StatusCode)
		}
	}
	if resp, _ := get(t, cl, "GET", base+"/deep"); resp.StatusCode != 404 { // Q15: N=3 > 1 element
		t.Fatalf("GET /deep with N=3: %d", resp.StatusCode)
	}
	cl.CheckRedirect = func(*nethttp.Request, []*nethttp.Request) error { return nethttp.ErrUseLastResponse }
	if resp, _ := get(t, cl, "GET", base+"/static"); resp.StatusCode != 301 || resp.Header.Get("Location") != "/static/" {
		t.Fatalf("GET /static: %d %v", resp.StatusCode, resp.Header)
	}
	checkNoEscape(t, base)
}

// checkScenario62Request checks the one request the handler h saw: the
// http-request record the server made of `GET /d`.
func checkScenario62Request(t *testing.T, h *handler, port int) {
	t.Helper()
	reqs := h.requests()
	if len(reqs) != 1 {
		t.Fatalf("handler saw %v", reqs)
	}
	r := reqs[0].(*preserves.Record)
	if _, ok := r.Fields[0].(preserves.Int); !ok || preserves.FormatText(r.Label) != "http-request" || len(r.Fields) != 8 {
		t.Fatalf("request %v", r)
	}
	rest := preserves.FormatText(preserves.Sequence(r.Fields[1:5]))
	if want := fmt.Sprintf(`["127.0.0.1" %d get ["d"]]`, port); rest != want {
		t.Fatalf("request fields %s, want %s", rest, want)
	}
	if q, b := preserves.FormatText(r.Fields[6]), preserves.FormatText(r.Fields[7]); q != "{}" || b != `#""` {
		t.Fatalf("query %s body %s", q, b)
	}
	if hd, ok := r.Fields[5].(*preserves.Dictionary); !ok || !hasKey(hd, "host") {
		t.Fatalf("headers %v", r.Fields[5])
	}
}

// checkNoEscape checks that a static file server under base never
// leaves its directory.
func checkNoEscape(t *testing.T, base string) {
	t.Helper()
	// `..` in the raw request target never leaves DIR: refused (500), and
	// percent-encoded dots are just an unknown name (404).
	for target, code := range map[string]int{"/static/../secret.txt": 500, "/static/%2e%2e/secret.txt": 404} {
		c, err := net.Dial("tcp", base[len("http://"):])
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(c, "GET %s HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", target)
		resp, err := nethttp.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		c.Close()
		if resp.StatusCode != code || string(b) == "SECRET" {
			t.Fatalf("GET %s: %d %q", target, resp.StatusCode, b)
		}
	}
}

func hasKey(d *preserves.Dictionary, k string) bool {
	_, ok := d.Get(preserves.Symbol(k))
	return ok
}
