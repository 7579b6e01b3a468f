package main

import (
	"context"
	"encoding/json"

	"github.com/syndicate-go/syndicate/services/admin/bench"
)

func (cl *cli) bench(ctx context.Context, sub string, o bench.Options, jsonF, quiet bool) error {
	switch {
	case o.Size < 0 || o.Size > 1<<20:
		return usagef("bench: --size must be between 0 and 1048576")
	case sub == "pubsub" && (o.Pubs < 1 || o.Subs < 0 || o.PerTurn < 1 || o.Duration <= 0 || o.Credit < 1):
		return usagef("bench pubsub: --pub and --per-turn must be at least 1, --sub at least 0, --duration and --credit positive")
	case sub == "reqrep" && (o.N < 1 || o.Warmup < 0):
		return usagef("bench reqrep: --n must be at least 1 and --warmup at least 0")
	case sub == "idle" && o.Sessions < 1:
		return usagef("bench idle: --sessions must be at least 1")
	}
	o.Conn = cl.conn
	if !quiet {
		o.Progress = cl.stderr
	}
	res, err := bench.Run(ctx, sub, o)
	if err != nil {
		return err
	}
	if jsonF {
		enc := json.NewEncoder(cl.stdout)
		enc.SetEscapeHTML(false)
		return enc.Encode(res)
	}
	res.Text(cl.stdout)
	return nil
}
