package main

// analyze: boot analysis (services/timeline/analyze) of what the server
// recorded.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/syndicate-go/syndicate/dataspace"
	"github.com/syndicate-go/syndicate/preserves"
	"github.com/syndicate-go/syndicate/services/admin/session"
	"github.com/syndicate-go/syndicate/services/timeline/analyze"
)

// fetchBoot reads the histories and dependencies from the server.
func fetchBoot(ctx context.Context, cl *cli) (*analyze.Boot, error) {
	var c *analyze.Collector
	s, _, err := session.StartSynced(ctx, cl.conn, "analyze", func(t *dataspace.Turn, cfg *dataspace.Ref) error {
		c = analyze.Collect(t, cfg)
		return nil
	}, nil)
	if err != nil {
		return nil, err
	}
	defer s.Close()
	// The collector's entities ran in the session's actor, before the
	// sync's answer.
	b, err := c.Boot(time.Now())
	if errors.Is(err, analyze.ErrNoHistory) {
		return nil, fmt.Errorf("%s keeps no service history (no <history-origin …>): is it a syndicate-go server?", s.What)
	}
	return b, err
}

// oneUnit resolves critical-chain's SERVICE among the recorded services.
func oneUnit(b *analyze.Boot, text string) (*analyze.Unit, error) {
	a, err := readServiceArg(text)
	if err != nil {
		return nil, err
	}
	var names []preserves.Value
	for _, u := range b.Units {
		names = append(names, u.Value)
	}
	sel, err := a.selectFrom(names)
	if err != nil {
		return nil, err
	}
	if len(sel) > 1 {
		return nil, fmt.Errorf("analyze critical-chain: %s matches %d services; name one", text, len(sel))
	}
	return b.Units[preserves.FormatText(sel[0])], nil
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// analyzeOpts are the flags of analyze's subcommands.
type analyzeOpts struct{ json, svg, all bool }

func (cl *cli) analyze(ctx context.Context, sub string, o analyzeOpts, args []string) error {
	jsonF, svg := o.json, o.svg
	b, err := fetchBoot(ctx, cl)
	if err != nil {
		return err
	}
	if !o.all {
		b.HideBuiltins()
	}
	switch sub {
	case "blame":
		if !jsonF {
			analyze.WriteBlame(cl.stdout, b)
			break
		}
		up, rest := analyze.BlameOrder(b)
		out := []analyze.JSONUnit{}
		for _, u := range append(up, rest...) {
			out = append(out, b.JSONOf(u))
		}
		err = writeJSON(cl.stdout, out)
	case "critical-chain":
		var u *analyze.Unit
		if len(args) == 1 {
			if u, err = oneUnit(b, args[0]); err != nil {
				return err
			}
		} else if u = analyze.LastUp(b); u == nil {
			return fmt.Errorf("analyze critical-chain: no service has become ready yet")
		}
		chain := analyze.CriticalChain(b, u)
		if !jsonF {
			analyze.WriteChain(cl.stdout, b, chain)
			break
		}
		out := []analyze.JSONUnit{}
		for _, l := range chain {
			j := b.JSONOf(l.Unit)
			j.Depth = l.Depth
			out = append(out, j)
		}
		err = writeJSON(cl.stdout, out)
	case "plot":
		_, err = io.WriteString(cl.stdout, analyze.PlotSVG(b))
	case "graph":
		if svg {
			_, err = io.WriteString(cl.stdout, analyze.GraphSVG(b))
		} else {
			_, err = io.WriteString(cl.stdout, analyze.GraphDOT(b))
		}
	}
	return err
}
