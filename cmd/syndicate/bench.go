package main

import (
	"context"
	"encoding/json"
	"time"

	"github.com/syndicate-go/syndicate/services/admin/bench"
)

func runBench(ctx context.Context, cl *cli, args []string) error {
	if len(args) == 0 {
		return usagef("bench needs a workload: pubsub, reqrep or idle")
	}
	sub, args := args[0], args[1:]
	o := bench.Options{}
	var jsonF, quiet bool
	fs := cl.flagSet("bench "+sub, true)
	fs.IntVar(&o.Size, "size", 16, "payload `BYTES` per message")
	fs.BoolVar(&jsonF, "json", false, "print the result as one JSON object")
	fs.BoolVar(&quiet, "quiet", false, "no live progress on stderr")
	switch sub {
	case "pubsub":
		fs.IntVar(&o.Pubs, "pub", 1, "publisher sessions")
		fs.IntVar(&o.Subs, "sub", 1, "subscriber sessions")
		fs.IntVar(&o.PerTurn, "per-turn", 1, "messages each publisher sends per turn")
		fs.DurationVar(&o.Duration, "duration", 5*time.Second, "publishing time")
		fs.Int64Var(&o.Credit, "credit", 8192, "a publisher's account limit (events plus KiB queued) before it waits")
	case "reqrep":
		fs.IntVar(&o.N, "n", 20000, "measured round trips")
		fs.IntVar(&o.Warmup, "warmup", 2000, "unmeasured round trips first")
	case "idle":
		fs.IntVar(&o.Sessions, "sessions", 1000, "idle sessions to open")
		fs.DurationVar(&o.Settle, "settle", 2*time.Second, "wait after opening before reading the server's memory")
		fs.IntVar(&o.ServerPID, "server-pid", 0, "the server's `PID`, if it cannot be found from the connection")
	default:
		return usagef("bench: unknown workload %q (pubsub, reqrep, idle)", sub)
	}
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usagef("bench %s: unexpected argument %q", sub, fs.Arg(0))
	}
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
