package webui

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/syndicate-go/syndicate/dataspace"
	"github.com/syndicate-go/syndicate/dataspace/pattern"
	"github.com/syndicate-go/syndicate/dataspace/schemas/externalservices"
	serviceschema "github.com/syndicate-go/syndicate/dataspace/schemas/service"
	"github.com/syndicate-go/syndicate/dataspace/schemas/syndicatego"
	"github.com/syndicate-go/syndicate/preserves"
	"github.com/syndicate-go/syndicate/services"
)

// maxActionBody bounds the body of an operator action.
const maxActionBody = 64 << 10

// An action is one operator request the page may make: the message it
// sends and what must be in the config dataspace for the service to count
// as one the request concerns (so that a typo or a stale page is an error
// rather than a message nobody hears).
type action struct {
	msg   func(name preserves.Value) preserves.Value
	known func(name preserves.Value) []pattern.Pattern
	not   string // why a service that is not known is refused
}

var actions = map[string]action{
	// As `syndicate restart`: only a running service reacts.
	"restart": {msg: services.RestartService, not: "it is not running",
		known: func(n preserves.Value) []pattern.Pattern {
			return []pattern.Pattern{pattern.Rec(serviceschema.LabelRunService, services.Literal(n))}
		}},
	// The server holds the stop (services/override.go); a service that
	// is wanted or running can be stopped.
	"stop": {msg: func(n preserves.Value) preserves.Value { return syndicatego.StopService{ServiceName: n}.ToValue() },
		not: "it is neither required nor running",
		known: func(n preserves.Value) []pattern.Pattern {
			return []pattern.Pattern{pattern.Rec(serviceschema.LabelRunService, services.Literal(n)),
				pattern.Rec(serviceschema.LabelRequireService, services.Literal(n))}
		}},
	// Start lifts a stop, or runs a service something requires or
	// declares.
	"start": {msg: func(n preserves.Value) preserves.Value { return syndicatego.StartService{ServiceName: n}.ToValue() },
		not: "nothing stops, requires or declares it",
		known: func(n preserves.Value) []pattern.Pattern {
			ps := []pattern.Pattern{pattern.Rec(syndicatego.LabelServiceStopped, services.Literal(n)),
				pattern.Rec(serviceschema.LabelRequireService, services.Literal(n))}
			if r, ok := n.(*preserves.Record); ok && preserves.Equal(r.Label, externalservices.LabelDaemon) && len(r.Fields) == 1 {
				ps = append(ps, pattern.Rec(externalservices.LabelDaemon, services.Literal(r.Fields[0])))
			}
			return ps
		}},
}

// operate answers POST /api/{action} with the form's service name: 204
// once the message has reached the server, 404 for a service the action
// does not concern.
func (s *Server) operate(w http.ResponseWriter, r *http.Request) {
	a, ok := actions[r.PathValue("action")]
	if !ok {
		http.NotFound(w, r)
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, maxActionBody)
	name, err := preserves.ParseText(r.PostFormValue("name"))
	if err != nil {
		http.Error(w, "bad service name: "+err.Error(), http.StatusBadRequest)
		return
	}
	name = preserves.Strip(name)
	ctx, cancel := context.WithTimeout(r.Context(), s.opts.Timeout)
	defer cancel()
	switch err := s.act(ctx, name, a); {
	case errors.Is(err, ErrNoSuchService):
		http.Error(w, err.Error(), http.StatusNotFound)
	case err != nil:
		http.Error(w, err.Error(), http.StatusBadGateway)
	default:
		w.WriteHeader(http.StatusNoContent)
	}
}

// act sends a's message about name if a concerns it, and returns once the
// message has reached the server.
func (s *Server) act(ctx context.Context, name preserves.Value, act action) error {
	done := make(chan error, 1)
	frc := make(chan dataspace.FacetRef, 1)
	a := s.sys.Spawn("ui action", func(t *dataspace.Turn) error {
		frc <- t.FacetRef()
		found := 0
		for _, p := range act.known(name) {
			t.During(s.cfg, p, func(*dataspace.Turn, []preserves.Value) error {
				found++
				return nil
			})
		}
		t.Sync(s.cfg, func(t *dataspace.Turn) error {
			if found == 0 {
				done <- fmt.Errorf("%w %s: %s", ErrNoSuchService, preserves.FormatText(services.HideRefs(name)), act.not)
				t.StopRoot()
				return nil
			}
			t.Message(s.cfg, act.msg(name))
			// The next turn of this actor runs after the message left.
			t.Later(func(t *dataspace.Turn) error {
				t.Sync(s.cfg, func(t *dataspace.Turn) error {
					done <- nil
					t.StopRoot()
					return nil
				})
				return nil
			})
			return nil
		})
		return nil
	})
	select {
	case err := <-done:
		return err
	case <-a.Done():
		select {
		case err := <-done:
			return err
		default:
			return fmt.Errorf("action failed: %v", a.Err())
		}
	case <-ctx.Done():
		fr := <-frc
		fr.ActivateNow(func(t *dataspace.Turn) error { t.StopRoot(); return nil })
		return fmt.Errorf("no answer from the server: %w", ctx.Err())
	}
}
