package webui

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"embed"
	"encoding/base64"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/rs/zerolog"

	"github.com/syndicate-go/syndicate/dataspace"
	"github.com/syndicate-go/syndicate/preserves"
)

//go:embed static
var staticFS embed.FS

var (
	// ErrNotLoopback: --listen named an address other hosts could reach.
	ErrNotLoopback = errors.New("webui: the page listens on loopback only")
	// ErrNoSuchService: an action named a service it does not concern
	// (restart: not running; stop: neither required nor running; start:
	// not stopped, required or declared).
	ErrNoSuchService = errors.New("webui: no such service")
)

// Options configure Listen. Engines is required.
type Options struct {
	// Listen is HOST:PORT on a loopback address; "" is 127.0.0.1 and a
	// free port.
	Listen string
	// Token is the secret of the URL; "" draws a random one.
	Token string
	// Lost, if set, is closed when the connection to the server ends:
	// every view then ends and the page says so.
	Lost <-chan struct{}
	// Timeout bounds an operator action's round trip (0: 5 s).
	Timeout time.Duration
	Logger  zerolog.Logger
	Engines Engines
}

// Server is the page's HTTP server, bridged to one connection to a
// syndicate server: sys holds the connection, cfg is what it reaches (the
// config dataspace, or what --ref resolved to).
type Server struct {
	sys   *dataspace.System
	cfg   *dataspace.Ref
	opts  Options
	ln    net.Listener
	token string
	hosts map[string]bool // Host headers accepted (against DNS rebinding)
	log   zerolog.Logger
}

// viewBoot starts one view in a fresh actor: its subscriptions to cfg,
// and what it sends to the feed.
type viewBoot func(t *dataspace.Turn, cfg *dataspace.Ref, f *feed) error

// Listen binds the page's address (which must be loopback) and returns the
// server; Serve serves it.
func Listen(sys *dataspace.System, cfg *dataspace.Ref, opts Options) (*Server, error) {
	if opts.Listen == "" {
		opts.Listen = "127.0.0.1:0"
	}
	if opts.Timeout == 0 {
		opts.Timeout = 5 * time.Second
	}
	host, _, err := net.SplitHostPort(opts.Listen)
	if err != nil {
		return nil, fmt.Errorf("webui: --listen %q: %w", opts.Listen, err)
	}
	if !isLoopback(host) {
		return nil, fmt.Errorf("%w: %q is not a loopback address (use 127.0.0.1:PORT)", ErrNotLoopback, opts.Listen)
	}
	token := opts.Token
	if token == "" {
		b := make([]byte, 24)
		_, _ = rand.Read(b) // never fails (crypto/rand)
		token = base64.RawURLEncoding.EncodeToString(b)
	}
	ln, err := net.Listen("tcp", opts.Listen)
	if err != nil {
		return nil, fmt.Errorf("webui: %w", err)
	}
	s := &Server{sys: sys, cfg: cfg, opts: opts, ln: ln, token: token, log: opts.Logger}
	port := strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
	s.hosts = map[string]bool{ln.Addr().String(): true, "localhost:" + port: true}
	return s, nil
}

func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// URL is the page's address with its token: what the operator opens.
func (s *Server) URL() string {
	return "http://" + s.ln.Addr().String() + "/?token=" + url.QueryEscape(s.token)
}

// Addr is the address the page listens on.
func (s *Server) Addr() net.Addr { return s.ln.Addr() }

// Serve serves the page until ctx ends, then closes every view.
func (s *Server) Serve(ctx context.Context) error {
	srv := &http.Server{
		Handler:           s.Handler(),
		ReadHeaderTimeout: 10 * time.Second,
		BaseContext:       func(net.Listener) context.Context { return ctx },
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(s.ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = srv.Shutdown(sctx)
	<-errc
	return nil
}

func (s *Server) cookieName() string {
	return "syndicate-ui-" + strconv.Itoa(s.ln.Addr().(*net.TCPAddr).Port)
}

// Handler is the page's HTTP handler: every request passes the checks of
// guard first.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	static, _ := fs.Sub(staticFS, "static")
	files := http.FileServerFS(static)
	mux.Handle("GET /{$}", files)
	mux.Handle("GET /app.js", files)
	mux.Handle("GET /app.css", files)
	mux.Handle("GET /favicon.svg", files)
	mux.HandleFunc("GET /events/services", func(w http.ResponseWriter, r *http.Request) {
		s.stream(w, r, "services", servicesView(s.opts.Engines))
	})
	mux.HandleFunc("GET /events/service", func(w http.ResponseWriter, r *http.Request) {
		name, err := preserves.ParseText(r.URL.Query().Get("name"))
		if err != nil {
			http.Error(w, "bad service name: "+err.Error(), http.StatusBadRequest)
			return
		}
		s.stream(w, r, "service", serviceView(s.opts.Engines, preserves.Strip(name)))
	})
	mux.HandleFunc("GET /events/boot", func(w http.ResponseWriter, r *http.Request) {
		s.stream(w, r, "boot", bootView(s.opts.Engines))
	})
	mux.HandleFunc("GET /events/observe", func(w http.ResponseWriter, r *http.Request) {
		p, err := s.opts.Engines.Pattern(r.URL.Query().Get("pattern"))
		if err != nil {
			http.Error(w, fmt.Errorf("%w: %v", errPattern, err).Error(), http.StatusBadRequest)
			return
		}
		s.stream(w, r, "observe", observeView(p))
	})
	mux.HandleFunc("GET /api/pattern", func(w http.ResponseWriter, r *http.Request) {
		// The browser's EventSource cannot read an error's text: the page
		// checks its pattern here first.
		if _, err := s.opts.Engines.Pattern(r.URL.Query().Get("pattern")); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	})
	mux.HandleFunc("POST /api/{action}", s.operate)
	return s.guard(mux)
}

// guard refuses what the page must not serve: a Host other than the
// page's own (DNS rebinding), a request with neither the token nor its
// cookie, and a change (POST) whose Origin is not the page.
func (s *Server) guard(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'")
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("Cache-Control", "no-store")
		if !s.hosts[r.Host] {
			http.Error(w, "unknown Host", http.StatusForbidden)
			return
		}
		if tok := r.URL.Query().Get("token"); tok != "" {
			if !s.validToken(tok) {
				http.Error(w, "wrong token", http.StatusForbidden)
				return
			}
			http.SetCookie(w, &http.Cookie{Name: s.cookieName(), Value: s.token, Path: "/",
				HttpOnly: true, SameSite: http.SameSiteStrictMode})
			if r.Method == http.MethodGet && r.URL.Path == "/" {
				// The token leaves the address bar (and the history).
				http.Redirect(w, r, "/", http.StatusSeeOther)
				return
			}
		} else if c, err := r.Cookie(s.cookieName()); err != nil || !s.validToken(c.Value) {
			http.Error(w, "no token: open the URL `syndicate ui` printed", http.StatusForbidden)
			return
		}
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			if o := r.Header.Get("Origin"); o == "" || o != "http://"+r.Host {
				http.Error(w, "cross-origin request refused", http.StatusForbidden)
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}

func (s *Server) lost() bool {
	select {
	case <-s.opts.Lost:
		return true
	default:
		return false
	}
}

func (s *Server) validToken(t string) bool {
	return subtle.ConstantTimeCompare([]byte(t), []byte(s.token)) == 1
}

// stream runs a view in an actor of its own for as long as the browser
// listens (or the connection to the server lasts).
func (s *Server) stream(w http.ResponseWriter, r *http.Request, name string, boot viewBoot) {
	if s.lost() {
		// Not 200: the browser's EventSource then stops retrying.
		http.Error(w, "the connection to the server is lost", http.StatusServiceUnavailable)
		return
	}
	f := newFeed()
	frc := make(chan dataspace.FacetRef, 1)
	a := s.sys.Spawn("ui "+name, func(t *dataspace.Turn) error {
		t.PreventInertCheck()
		t.AddExitHook(func(_ *dataspace.Turn, err error) {
			if err != nil {
				f.set("failure", map[string]string{"error": err.Error()})
			}
		})
		frc <- t.FacetRef()
		return boot(t, s.cfg, f)
	})
	var fr dataspace.FacetRef
	select {
	case fr = <-frc:
	case <-a.Done():
		http.Error(w, fmt.Sprintf("view failed: %v", a.Err()), http.StatusInternalServerError)
		return
	}
	defer fr.ActivateNow(func(t *dataspace.Turn) error { t.StopRoot(); return nil })
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	if s.opts.Lost != nil {
		go func() {
			select {
			case <-s.opts.Lost:
				cancel()
			case <-ctx.Done():
			}
		}()
	}
	writeSSE(ctx, w, f, a.Done())
}
