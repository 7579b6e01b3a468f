// Package http implements the HTTP services of services spec §8: the
// router `<http-router #:HTTPD>` and the static file server
// `<http-static-files DIR N>`. Neither speaks HTTP itself: the relay
// listeners (services/listener) translate requests on their ports into
// `<request <http-request …> #:RES>` assertions in an HTTPD dataspace and
// stream back whatever `<status>`/`<header>`/`<chunk>`/`<done>` messages RES
// receives (http.prs). These services are parties in that dataspace.
//
// # Router
//
// Each `<run-service <http-router #:HTTPD>>` spawns a linked actor
// `<http_router NAME>` that asserts `started` and `ready` at once and keeps
// a routing table of the `<http-bind HOST PORT METHOD PATH #:HANDLER>`
// assertions in HTTPD. A binding counts only while `<http-listener PORT>`
// is asserted there too, which falls out of the structure: the binding
// observer for a port lives inside the facet that observes that port's
// listener. While a binding counts the router asserts
// `<http-service HOST PORT METHOD PATH>` in HTTPD (the schema's
// description of an active route), which also lets others — tests among
// them — see when a route is live.
//
// Each `<request REQ #:RES>` is routed once, when it appears (§8.1): no
// binding for its port → 404; a host-specific path match beats the
// `#f`-host bindings; path patterns are tried in Preserves order; the
// method table gives the exact method, else `#f`, else 405 with an `allow`
// header. The request is then asserted to the handler for as long as it
// exists; if the binding goes first, RES gets 500 and done. Routing scans
// the bindings of the request's port: configurations bind a handful of
// routes, and a scan keeps the table trivially consistent with the
// dataspace.
//
// # Static files
//
// See static.go.
package http

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/rs/zerolog"

	"github.com/syndicate-go/syndicate/dataspace"
	"github.com/syndicate-go/syndicate/dataspace/pattern"
	httpschema "github.com/syndicate-go/syndicate/dataspace/schemas/http"
	"github.com/syndicate-go/syndicate/dataspace/schemas/internalservices"
	"github.com/syndicate-go/syndicate/preserves"
	"github.com/syndicate-go/syndicate/services"
)

var symRouterWorker = preserves.Symbol("http_router")

// Options tunes the HTTP services; the zero value is the spec's behaviour.
type Options struct {
	// MimeTypes names the MIME table of the static file server; empty
	// means $SYNDICATE_MIME_TYPES, else /etc/mime.types.
	MimeTypes string
}

// Boot installs the HTTP router and static file services in env.Config.
func Boot(t *dataspace.Turn, env services.Env) error {
	return BootWith(t, env, Options{})
}

// BootWith is Boot with explicit options.
func BootWith(t *dataspace.Turn, env services.Env, opts Options) error {
	if env.Config == nil {
		return fmt.Errorf("http: Boot needs a config dataspace")
	}
	bootRouter(t, env)
	bootStatic(t, env, opts)
	return nil
}

func bootRouter(t *dataspace.Turn, env services.Env) {
	services.Serve(t, env, services.Requests[*dataspace.Ref]{
		Label:     internalservices.LabelHttpRouter,
		Parse:     services.CapabilityName(internalservices.ParseHttpRouter, func(r internalservices.HttpRouter) any { return r.Httpd }),
		Malformed: "malformed http-router request (expected <http-router #:HTTPD>)",
		Worker: func(req services.Request[*dataspace.Ref]) string {
			return services.WorkerName(symRouterWorker, req.Name)
		},
		Boot: func(t *dataspace.Turn, req services.Request[*dataspace.Ref]) error {
			t.Assert(env.Config, services.ServiceState(req.Name, services.StateReady))
			newRouter(t, req.Spec, req.Log)
			return nil
		},
	})
}

// binding is one counted `<http-bind …>`.
type binding struct {
	seq  uint64 // arrival order: the first of several handlers wins
	bind httpschema.HttpBinding
	port int64
	// host (String or #f), method (Symbol or #f) and path are the parts
	// of bind as values, compared in Preserves order when routing.
	host, method, path preserves.Value
	handler            *dataspace.Ref
	routed             map[*routed]struct{} // outstanding requests routed here
}

// routed is one request forwarded to a handler.
type routed struct {
	res   *dataspace.Ref
	facet dataspace.FacetID // holds the assertion to the handler
	b     *binding
}

// router is the routing table of one HTTPD space; only the router
// actor's turns touch it.
type router struct {
	httpd   *dataspace.Ref
	log     zerolog.Logger
	byPort  map[int64][]*binding
	nextSeq uint64
}

func newRouter(t *dataspace.Turn, httpd *dataspace.Ref, log zerolog.Logger) *router {
	r := &router{httpd: httpd, log: log, byPort: make(map[int64][]*binding)}
	t.During(httpd, pattern.Rec(httpschema.LabelHttpListener, pattern.Capture()), func(t *dataspace.Turn, caps []preserves.Value) error {
		port, ok := caps[0].(preserves.Int)
		if !ok {
			return nil
		}
		bp := pattern.Bind{Pattern: pattern.Rec(httpschema.LabelHttpBind, pattern.Discard{}, pattern.Lit{Value: port}, pattern.Discard{}, pattern.Discard{}, pattern.Discard{})}
		t.During(httpd, bp, func(t *dataspace.Turn, caps []preserves.Value) error {
			b, err := parseBinding(int64(port), caps[0])
			if err != nil {
				r.log.Warn().Err(err).Msg("ignoring malformed http-bind")
				return nil
			}
			r.add(b)
			hb := b.bind
			t.Assert(httpd, httpschema.HttpService{Host: hb.Host, Port: hb.Port, Method: hb.Method, Path: hb.Path}.ToValue())
			t.OnStop(func(t *dataspace.Turn) error {
				r.remove(t, b)
				return nil
			})
			return nil
		})
		return nil
	})
	t.During(httpd, pattern.Rec(httpschema.LabelRequest, pattern.Capture(), pattern.Capture()), func(t *dataspace.Turn, caps []preserves.Value) error {
		r.route(t, caps[0], caps[1])
		return nil
	})
	return r
}

// parseBinding parses an `<http-bind …>` for the given port.
func parseBinding(port int64, v preserves.Value) (*binding, error) {
	hb, err := httpschema.ParseHttpBinding(v)
	if err != nil {
		return nil, fmt.Errorf("http: %w", err)
	}
	h, ok := hb.Handler.(*dataspace.Ref)
	if !ok || h == nil {
		return nil, fmt.Errorf("http: handler is not a capability")
	}
	return &binding{
		bind: hb, port: port, handler: h, routed: make(map[*routed]struct{}),
		host: hb.Host.ToValue(), method: hb.Method.ToValue(), path: hb.Path.ToValue(),
	}, nil
}

func (r *router) add(b *binding) {
	b.seq = r.nextSeq
	r.nextSeq++
	r.byPort[b.port] = append(r.byPort[b.port], b)
}

// remove drops b; requests still routed to it get 500 (§8.1 step 5).
func (r *router) remove(t *dataspace.Turn, b *binding) {
	bs := r.byPort[b.port]
	if i := slices.Index(bs, b); i >= 0 {
		bs = slices.Delete(bs, i, i+1)
	}
	if len(bs) == 0 {
		delete(r.byPort, b.port)
	} else {
		r.byPort[b.port] = bs
	}
	for rq := range b.routed {
		respond(t, rq.res, 500, "Internal Server Error", nil)
		t.StopFacet(rq.facet)
	}
	clear(b.routed)
}

// pathMatches: a label equals its element, `_` takes one element, `...`
// takes the rest (possibly nothing); otherwise the lengths must agree.
func pathMatches(pat httpschema.PathPattern, path []string) bool {
	for i, e := range pat {
		switch e := e.(type) {
		case httpschema.PathPatternElementLabel:
			if i >= len(path) || path[i] != e.Value {
				return false
			}
		case httpschema.PathPatternElementRest:
			return true
		case httpschema.PathPatternElementWildcard:
			if i >= len(path) {
				return false
			}
		}
	}
	return len(pat) == len(path)
}

// matchPath returns the bindings (of the given host) whose path pattern is
// the first, in Preserves order, to match.
func matchPath(bs []*binding, host preserves.Value, path []string) []*binding {
	var pats []preserves.Value
	for _, b := range bs {
		if preserves.Equal(b.host, host) && pathMatches(b.bind.Path, path) {
			pats = append(pats, b.path)
		}
	}
	if len(pats) == 0 {
		return nil
	}
	best := slices.MinFunc(pats, preserves.Compare)
	var out []*binding
	for _, b := range bs {
		if preserves.Equal(b.host, host) && preserves.Equal(b.path, best) {
			out = append(out, b)
		}
	}
	return out
}

// route answers or forwards one `<request REQ RES>` (§8.1).
func (r *router) route(t *dataspace.Turn, reqv, resv preserves.Value) {
	res, ok := dataspace.RefOf(resv)
	q, err := httpschema.ParseHttpRequest(reqv)
	if !ok || err != nil || !q.Port.IsInt64() {
		r.log.Debug().Err(err).Str("request", preserves.Show(reqv)).Msg("ignoring malformed request")
		return
	}
	bs := r.byPort[q.Port.Int64()]
	if len(bs) == 0 {
		respond(t, res, 404, "Not found", nil)
		return
	}
	var cands []*binding
	if host, ok := q.Host.(httpschema.RequestHostPresent); ok {
		cands = matchPath(bs, preserves.String(host.Value), q.Path)
	}
	if cands == nil {
		cands = matchPath(bs, preserves.Bool(false), q.Path)
	}
	if cands == nil {
		respond(t, res, 404, "Not found", nil)
		return
	}
	var chosen []*binding
	for _, want := range []preserves.Value{q.Method, preserves.Bool(false)} {
		for _, b := range cands {
			if preserves.Equal(b.method, want) {
				chosen = append(chosen, b)
			}
		}
		if chosen != nil {
			break
		}
	}
	if chosen == nil {
		var allow []string
		for _, b := range cands {
			if m, ok := b.method.(preserves.Symbol); ok {
				allow = append(allow, strings.ToUpper(string(m)))
			}
		}
		slices.Sort(allow)
		allow = slices.Compact(allow)
		respond(t, res, 405, "Method Not Allowed", []preserves.Value{header("allow", strings.Join(allow, ", "))})
		return
	}
	b := slices.MinFunc(chosen, func(x, y *binding) int { return cmp.Compare(x.seq, y.seq) })
	if len(chosen) > 1 {
		r.log.Warn().Str("path", preserves.Show(b.path)).Str("method", preserves.Show(b.method)).
			Int("handlers", len(chosen)).Msg("several handlers bound for one route; using the first")
	}
	rq := &routed{res: res, b: b}
	rq.facet, _ = t.Facet(func(t *dataspace.Turn) error {
		t.Assert(b.handler, preserves.NewRecord(httpschema.LabelRequest, reqv, resv))
		return nil
	})
	b.routed[rq] = struct{}{}
	t.OnStop(func(*dataspace.Turn) error {
		delete(rq.b.routed, rq)
		return nil
	})
}

// respond sends a complete, bodiless response: status, headers, done.
func respond(t *dataspace.Turn, res *dataspace.Ref, code int64, msg string, headers []preserves.Value) {
	t.Message(res, status(code, msg))
	for _, h := range headers {
		t.Message(res, h)
	}
	t.Message(res, done(nil))
}
