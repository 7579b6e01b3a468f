// Package webui is the live view of `syndicate ui`: one page, served by the
// client on loopback and bridged to the client's connection to a server
// (its admin socket, or a relay listener and a sturdy ref), so the server
// gains no listener and no new attack surface. What the page shows comes
// from the client's own models, which the command wires in ([Engines]):
// the status model of `syndicate status`, the boot analysis of `syndicate
// analyze` and the pattern syntax of `syndicate observe`, so the page and
// the text commands never disagree.
//
// # The page
//
// Plain HTML, CSS and JavaScript embedded with go:embed (static/): no
// build step, no framework, nothing fetched from elsewhere (the Content
// Security Policy allows only the page's own files). Every string that
// comes from the server is put in the page as text (textContent, text
// nodes, SVG text), never as markup. Views: the services table (filter,
// sort, built-ins hidden by default), one service (dependency chain,
// readiness, its log following live, its recorded lifecycle, restart,
// stop and start with a confirmation), the boot (timeline and dependency graph) and a dataspace
// browser (a pattern's assertions appearing and going, messages flashing).
//
// # Who may use it
//
// The page listens on a loopback address only ([ErrNotLoopback]). The URL
// the command prints carries a random token; the first request with it gets
// the token back as an HttpOnly, SameSite=Strict cookie and is redirected
// to a URL without it (as Jupyter does). Every request without the token or
// the cookie is refused, and so is one whose Host is not the page's own
// (DNS rebinding). Requests that change something (POST: restart, stop,
// start) must also carry the page's own Origin. GET never changes anything.
//
// # Live data and what it costs the server
//
// Each open view is one Server-Sent Events stream, served by one actor of
// the client (spawned for the stream, stopped when the browser leaves)
// holding that view's subscriptions through the one connection. The
// server sees them as ordinary observers on the admin socket, as `status
// --watch`, `logs -f` or `observe` would make: the services table
// subscribes to the records `status` reads (require-service, run-service,
// service-state, depends-on, process-status, service-info, status-text,
// log-dropped, service-output, connection-status), a service page to
// those plus its `<service-history …>` and asserts `<log-tail NAME 200 #t
// SINK>`, the boot view observes `<history-origin>`, `<service-history>`
// and `<depends-on>`, the dataspace browser its pattern. Nothing polls:
// when nothing changes, nothing is sent (docs/operator.md, "Live view",
// has the measured cost).
//
// Between an actor and its browser sits a feed (feed.go): the actor
// replaces the latest state document (a burst of changes within 100 ms
// becomes one document) or queues change events, at most 1000; a browser
// that reads too slowly then gets the whole state again instead of the
// queue, so a slow or stuck browser costs the client bounded memory and
// the server nothing beyond the relay's own flow control.
//
// # Goroutines
//
// The HTTP server's goroutines write streams and answer actions; each view
// actor owns its models and hands documents over through its feed (the only
// state shared, under its mutex). An action (restart, stop, start) runs in
// a short-lived actor of its own.
package webui
