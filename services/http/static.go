package http

// The static file server `<http-static-files DIR N>` (services spec §8.2).
// Each run-service spawns a linked actor `<http_static_file_server NAME>`
// holding a request handler entity H, published as
// `<service-object NAME #:H>` (no service state, §2.5). Bind H in an HTTPD
// space with `<http-bind …>` and the router forwards requests to it.
//
// Every `<request REQ #:RES>` asserted to H is answered from a linked task
// of a per-request facet, so file I/O never holds up the actor's turns and
// a request withdrawn before its answer is simply abandoned. The answer is
// produced by [staticStream], which depends only on the directory, N, the
// request path and the MIME table.
//
// Bounded memory (a deviation from the reference, which reads the whole
// file): a file is streamed as `<chunk BYTES>` messages of at most
// [staticChunk] bytes, the last data travelling in `<done BYTES>`, after a
// `content-length` header taken from the size at open (a file that grows
// meanwhile is cut there; one that shrinks ends the response short, which
// the client sees as a truncated body). The task's turns are charged to an
// account of their own and it reads the next chunk only once at most
// [staticWindow] messages are still owed: the HTTP listener holds a
// chunk's debt until its bytes are written to the client, so a
// slow client slows the read, and a request costs about
// staticWindow × staticChunk bytes however large the file. Only regular
// files are served: a FIFO, device or socket is refused with 403 before a
// byte is read, and the file is opened non-blocking and checked after
// opening, so swapping a FIFO in after the check cannot pin the task.
//
// Path safety: after dropping N elements, any element containing `/` or
// starting with `.` is refused (500), so `..` can never name a parent.
// Symbolic links inside DIR are followed, as in the reference: what DIR
// links to is the operator's choice. Directory listings leave out the
// dot-names that could not be fetched anyway. N larger than the path (Q15)
// is a 404, not a crash.

import (
	"bufio"
	"context"
	"fmt"
	"html"
	"io"
	"math/big"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/syndicate-go/syndicate/dataspace"
	httpschema "github.com/syndicate-go/syndicate/dataspace/schemas/http"
	"github.com/syndicate-go/syndicate/dataspace/schemas/internalservices"
	"github.com/syndicate-go/syndicate/preserves"
	"github.com/syndicate-go/syndicate/services"
)

var symStaticWorker = preserves.Symbol("http_static_file_server")

func bootStatic(t *dataspace.Turn, env services.Env, opts Options) {
	type static struct {
		dir string
		n   int
	}
	services.Serve(t, env, services.Requests[static]{
		Label: internalservices.LabelHttpStaticFiles,
		Parse: func(name preserves.Value) (static, error) {
			dir, n, err := internalservices.StaticFiles(name)
			return static{dir, n}, err
		},
		Malformed: "malformed http-static-files request (expected <http-static-files DIR N> with N ≥ 0)",
		// No state is ever reported for this service (§2.5), so the
		// warning is all there is.
		NoState: true,
		// Supervised but silent (§2.5): only a crash shows, as `failed`,
		// until the restarted worker is up.
		Supervise: services.SuperviseOptions{FailuresOnly: true},
		Worker:    func(req services.Request[static]) string { return services.WorkerName(symStaticWorker, req.Name) },
		Boot: func(t *dataspace.Turn, req services.Request[static]) error {
			mimeFile := opts.MimeTypes
			if mimeFile == "" {
				mimeFile = os.Getenv("SYNDICATE_MIME_TYPES")
			}
			if mimeFile == "" {
				mimeFile = "/etc/mime.types"
			}
			h := t.Create(&staticHandler{dir: req.Spec.dir, drop: req.Spec.n, mime: loadMimeTypes(mimeFile), facets: make(dataspace.HandleFacets)})
			t.Assert(env.Config, services.ServiceObject(req.Name, dataspace.Embed(h)))
			return nil
		},
	})
}

// staticHandler is H: one facet per outstanding request.
type staticHandler struct {
	dataspace.BaseEntity
	dir    string
	drop   int
	mime   map[string]string
	facets dataspace.HandleFacets
}

func (s *staticHandler) Assert(t *dataspace.Turn, v preserves.Value, h dataspace.Handle) error {
	hc, err := httpschema.ParseHttpContext(v)
	res, ok := hc.Res.(*dataspace.Ref)
	if err != nil || !ok || res == nil {
		return nil // not a `<request REQ #:RES>`
	}
	path := hc.Req.Path
	return s.facets.Start(t, h, func(t *dataspace.Turn) error {
		fr := t.FacetRef()
		t.LinkedTask("static-file", func(ctx context.Context) error {
			acct := dataspace.NewAccount()
			staticStream(ctx, s.dir, s.drop, path, s.mime, staticChunk, func(msgs []preserves.Value) error {
				if !fr.ActivateAccount(acct, func(t *dataspace.Turn) error {
					for _, m := range msgs {
						t.Message(res, m)
					}
					return nil
				}) {
					return context.Canceled // the request's facet is gone
				}
				return acct.Wait(ctx, staticWindow)
			})
			return nil
		})
		return nil
	})
}

func (s *staticHandler) Retract(t *dataspace.Turn, h dataspace.Handle) error {
	s.facets.Stop(t, h)
	return nil
}

const (
	// staticChunk is the largest body piece one message carries.
	staticChunk = 64 << 10
	// staticWindow is how many messages of one response may be owed
	// (sent and not yet handled, or held by the receiver) before the
	// task reads more.
	staticWindow = 4
)

// staticStream answers one request (§8.2) through send, which delivers
// messages to RES and returns once the window lets the stream go on, or
// an error that ends it (the request was withdrawn).
func staticStream(ctx context.Context, dir string, drop int, reqPath []string, mime map[string]string, chunk int, send func([]preserves.Value) error) {
	head, f, size := staticOpen(dir, drop, reqPath, mime)
	if f == nil {
		_ = send(head)
		return
	}
	defer f.Close()
	head = append(head, header("content-length", strconv.FormatInt(size, 10)))
	r := io.LimitReader(f, size)
	left := size
	for {
		buf := make([]byte, min(int64(chunk), left))
		n, err := io.ReadFull(r, buf)
		buf = buf[:n]
		left -= int64(n)
		// The last piece (or a read error: the response ends short)
		// travels in done.
		last := left == 0 || err != nil
		if last {
			_ = send(append(head, done(buf)))
			return
		}
		if send(append(head, httpschema.HttpResponseChunk{Chunk: httpschema.ChunkBytes{Value: buf}}.ToValue())) != nil {
			return
		}
		head = nil
		if ctx.Err() != nil {
			return
		}
	}
}

// staticOpen resolves a request path: either a complete answer (f nil), or
// the status and headers of a regular file f of the given size, opened for
// the caller to stream and close.
func staticOpen(dir string, drop int, reqPath []string, mime map[string]string) (head []preserves.Value, f *os.File, size int64) {
	if drop > len(reqPath) {
		return simple(404, "Not found"), nil, 0 // Q15
	}
	elems := append([]string(nil), reqPath[drop:]...)
	index := len(elems) > 0 && elems[len(elems)-1] == ""
	if index {
		elems[len(elems)-1] = "index.html"
	}
	for _, e := range elems {
		if strings.Contains(e, "/") || strings.HasPrefix(e, ".") {
			return simple(500, "Internal server error"), nil, 0
		}
	}
	p := filepath.Join(append([]string{dir}, elems...)...)
	// Check before opening, since opening a FIFO for reading blocks until
	// a writer comes; O_NONBLOCK and the check after opening cover a swap
	// in between.
	fi, err := os.Stat(p)
	if err == nil && !fi.IsDir() && !fi.Mode().IsRegular() {
		return simple(403, "Forbidden"), nil, 0
	}
	if err == nil {
		f, err = os.OpenFile(p, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	}
	if err != nil {
		if index {
			if listing, ok := dirListing(filepath.Dir(p)); ok {
				return []preserves.Value{
					status(200, "OK"),
					header("content-type", "text/html"),
					done([]byte(listing)),
				}, nil, 0
			}
		}
		return simple(404, "Not found"), nil, 0
	}
	fi, err = f.Stat()
	switch {
	case err != nil:
		f.Close()
		return simple(500, "Internal server error"), nil, 0
	case fi.IsDir():
		f.Close()
		return []preserves.Value{
			status(301, "Moved permanently"),
			header("location", "/"+strings.Join(reqPath, "/")+"/"),
			done(nil),
		}, nil, 0
	case !fi.Mode().IsRegular():
		f.Close()
		return simple(403, "Forbidden"), nil, 0
	}
	head = []preserves.Value{status(200, "OK")}
	name := filepath.Base(p)
	if i := strings.LastIndexByte(name, '.'); i >= 0 {
		if ct, ok := mime[name[i+1:]]; ok {
			head = append(head, header("content-type", ct))
		}
	}
	return head, f, fi.Size()
}

// dirListing renders a directory as one link per entry, or reports false
// if dir is not a readable directory. Entries whose names start with `.`
// are left out: they cannot be fetched, and listing them would only leak
// names (e.g. `.git/`).
func dirListing(dir string) (string, bool) {
	fi, err := os.Stat(dir)
	if err != nil || !fi.IsDir() {
		return "", false
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return "", false
	}
	var b strings.Builder
	for _, e := range ents {
		n := e.Name()
		if strings.HasPrefix(n, ".") {
			continue // never served (see staticOpen), so never listed
		}
		if e.IsDir() {
			n += "/"
		}
		n = html.EscapeString(n)
		fmt.Fprintf(&b, "<a href=\"%s\">%s</a><br>\n", n, n)
	}
	return b.String(), true
}

// loadMimeTypes reads a mime.types table: `#` lines skipped, the first
// word is a type, the following words its extensions (the first type
// given for an extension wins). A missing file is an empty table.
func loadMimeTypes(file string) map[string]string {
	m := make(map[string]string)
	f, err := os.Open(file)
	if err != nil {
		return m
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "#") {
			continue
		}
		fs := strings.Fields(line)
		if len(fs) < 2 {
			continue
		}
		for _, ext := range fs[1:] {
			if _, dup := m[ext]; !dup {
				m[ext] = fs[0]
			}
		}
	}
	return m
}

func status(code int64, msg string) preserves.Value {
	return httpschema.HttpResponseStatus{Code: big.NewInt(code), Message: msg}.ToValue()
}

func header(name, value string) preserves.Value {
	return httpschema.HttpResponseHeader{Name: preserves.Symbol(name), Value: value}.ToValue()
}

func done(body []byte) preserves.Value {
	return httpschema.HttpResponseDone{Chunk: httpschema.ChunkBytes{Value: body}}.ToValue()
}

func simple(code int64, msg string) []preserves.Value {
	return []preserves.Value{status(code, msg), done(nil)}
}
