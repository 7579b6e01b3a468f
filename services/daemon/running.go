package daemon

import (
	"context"
	"math/big"
	"os"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/syndicate-go/syndicate/dataspace"
	"github.com/syndicate-go/syndicate/dataspace/relay"
	"github.com/syndicate-go/syndicate/dataspace/schemas/syndicatego"
	"github.com/syndicate-go/syndicate/preserves"
	"github.com/syndicate-go/syndicate/services"
)

// The life of one running process in the dataspace: its process facet
// (§5.4), holding `<process-status NAME {pid restarts since}>` (our
// protocol extension, syndicatego.ProcessStatus) and, for a Syndicate-protocol
// daemon, the relay over the child's stdio and `<service-object NAME #:C>`
// (§5.7). Stopping the process facet withdraws all of it, so each
// assertion lasts exactly as long as the process runs.

// ProcessStatus returns `<process-status name {pid: pid, restarts:
// restarts, since: "RFC3339"}>`.
func ProcessStatus(name preserves.Value, pid, restarts int, since time.Time) preserves.Value {
	return syndicatego.ProcessStatus{ServiceName: name, Info: syndicatego.ProcessInfo{
		Pid:      syndicatego.ProcessPidPresent{Pid: big.NewInt(int64(pid))},
		Restarts: syndicatego.ProcessRestartsPresent{Restarts: big.NewInt(int64(restarts))},
		Since:    syndicatego.ProcessSincePresent{Since: since.UTC().Format(time.RFC3339)},
	}}.ToValue()
}

// processFacet starts the facet of one running process in the active
// (spec) facet and asserts its process-status there.
func processFacet(t *dataspace.Turn, cfg *dataspace.Ref, name preserves.Value, pid, restarts int, since time.Time) (dataspace.FacetID, dataspace.FacetRef) {
	var ref dataspace.FacetRef
	id, _ := t.Facet(func(t *dataspace.Turn) error {
		t.PreventInertCheck()
		ref = t.FacetRef()
		t.Assert(cfg, ProcessStatus(name, pid, restarts, since))
		return nil
	})
	return id, ref
}

// attachRelay runs, in the process facet pf, a relay over the child's
// stdout (in) and stdin (out) importing its oid 0, and publishes that as
// the daemon's service object (§5.7). The relay owns and closes both
// files; if the process facet is already gone they are closed here. The
// returned channel is closed once the relay has ended.
func attachRelay(pf dataspace.FacetRef, cfg *dataspace.Ref, name preserves.Value, spec *Spec, log zerolog.Logger, in, out *os.File) <-chan struct{} {
	var done <-chan struct{}
	pf.ActivateNow(func(t *dataspace.Turn) error {
		conn, peer := relay.RunOverPipes(t, in, out, relay.Options{
			ImportInitial: true,
			TextOutput:    spec.Protocol == ProtocolText,
			Logger:        log,
		})
		t.Assert(cfg, services.ServiceObject(name, dataspace.Embed(peer)))
		done = conn.Done()
		return nil
	})
	if done == nil {
		in.Close()
		out.Close()
		closed := make(chan struct{})
		close(closed)
		return closed
	}
	return done
}

// newDryRunner returns a Runner that starts no process (Options.DryRun): a
// one-shot is taken to succeed at once (so it completes), every other spec
// to run until it is stopped. Started is reported with pid 0.
func newDryRunner(clock Clock) *Runner {
	r := NewRunner(clock)
	r.run = func(ctx context.Context, s *Spec, h procHooks, _ *sync.WaitGroup) Exit {
		if h.started != nil {
			h.started(0)
		}
		if s.Readiness.Kind != ReadyAtStart && h.ready != nil {
			h.ready() // nothing runs to signal it: assume it would
		}
		if !s.OneShot {
			<-ctx.Done()
		}
		return Exit{}
	}
	return r
}

// logDryRun logs what a dry run would start: argv, the environment
// changes and the working directory.
func logDryRun(log zerolog.Logger, s *Spec) {
	env := make([]string, 0, len(s.Env))
	for _, c := range s.Env {
		if c.Remove {
			env = append(env, "-"+c.Name)
		} else {
			env = append(env, c.Name+"="+c.Value)
		}
	}
	dir := s.Dir
	if dir == "" {
		dir = "."
	}
	log.Info().Strs("argv", s.Argv).Bool("clearEnv", s.ClearEnv).Strs("env", env).Str("dir", dir).
		Str("restart", s.Restart.String()).Bool("readyOnStart", s.ReadyOnStart).
		Msg("dry run: would start process")
}
