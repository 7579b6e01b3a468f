package listener

// HTTP/1.1 on a relay port (services spec §7.2). A sniffed connection whose
// first byte is not a relay byte is handed to a net/http Server through a
// listener that yields just that connection, so keep-alive, chunked bodies
// and the rest of HTTP/1.1 are the standard library's. The handler either
// upgrades to a WebSocket (websocket.go) and runs the relay over it, or
// translates the request into `<http-request …>` (http.prs), asserts
// `<request REQ #:RES>` to the listener's HTTPD space from a fresh facet of
// the connection actor, and streams the response from the messages RES
// receives.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"math/big"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"

	"github.com/syndicate-go/syndicate/dataspace"
	"github.com/syndicate-go/syndicate/dataspace/relay"
	httpschema "github.com/syndicate-go/syndicate/dataspace/schemas/http"
	"github.com/syndicate-go/syndicate/preserves"
)

// MaxRequestBody bounds the request body carried in `<http-request …>`; a
// longer body is treated like a failed read (400).
const MaxRequestBody = 16 << 20

// ErrBadRequest: a request cannot be translated (a header value that is
// not visible ASCII); it is answered with 400.
var ErrBadRequest = errors.New("listener: untranslatable HTTP request")

// requestSeq numbers translated requests process-wide, from 0 (§7.2).
var requestSeq atomic.Int64

// HTTPListener returns `<http-listener PORT>`, asserted to a listener's
// HTTPD space while it runs.
func HTTPListener(port int64) preserves.Value {
	return preserves.NewRecord(httpschema.LabelHttpListener, preserves.Int(port))
}

// httpHandler serves the requests of one connection; it lives as long as
// the connection.
type httpHandler struct {
	fr        dataspace.FacetRef // the connection actor's root facet
	httpd     *dataspace.Ref     // nil: no HTTPD space, every request gets 503
	port      int64              // the listener's port, reported in requests
	relayOpts relay.Options
	log       zerolog.Logger
	upgraded  atomic.Bool // the connection became a WebSocket relay
}

// serveHTTP serves c as HTTP/1.1 until it closes, is hijacked for a
// WebSocket, or ctx ends. It reports whether c now belongs to a relay.
func serveHTTP(ctx context.Context, c net.Conn, h *httpHandler) bool {
	ln := &oneConnListener{c: c, done: make(chan struct{})}
	srv := &http.Server{
		Handler:           h,
		ReadHeaderTimeout: 30 * time.Second,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          log.New(debugWriter{h.log}, "", 0),
		BaseContext:       func(net.Listener) context.Context { return ctx },
		ConnState: func(_ net.Conn, st http.ConnState) {
			if st == http.StateClosed || st == http.StateHijacked {
				ln.finish()
			}
		},
	}
	stop := context.AfterFunc(ctx, func() { c.Close() })
	defer stop()
	_ = srv.Serve(ln) // returns once the connection is closed or hijacked
	return h.upgraded.Load()
}

// oneConnListener hands out one connection, then blocks Accept until that
// connection is finished, so that Server.Serve returns exactly then.
type oneConnListener struct {
	c     net.Conn
	given atomic.Bool
	done  chan struct{}
	once  sync.Once
}

func (l *oneConnListener) Accept() (net.Conn, error) {
	if !l.given.Swap(true) {
		return l.c, nil
	}
	<-l.done
	return nil, net.ErrClosed
}

func (l *oneConnListener) finish()        { l.once.Do(func() { close(l.done) }) }
func (l *oneConnListener) Close() error   { l.finish(); return nil }
func (l *oneConnListener) Addr() net.Addr { return l.c.LocalAddr() }

// debugWriter sends net/http's own complaints (bad requests, TLS probes)
// to the connection's log at debug level: they are the peer's problem.
type debugWriter struct{ log zerolog.Logger }

func (w debugWriter) Write(p []byte) (int, error) {
	w.log.Debug().Msg(strings.TrimSpace(string(p)))
	return len(p), nil
}

func (h *httpHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if isWebSocketUpgrade(r) {
		h.upgrade(w, r)
		return
	}
	if h.httpd == nil {
		emptyReply(w, http.StatusServiceUnavailable)
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, MaxRequestBody+1))
	if err != nil || len(body) > MaxRequestBody {
		emptyReply(w, http.StatusBadRequest)
		return
	}
	req, err := translateRequest(r, body, h.port, requestSeq.Add(1)-1)
	if err != nil {
		h.log.Debug().Err(err).Msg("bad HTTP request")
		emptyReply(w, http.StatusBadRequest)
		return
	}
	h.exchange(w, r, req)
}

// emptyReply answers with code and an empty body, dropping any header set
// so far.
func emptyReply(w http.ResponseWriter, code int) {
	hdr := w.Header()
	clear(hdr)
	hdr.Set("Content-Length", "0")
	w.WriteHeader(code)
}

// upgrade completes a WebSocket handshake and runs the relay over it in
// the connection actor, GK exported as oid 0.
func (h *httpHandler) upgrade(w http.ResponseWriter, r *http.Request) {
	accept, refuse := wsAccept(r)
	if refuse != 0 {
		hdr := w.Header()
		clear(hdr)
		hdr.Set("Content-Length", "0")
		if refuse == http.StatusUpgradeRequired {
			hdr.Set("Sec-WebSocket-Version", "13")
		}
		w.WriteHeader(refuse)
		return
	}
	// Set before hijacking: the hijack makes serveHTTP return, and it must
	// then know the connection is not finished.
	h.upgraded.Store(true)
	c, brw, err := http.NewResponseController(w).Hijack()
	if err != nil {
		h.upgraded.Store(false)
		emptyReply(w, http.StatusInternalServerError)
		return
	}
	// The server's timeouts may have left deadlines on the connection; the
	// relay has its own rules from now on.
	_ = c.SetDeadline(time.Time{})
	resp := "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: " + accept + "\r\n\r\n"
	if _, err := io.WriteString(c, resp); err != nil {
		c.Close()
		return
	}
	ws := newWSConn(c, brw.Reader)
	started := false
	h.fr.ActivateNow(func(t *dataspace.Turn) error {
		started = true
		startRelay(t, ws, h.relayOpts)
		return nil
	})
	if !started {
		ws.Close()
	}
}

// ---- request translation ----

// translateRequest builds `<http-request …>` (http.prs HttpRequest) from
// r and its body exactly as the table of services spec §7.2 says.
func translateRequest(r *http.Request, body []byte, port, seq int64) (preserves.Value, error) {
	req := httpschema.HttpRequest{
		SequenceNumber: big.NewInt(seq),
		Host:           httpschema.RequestHostAbsent{},
		Port:           big.NewInt(port),
		Method:         preserves.Symbol(strings.ToLower(r.Method)),
		Path:           strings.Split(requestPath(r), "/")[1:],
		Headers:        make(httpschema.Headers, len(r.Header)+2),
		Query:          parseQuery(r.URL.RawQuery),
		Body:           httpschema.RequestBodyPresent{Value: body},
	}
	if r.Host != "" && isASCII(r.Host) {
		hs := r.Host
		if i := strings.LastIndexByte(hs, ':'); i >= 0 {
			hs = hs[:i]
		}
		req.Host = httpschema.RequestHostPresent{Value: hs}
	}
	// net/http moves Host and Transfer-Encoding out of the header map; the
	// reference reports them as headers like any other.
	for name, vals := range r.Header {
		if len(vals) > 0 {
			req.Headers[preserves.Symbol(strings.ToLower(name))] = vals[len(vals)-1]
		}
	}
	if r.Host != "" {
		req.Headers["host"] = r.Host
	}
	if len(r.TransferEncoding) > 0 {
		req.Headers["transfer-encoding"] = strings.Join(r.TransferEncoding, ", ")
	}
	for k, v := range req.Headers {
		if !visibleASCII(v) {
			return nil, fmt.Errorf("%w: header %q has a value that is not visible ASCII", ErrBadRequest, k)
		}
	}
	return req.ToValue(), nil
}

// requestPath is the request target's path, not percent-decoded.
func requestPath(r *http.Request) string {
	u := r.RequestURI
	if strings.HasPrefix(u, "/") {
		if i := strings.IndexByte(u, '?'); i >= 0 {
			u = u[:i]
		}
		return u
	}
	// Absolute form (a proxy-style request): the parsed URL's escaped path.
	p := r.URL.EscapedPath()
	if !strings.HasPrefix(p, "/") {
		p = "/" + p
	}
	return p
}

// parseQuery splits a raw query on `&` without decoding: `k=v` appends "v"
// to k's list (split at the first `=`), a bare non-empty `k` makes `k: []`
// if absent, empty pieces are ignored.
func parseQuery(raw string) map[preserves.Symbol][]httpschema.QueryValue {
	q := make(map[preserves.Symbol][]httpschema.QueryValue)
	for _, piece := range strings.Split(raw, "&") {
		if piece == "" {
			continue
		}
		k, v, hasValue := strings.Cut(piece, "=")
		vals := q[preserves.Symbol(k)] // nil renders as []
		if hasValue {
			vals = append(vals, httpschema.QueryValueString{Value: v})
		}
		q[preserves.Symbol(k)] = vals
	}
	return q
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}

// visibleASCII: tab, space and printable ASCII only (what the reference
// accepts as a header string).
func visibleASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c != '\t' && (c < 0x20 || c > 0x7E) {
			return false
		}
	}
	return true
}

// ---- response streaming ----

type respKind uint8

const (
	respStatus respKind = iota
	respHeader
	respChunk
	respDone
	respGone    // the request facet stopped (responder gone)
	respInvalid // a message outside the HttpResponse protocol
)

type respEvent struct {
	kind        respKind
	code        int64
	name, value string
	data        []byte
	bad         preserves.Value // respInvalid: the message
	err         error           // respInvalid: why it is not an HttpResponse
	// release repays the debt a body piece holds until it is written
	// (holdDebt), so that a producer waiting on its account goes at the
	// client's pace; nil if none.
	release func()
}

// respQueue carries response events from the connection actor's turns to
// the handler goroutine. A turn never blocks on a slow client, so the
// queue itself has no limit; a producer that paces itself on its account
// (the static file server) is held to the client's pace because each body
// piece keeps its debt until written.
type respQueue struct {
	mu     sync.Mutex
	evs    []respEvent
	closed bool // the exchange is over: nothing more will be written
	wake   chan struct{}
}

func (x *respQueue) post(ev respEvent) {
	x.mu.Lock()
	if x.closed {
		x.mu.Unlock()
		ev.done()
		return
	}
	x.evs = append(x.evs, ev)
	x.mu.Unlock()
	select {
	case x.wake <- struct{}{}:
	default:
	}
}

func (x *respQueue) take() []respEvent {
	x.mu.Lock()
	defer x.mu.Unlock()
	evs := x.evs
	x.evs = nil
	return evs
}

// close ends the exchange: what is queued, or comes later, is dropped and
// its debt repaid.
func (x *respQueue) close() {
	x.mu.Lock()
	evs := x.evs
	x.evs, x.closed = nil, true
	x.mu.Unlock()
	for _, ev := range evs {
		ev.done()
	}
}

// done repays the event's held debt, if any.
func (ev respEvent) done() {
	if ev.release != nil {
		ev.release()
	}
}

// responder is the RES entity of one request. It lives in the request's
// facet; done (or a malformed message) stops that facet, withdrawing the
// `<request …>` assertion.
type responder struct {
	dataspace.BaseEntity
	x        *respQueue
	facet    dataspace.FacetID
	finished bool
}

func (rs *responder) Message(t *dataspace.Turn, v preserves.Value) error {
	if rs.finished {
		return nil
	}
	ev := parseResponse(v)
	if len(ev.data) > 0 {
		ev.release = holdDebt(t)
	}
	rs.x.post(ev)
	if ev.kind == respDone || ev.kind == respInvalid {
		rs.finished = true
		t.StopFacet(rs.facet)
	}
	return nil
}

// holdDebt charges one more unit to the account t runs on (the
// producer's), until the returned release is called (idempotent); nil
// when the turn runs on no account.
func holdDebt(t *dataspace.Turn) func() {
	a := t.Account()
	if a == nil {
		return nil
	}
	a.Borrow(1)
	var once sync.Once
	return func() { once.Do(func() { a.Repay(1) }) }
}

// parseResponse decodes one HttpResponse message (http.prs).
func parseResponse(v preserves.Value) respEvent {
	if ev, ok := chunkFast(v); ok {
		return ev
	}
	m, err := httpschema.ParseHttpResponse(v)
	switch m := m.(type) {
	case httpschema.HttpResponseStatus:
		code := int64(0) // beyond int64: invalid, like 0
		if m.Code.IsInt64() {
			code = m.Code.Int64()
		}
		return respEvent{kind: respStatus, code: code}
	case httpschema.HttpResponseHeader:
		return respEvent{kind: respHeader, name: string(m.Name), value: m.Value}
	case httpschema.HttpResponseChunk:
		return respEvent{kind: respChunk, data: chunkData(m.Chunk)}
	case httpschema.HttpResponseDone:
		return respEvent{kind: respDone, data: chunkData(m.Chunk)}
	}
	return respEvent{kind: respInvalid, bad: v, err: err}
}

// chunkFast decodes the per-message bulk of a streamed response, a
// `<chunk C>` or `<done C>` of one string or byte string, without the
// generated parser's boxed alternatives (3× the time of this on
// BenchmarkParseResponse). It answers only where ParseHttpResponse
// would answer the same (TestChunkFastAgreesWithSchema); everything
// else goes to the parser, which stays the definition.
func chunkFast(v preserves.Value) (respEvent, bool) {
	r, ok := v.(*preserves.Record)
	if !ok || len(r.Fields) != 1 {
		return respEvent{}, false
	}
	kind := respChunk
	switch r.Label {
	case httpschema.LabelChunk:
	case httpschema.LabelDone:
		kind = respDone
	default:
		return respEvent{}, false
	}
	switch c := r.Fields[0].(type) {
	case preserves.String:
		return respEvent{kind: kind, data: []byte(c)}, true
	case preserves.ByteString:
		return respEvent{kind: kind, data: []byte(c)}, true
	}
	return respEvent{}, false
}

// chunkData is the octets of a Chunk (a string's UTF-8).
func chunkData(c httpschema.Chunk) []byte {
	switch c := c.(type) {
	case httpschema.ChunkString:
		return []byte(c.Value)
	case httpschema.ChunkBytes:
		return c.Value
	}
	return nil
}

// validStatus: a final status code net/http can send (1xx codes are
// interim responses in HTTP/1.1, never a final one).
func validStatus(code int64) bool { return code >= 200 && code <= 999 }

// validHeaderName: an RFC 9110 token.
func validHeaderName(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c <= ' ' || c >= 0x7F || strings.IndexByte(`"(),/:;<=>?@[\]{}`, c) >= 0 {
			return false
		}
	}
	return true
}

// validHeaderValue: no control characters but tab (obs-text allowed).
func validHeaderValue(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; (c < 0x20 && c != '\t') || c == 0x7F {
			return false
		}
	}
	return true
}

// request asserts `<request REQ #:RES>` to HTTPD in a facet of its own,
// whose RES posts the responder's messages to x (and respGone when the
// facet stops). started is false when the connection actor is stopping.
func (h *httpHandler) request(x *respQueue, req preserves.Value) (facet dataspace.FacetID, started bool) {
	h.fr.Activate(func(t *dataspace.Turn) error {
		facet, _ = t.Facet(func(t *dataspace.Turn) error {
			res := t.Create(&responder{x: x, facet: t.ActiveFacet()})
			t.Assert(h.httpd, preserves.NewRecord(httpschema.LabelRequest, req, dataspace.Embed(res)))
			t.OnStop(func(*dataspace.Turn) error {
				x.post(respEvent{kind: respGone})
				return nil
			})
			return nil
		})
		started = true
		return nil
	})
	return facet, started
}

// exchange asserts `<request REQ #:RES>` to HTTPD and streams the response
// driven by RES's messages (§7.2).
func (h *httpHandler) exchange(w http.ResponseWriter, r *http.Request, req preserves.Value) {
	x := &respQueue{wake: make(chan struct{}, 1)}
	defer x.close()
	facet, started := h.request(x, req)
	if !started {
		return // the connection actor is stopping; so is the connection
	}
	// However the exchange ends, the request assertion goes.
	defer h.fr.ActivateNow(func(t *dataspace.Turn) error {
		t.StopFacet(facet)
		return nil
	})

	hdr := w.Header()
	hdr["Content-Type"] = nil // send only the responder's headers: no sniffing
	var status int64 = http.StatusOK
	committed := false
	commit := func() {
		if !committed {
			committed = true
			w.WriteHeader(int(status))
		}
	}
	abort := func(msg string, ev *zerolog.Event) {
		ev.Msg(msg)
		panic(http.ErrAbortHandler) // net/http closes the connection quietly
	}
	rc := http.NewResponseController(w)
	var inHand []respEvent // taken from x and not yet repaid
	defer func() {
		for _, ev := range inHand {
			ev.done()
		}
	}()
	for {
		select {
		case <-x.wake:
		case <-r.Context().Done():
			return
		}
		evs := x.take()
		for i, ev := range evs {
			if i > 0 {
				evs[i-1].done() // written
			}
			inHand = evs[i:]
			switch ev.kind {
			case respStatus:
				if committed {
					continue
				}
				if !validStatus(ev.code) {
					abort("invalid HTTP status from responder", h.log.Warn().Int64("status", ev.code))
				}
				status = ev.code
			case respHeader:
				if committed {
					continue
				}
				if !validHeaderName(ev.name) || !validHeaderValue(ev.value) {
					abort("invalid HTTP header from responder", h.log.Warn().Str("name", preserves.ShowString(ev.name)).Str("value", preserves.ShowString(ev.value)))
				}
				hdr.Set(ev.name, ev.value)
			case respChunk:
				commit()
				if len(ev.data) > 0 {
					if _, err := w.Write(ev.data); err != nil {
						return
					}
				}
				_ = rc.Flush()
			case respDone:
				commit()
				_, _ = w.Write(ev.data)
				return
			case respGone:
				if committed {
					abort("responder vanished mid-response", h.log.Debug())
				}
				emptyReply(w, http.StatusInternalServerError)
				return
			case respInvalid:
				abort("malformed HTTP response message", h.log.Warn().Err(ev.err).Str("message", preserves.Show(ev.bad)))
			}
		}
		if len(evs) > 0 {
			evs[len(evs)-1].done()
		}
		inHand = nil
	}
}
