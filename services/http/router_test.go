package http

import (
	"fmt"
	"strings"
	"testing"

	"github.com/syndicate-go/syndicate/dataspace"
	"github.com/syndicate-go/syndicate/dataspace/schemas/internalservices"
	"github.com/syndicate-go/syndicate/preserves"
	"github.com/syndicate-go/syndicate/services"
)

// parse reads Preserves text with `#:name` standing for refs[name].
func parse(tb testing.TB, text string, refs map[string]*dataspace.Ref) preserves.Value {
	tb.Helper()
	v, err := preserves.ParseTextOptions([]byte(text), preserves.TextOptions{Embedded: func(v preserves.Value) (any, error) {
		s, _ := v.(preserves.Symbol)
		r, ok := refs[string(s)]
		if !ok {
			return nil, fmt.Errorf("no ref %v", v)
		}
		return r, nil
	}})
	if err != nil {
		tb.Fatal(err)
	}
	return v
}

func httpRequest(host string, port int, method string, path ...string) string {
	var ps []string
	for _, p := range path {
		ps = append(ps, fmt.Sprintf("%q", p))
	}
	return fmt.Sprintf(`<http-request 0 %s %d %s [%s] {} {} #"">`, host, port, method, strings.Join(ps, " "))
}

func TestRouterStatesAndMalformedRequest(t *testing.T) {
	h := newHarness(t, Options{})
	name := RouterName(h.web)
	bad := preserves.NewRecord(internalservices.LabelHttpRouter, preserves.Int(1))
	h.do(func(t *dataspace.Turn) {
		t.Assert(h.cfg, services.RunService(name))
		t.Assert(h.cfg, services.RunService(bad))
	})
	waitFor(t, "started+ready", func() bool {
		return h.has("cfg", services.ServiceState(name, services.StateStarted)) && h.has("cfg", services.ServiceState(name, services.StateReady))
	})
	waitFor(t, "malformed failed", func() bool { return h.has("cfg", services.ServiceState(bad, services.StateFailed)) })
	if !h.logs.Has("malformed http-router request", `"level":"warn"`) {
		t.Errorf("no warning: %q", h.logs.Lines())
	}
}

// §8.1 routing rules, at the dataspace level.
func TestRouterRouting(t *testing.T) {
	h := newHarness(t, Options{})
	handlers := map[string]*sink{}
	refs := map[string]*dataspace.Ref{}
	var listenerHandle dataspace.Handle
	h.do(func(t *dataspace.Turn) {
		for _, n := range []string{"ab", "qany", "arest", "exx", "postx", "getx", "p81", "dup1", "dup2", "slow", "bad"} {
			handlers[n] = &sink{}
			refs[n] = t.Create(handlers[n])
		}
		t.Assert(h.cfg, services.RunService(RouterName(h.web)))
		listenerHandle = t.Assert(h.web, preserves.Rec("http-listener", preserves.Int(80)))
	})
	handles := assertRouterBinds(t, h, refs)
	// A second handler for an existing route; the dataspace delivers it to
	// the router before any later request of ours.
	dup2 := parse(t, `<http-bind #f 80 get ["dup"] #:dup2>`, refs)
	h.do(func(t *dataspace.Turn) { t.Assert(h.web, dup2) })

	ask := func(req string) *sink {
		res := &sink{}
		v := parse(t, req, nil)
		h.do(func(t *dataspace.Turn) {
			t.Assert(h.web, preserves.Rec("request", v, dataspace.Embed(t.Create(res))))
		})
		return res
	}
	reached := func(name, req string) {
		t.Helper()
		want := "+<request " + preserves.FormatText(parse(t, req, nil)) + " #:"
		waitFor(t, req+" at "+name, func() bool {
			for _, e := range handlers[name].events() {
				if strings.HasPrefix(e, want) {
					return true
				}
			}
			return false
		})
	}
	answered := func(res *sink, want string) {
		t.Helper()
		waitFor(t, want, func() bool { return res.joined() == want })
	}
	const notFound = `!<status 404 "Not found"> !<done #"">`

	ask(httpRequest("#f", 80, "get", "a", "b"))
	reached("ab", httpRequest("#f", 80, "get", "a", "b"))
	// ["a" ...] is the only pattern matching these.
	ask(httpRequest("#f", 80, "get", "a", "c", "d"))
	reached("arest", httpRequest("#f", 80, "get", "a", "c", "d"))
	ask(httpRequest("#f", 80, "get", "a"))
	reached("arest", httpRequest("#f", 80, "get", "a"))
	ask(httpRequest("#f", 80, "get", "q", "z"))
	reached("qany", httpRequest("#f", 80, "get", "q", "z"))
	answered(ask(httpRequest("#f", 80, "get", "q")), notFound)
	answered(ask(httpRequest("#f", 80, "get", "q", "z", "w")), notFound)
	answered(ask(httpRequest("#f", 80, "get", "zz")), notFound)
	answered(ask(httpRequest("#f", 81, "get", "p")), notFound)
	// Host-specific paths first (any method there), then #f-host paths.
	ask(httpRequest(`"example.com"`, 80, "delete", "x"))
	reached("exx", httpRequest(`"example.com"`, 80, "delete", "x"))
	ask(httpRequest(`"example.com"`, 80, "get", "a", "b"))
	reached("ab", httpRequest(`"example.com"`, 80, "get", "a", "b"))
	ask(httpRequest(`"other"`, 80, "post", "x"))
	reached("postx", httpRequest(`"other"`, 80, "post", "x"))
	answered(ask(httpRequest(`"other"`, 80, "put", "x")), `!<status 405 "Method Not Allowed"> !<header allow "GET, POST"> !<done #"">`)

	ask(httpRequest("#f", 80, "get", "dup"))
	reached("dup1", httpRequest("#f", 80, "get", "dup"))
	if strings.Contains(handlers["dup2"].joined(), "request") {
		t.Fatalf("second handler got the request: %v", handlers["dup2"].events())
	}
	if !h.logs.Has("several handlers bound", `"level":"warn"`) {
		t.Errorf("no warning about several handlers: %q", h.logs.Lines())
	}

	// Withdrawing a binding with an outstanding request: 500 and done,
	// and the forwarded request is withdrawn from the handler.
	slowRes := ask(httpRequest("#f", 80, "get", "slow"))
	reached("slow", httpRequest("#f", 80, "get", "slow"))
	h.do(func(t *dataspace.Turn) { t.Retract(handles[8]) })
	answered(slowRes, `!<status 500 "Internal Server Error"> !<done #"">`)
	waitFor(t, "forwarded request withdrawn", func() bool {
		ev := handlers["slow"].events()
		return ev[len(ev)-1] == "-"
	})

	// Without the listener no binding counts.
	h.do(func(t *dataspace.Turn) { t.Retract(listenerHandle) })
	waitFor(t, "routes withdrawn", func() bool { return !h.has("web", parse(t, `<http-service #f 80 get ["a" "b"]>`, nil)) })
	answered(ask(httpRequest("#f", 80, "get", "a", "b")), notFound)
}

// assertRouterBinds asserts TestRouterRouting's bindings (refs holds the
// handlers), waits for the valid ones to become routes and checks that the
// others did not; it returns the bindings' handles.
func assertRouterBinds(t *testing.T, h *harness, refs map[string]*dataspace.Ref) []dataspace.Handle {
	binds := []string{
		`<http-bind #f 80 get ["a" "b"] #:ab>`,
		`<http-bind #f 80 get ["q" _] #:qany>`,
		`<http-bind #f 80 get ["a" ...] #:arest>`,
		`<http-bind "example.com" 80 #f ["x"] #:exx>`,
		`<http-bind #f 80 post ["x"] #:postx>`,
		`<http-bind #f 80 get ["x"] #:getx>`,
		`<http-bind #f 81 get ["p"] #:p81>`,
		`<http-bind #f 80 get ["dup"] #:dup1>`,
		`<http-bind #f 80 get ["slow"] #:slow>`,
		`<http-bind 3 80 get ["m"] #:bad>`,
		`<http-bind #f 80 get ["m" 1] #:bad>`,
		`<http-bind #f 80 "get" ["m"] #:bad>`,
	}
	vals := make([]preserves.Value, len(binds))
	for i, b := range binds {
		vals[i] = parse(t, b, refs)
	}
	handles := make([]dataspace.Handle, len(binds))
	h.do(func(t *dataspace.Turn) {
		for i, v := range vals {
			handles[i] = t.Assert(h.web, v)
		}
	})
	for _, svc := range []string{`<http-service #f 80 get ["a" "b"]>`, `<http-service "example.com" 80 #f ["x"]>`, `<http-service #f 80 get ["slow"]>`, `<http-service #f 80 get ["dup"]>`} {
		waitFor(t, svc, func() bool { return h.has("web", parse(t, svc, nil)) })
	}
	if h.has("web", parse(t, `<http-service #f 81 get ["p"]>`, nil)) || h.has("web", parse(t, `<http-service 3 80 get ["m"]>`, nil)) {
		t.Fatal("uncounted or malformed binding is active")
	}
	if !h.logs.Has("ignoring malformed http-bind") {
		t.Errorf("malformed bindings not logged: %q", h.logs.Lines())
	}
	return handles
}

// RouterName returns the service name `<http-router #:httpd>`.
func RouterName(httpd *dataspace.Ref) preserves.Value {
	return preserves.NewRecord(internalservices.LabelHttpRouter, dataspace.Embed(httpd))
}
