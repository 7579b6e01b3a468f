package main

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/syndicate-go/syndicate/dataspace"
	"github.com/syndicate-go/syndicate/dataspace/schemas/externalservices"
	"github.com/syndicate-go/syndicate/dataspace/schemas/syndicatego"
	"github.com/syndicate-go/syndicate/preserves"
	"github.com/syndicate-go/syndicate/services/admin/session"
	"github.com/syndicate-go/syndicate/services/admin/status"
)

// outputWait bounds how long `status NAME` waits for a running daemon's
// output lines after the snapshot.
const outputWait = 2 * time.Second

// statusOpts are the flags of status.
type statusOpts struct{ watch, json bool }

func (cl *cli) status(ctx context.Context, o statusOpts, args []string) error {
	filter, err := patternArg(args)
	if err != nil {
		return err
	}
	var literal preserves.Value // the argument, when it may be one service's name
	if filter != nil {
		literal, _ = preserves.ParseText(args[0])
	}
	m := status.NewModel(filter)
	gotOutput := make(chan struct{}, 1)
	print := func() error {
		svcs := m.Snapshot()
		now := time.Now()
		// The NAME view: the argument names exactly one service.
		detail := literal != nil && len(svcs) == 1 && preserves.Equal(svcs[0].Value(), literal)
		if detail {
			m.Detail(&svcs[0])
		}
		switch {
		case o.json:
			b, err := json.Marshal(svcs)
			if err != nil {
				return err
			}
			fmt.Fprintf(cl.stdout, "%s\n", b)
		default:
			if o.watch {
				fmt.Fprintf(cl.stdout, "--- %s\n", now.Format(time.RFC3339))
			}
			if detail {
				status.WriteDetail(cl.stdout, svcs[0], now)
			} else {
				status.WriteTable(cl.stdout, svcs, now)
				if filter == nil {
					status.WriteConnections(cl.stdout, m.Connections(false), now)
				}
			}
		}
		if o.watch {
			return nil
		}
		if len(svcs) == 0 && len(args) == 1 {
			// Like `systemctl status nosuch`: a misspelt name is not
			// a healthy service.
			return fmt.Errorf("no service matches %s", args[0])
		}
		if slices.ContainsFunc(svcs, status.Service.Failed) {
			return exitStatus(1) // a required service has failed
		}
		return nil
	}
	updates := make(chan struct{}, 1)
	live := false // set in the actor once the snapshot is complete
	s, _, err := session.StartSynced(ctx, cl.conn, "status", func(t *dataspace.Turn, cfg *dataspace.Ref) error {
		pending := false
		m.Subscribe(t, cfg, func(t *dataspace.Turn) {
			if literal != nil && m.HasOutput(literal) {
				select {
				case gotOutput <- struct{}{}:
				default:
				}
			}
			if !live || pending {
				return
			}
			// Coalesce the changes of one burst into one update.
			pending = true
			t.After(50*time.Millisecond, func(*dataspace.Turn) error {
				pending = false
				select {
				case updates <- struct{}{}:
				default:
				}
				return nil
			})
		})
		if literal != nil {
			// Only the daemon service answers; for anything else this
			// assertion is harmless and goes with the connection.
			t.Assert(cfg, syndicatego.OutputRequest{ServiceName: literal}.ToValue())
		}
		return nil
	}, func(*dataspace.Turn, *dataspace.Ref) { live = true })
	if err != nil {
		return err
	}
	defer s.Close()
	if r, ok := preserves.Strip(literal).(*preserves.Record); ok && preserves.Equal(r.Label, externalservices.LabelDaemon) {
		// The daemon service answers the output request in a turn of its
		// own; give it a moment when the daemon is running.
		if m.IsRunning(literal) {
			select {
			case <-gotOutput:
			case <-time.After(outputWait):
			case <-ctx.Done():
			}
		}
	}
	if err := print(); err != nil || !o.watch {
		return err
	}
	for {
		select {
		case <-updates:
			if err := print(); err != nil {
				return err
			}
		case <-s.Done():
			return s.Err()
		case <-ctx.Done():
			return nil
		}
	}
}
