package webui

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/syndicate-go/syndicate/dataspace"
	"github.com/syndicate-go/syndicate/dataspace/pattern"
	serviceschema "github.com/syndicate-go/syndicate/dataspace/schemas/service"
	"github.com/syndicate-go/syndicate/preserves"
	"github.com/syndicate-go/syndicate/services"
)

// maxActionBody bounds the body of an operator action.
const maxActionBody = 64 << 10

// restart sends `<restart-service NAME>` for the form's name, as
// `syndicate restart` does: only to a running service (a name nobody
// runs is an error, not a message nobody hears).
func (s *Server) restart(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, maxActionBody)
	name, err := preserves.ParseText(r.PostFormValue("name"))
	if err != nil {
		http.Error(w, "bad service name: "+err.Error(), http.StatusBadRequest)
		return
	}
	name = preserves.Strip(name)
	ctx, cancel := context.WithTimeout(r.Context(), s.opts.Timeout)
	defer cancel()
	switch err := s.act(ctx, name, services.RestartService(name)); {
	case errors.Is(err, ErrNoSuchService):
		http.Error(w, err.Error(), http.StatusNotFound)
	case err != nil:
		http.Error(w, err.Error(), http.StatusBadGateway)
	default:
		w.WriteHeader(http.StatusNoContent)
	}
}

// act sends msg if service name runs, and returns once the message has
// reached the server.
func (s *Server) act(ctx context.Context, name, msg preserves.Value) error {
	done := make(chan error, 1)
	frc := make(chan dataspace.FacetRef, 1)
	a := s.sys.Spawn("ui action", func(t *dataspace.Turn) error {
		frc <- t.FacetRef()
		found := 0
		t.During(s.cfg, pattern.Rec(serviceschema.LabelRunService, services.Literal(name)), func(*dataspace.Turn, []preserves.Value) error {
			found++
			return nil
		})
		t.Sync(s.cfg, func(t *dataspace.Turn) error {
			if found == 0 {
				done <- fmt.Errorf("%w %s: it is not running", ErrNoSuchService, preserves.FormatText(services.HideRefs(name)))
				t.StopRoot()
				return nil
			}
			t.Message(s.cfg, msg)
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
		fr.Activate(func(t *dataspace.Turn) error { t.StopRoot(); return nil })
		return fmt.Errorf("no answer from the server: %w", ctx.Err())
	}
}
