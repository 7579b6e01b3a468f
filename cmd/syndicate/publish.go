package main

// assert, send and restart: making assertions and sending messages in the
// config dataspace. Each waits for a sync round trip, so that when the
// command reports success the server's dataspace has the value.

import (
	"context"
	"errors"
	"fmt"

	"github.com/syndicate-go/syndicate/dataspace"
	"github.com/syndicate-go/syndicate/dataspace/pattern"
	serviceschema "github.com/syndicate-go/syndicate/dataspace/schemas/service"
	"github.com/syndicate-go/syndicate/preserves"
	"github.com/syndicate-go/syndicate/script/validate"
	"github.com/syndicate-go/syndicate/services"
	"github.com/syndicate-go/syndicate/services/admin/session"
)

// oneValue reads the VALUE argument, keeping it with positions as well.
func (cl *cli) oneValue(arg string) (preserves.Value, error) {
	positioned, v, err := readValue(arg)
	cl.positioned = positioned
	return v, err
}

// warnInvalid prints a warning for each way v (read with positions from the
// command line) breaks the service schemas. The value is still sent: an
// operator may want to see how the server handles a bad request.
func (cl *cli) warnInvalid(v preserves.Value) {
	for _, e := range validate.Declaration(v) {
		fmt.Fprintf(cl.stderr, "syndicate: warning: %v\n", e)
	}
}

func (cl *cli) assert(ctx context.Context, args []string) error {
	v, err := cl.oneValue(args[0])
	if err != nil {
		return err
	}
	cl.warnInvalid(cl.positioned)
	s, fr, err := session.StartSynced(ctx, cl.conn, "assert", func(t *dataspace.Turn, cfg *dataspace.Ref) error {
		t.Assert(cfg, v)
		return nil
	}, nil)
	if err != nil {
		return err
	}
	defer s.Close()
	fmt.Fprintf(cl.stderr, "asserted %s; interrupt (Ctrl-C) to retract\n", preserves.FormatText(v))
	if err := s.Wait(ctx, nil); err != nil && ctx.Err() == nil {
		return err
	}
	// Interrupted: retract explicitly and wait for the server to see it,
	// rather than relying on the disconnect.
	fr.ActivateNow(func(t *dataspace.Turn) error { t.StopRoot(); return nil })
	// The stopped facet cannot sync, so a fresh one does: the relay keeps
	// order, so its round trip ends after the retraction has arrived.
	after, err := s.Spawn("assert-retracted", func(*dataspace.Turn) error { return nil })
	if err != nil {
		return err
	}
	return s.Await(context.Background(), s.Sync(after))
}

func (cl *cli) sendMessage(ctx context.Context, v preserves.Value) error {
	s, _, err := session.StartSynced(ctx, cl.conn, "send", func(t *dataspace.Turn, cfg *dataspace.Ref) error {
		t.Message(cfg, v)
		return nil
	}, nil)
	if err == nil {
		s.Close()
	}
	return err
}

func (cl *cli) send(ctx context.Context, args []string) error {
	v, err := cl.oneValue(args[0])
	if err != nil {
		return err
	}
	cl.warnInvalid(cl.positioned)
	return cl.sendMessage(ctx, v)
}

// errNoSuchService is the error of `restart` for a service that is
// neither required nor running.
var errNoSuchService = errors.New("no such service")

func (cl *cli) restart(ctx context.Context, args []string) error {
	_, names, err := cl.resolve(ctx, args[0])
	if err != nil {
		return err
	}
	for _, name := range names {
		if err := cl.restartOne(ctx, name); err != nil {
			return err
		}
	}
	return nil
}

// restartOne sends <restart-service NAME> once NAME is seen running.
func (cl *cli) restartOne(ctx context.Context, name preserves.Value) error {
	// Only a running service reacts to <restart-service NAME>: look first,
	// so that a typo is an error rather than a message nobody hears.
	found := 0
	s, fr, err := session.StartSynced(ctx, cl.conn, "restart", func(t *dataspace.Turn, cfg *dataspace.Ref) error {
		subscribe(t, cfg, pattern.Rec(serviceschema.LabelRunService, services.Literal(name)), &observer{
			onAssert: func(*dataspace.Turn, []preserves.Value) { found++ },
		})
		return nil
	}, func(t *dataspace.Turn, cfg *dataspace.Ref) {
		if found > 0 {
			t.Message(cfg, services.RestartService(name))
		}
	})
	if err != nil {
		return err
	}
	defer s.Close()
	if found == 0 {
		return fmt.Errorf("%w %s: it is not running (see syndicate status)", errNoSuchService, preserves.Show(name))
	}
	// The round trip goes through the actor that sent the message: synced
	// was closed inside that turn, before it committed, so a fresh actor's
	// sync could reach the relay first, and the message be lost when the
	// connection closes. The same actor's next turn waits for that commit.
	return s.Await(ctx, s.Sync(fr))
}
