package main

import (
	"context"
	"fmt"

	"github.com/syndicate-go/syndicate/preserves"
	"github.com/syndicate-go/syndicate/services/admin/operate"
)

// stop, start and kill: operator control held by the server (package
// operate has the logic).

func (cl *cli) stop(ctx context.Context, args []string) error {
	name, err := cl.resolveOne(ctx, args[0])
	if err != nil {
		return err
	}
	if err := operate.Stop(ctx, cl.conn, name); err != nil {
		return err
	}
	fmt.Fprintf(cl.stdout, "%s stopped by the operator (syndicate start lifts it)\n", preserves.Show(name))
	return nil
}

func (cl *cli) start(ctx context.Context, args []string) error {
	name, err := cl.resolveOne(ctx, args[0])
	if err != nil {
		return err
	}
	return operate.Start(ctx, cl.conn, name)
}

func (cl *cli) kill(ctx context.Context, signal string, args []string) error {
	sig, err := operate.ParseSignal(signal)
	if err != nil {
		return usagef("kill: %v", err)
	}
	name, err := cl.resolveOne(ctx, args[0])
	if err != nil {
		return err
	}
	return operate.Kill(ctx, cl.conn, name, sig)
}
