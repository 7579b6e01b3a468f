package main

// Service arguments: every command that takes a SERVICE reads it the same
// way (status.Select): a bare word, a name, or a pattern, resolved
// against the services the server knows, with "did you mean" when nothing
// matches.

import (
	"context"
	"slices"
	"time"

	"github.com/spf13/cobra"

	"github.com/syndicate-go/syndicate/dataspace"
	"github.com/syndicate-go/syndicate/dataspace/pattern"
	"github.com/syndicate-go/syndicate/preserves"
	"github.com/syndicate-go/syndicate/services"
	"github.com/syndicate-go/syndicate/services/admin/session"
	"github.com/syndicate-go/syndicate/services/admin/status"
)

// serviceArg is a SERVICE argument as read.
type serviceArg struct {
	text string
	v    preserves.Value // without annotations
	p    pattern.Pattern
	wild bool // a pattern with wildcards, rather than one name
}

func readServiceArg(text string) (serviceArg, error) {
	positioned, v, err := readArg("service", text)
	if err != nil {
		return serviceArg{}, err
	}
	p, err := toPattern(positioned)
	if err != nil {
		return serviceArg{}, err
	}
	// A pattern with no `_` or capture matches one value: one name.
	_, literal := pattern.Drop(p)
	return serviceArg{text: text, v: v, p: p, wild: !literal}, nil
}

// select resolves the argument against names.
func (a serviceArg) selectFrom(names []preserves.Value) ([]preserves.Value, error) {
	return status.Select(a.text, a.v, a.p, names)
}

// serviceNames fetches the names of the services the server knows (as
// status lists them).
func (cl *cli) serviceNames(ctx context.Context) ([]preserves.Value, error) {
	m := status.NewModel(nil)
	m.ShowAll() // a declared daemon nothing requires has a name too
	s, _, err := session.StartSynced(ctx, cl.conn, "names", func(t *dataspace.Turn, cfg *dataspace.Ref) error {
		m.Subscribe(t, cfg, nil)
		return nil
	}, nil)
	if err != nil {
		return nil, err
	}
	// Before Close: closing retracts what the session saw.
	var names []preserves.Value
	for _, svc := range m.Snapshot() {
		names = append(names, svc.Value())
	}
	s.Close()
	return names, nil
}

// resolve reads a SERVICE argument and resolves it at the server.
func (cl *cli) resolve(ctx context.Context, text string) (serviceArg, []preserves.Value, error) {
	a, err := readServiceArg(text)
	if err != nil {
		return a, nil, err
	}
	names, err := cl.serviceNames(ctx)
	if err != nil {
		return a, nil, err
	}
	sel, err := a.selectFrom(names)
	return a, sel, err
}

// resolveOne is resolve for commands that act on one service.
func (cl *cli) resolveOne(ctx context.Context, text string) (preserves.Value, error) {
	_, sel, err := cl.resolve(ctx, text)
	if err != nil {
		return nil, err
	}
	if len(sel) > 1 {
		var texts []string
		for _, n := range sel {
			texts = append(texts, preserves.FormatText(n))
		}
		return nil, &status.AmbiguousError{Arg: text, Candidates: texts}
	}
	return sel[0], nil
}

// completeServices completes a SERVICE argument from the running server:
// the bare word of every `<L word>` that is the only one to carry it, and
// every name in full. With no server (or a slow one) it offers nothing.
func (cl *cli) completeServices(cmd *cobra.Command, args []string, _ string) ([]string, cobra.ShellCompDirective) {
	if len(args) > 0 {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	cl.conn.Timeout = min(cl.conn.Timeout, 2*time.Second)
	names, err := cl.serviceNames(cmd.Context())
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	// Built-ins are hidden, and a name with a capability cannot be
	// typed.
	names = slices.DeleteFunc(names, func(n preserves.Value) bool { return services.IsBuiltin(n) || hasEmbedded(n) })
	bare := map[string]int{}
	for _, n := range names {
		if r, ok := n.(*preserves.Record); ok && len(r.Fields) > 0 {
			if s, ok := r.Fields[0].(preserves.Symbol); ok {
				bare[string(s)]++
			}
		}
	}
	var out []string
	for w, n := range bare {
		if n == 1 {
			out = append(out, w)
		}
	}
	slices.Sort(out)
	for _, n := range names {
		out = append(out, preserves.FormatText(n))
	}
	return out, cobra.ShellCompDirectiveNoFileComp
}

func hasEmbedded(v preserves.Value) bool {
	if _, ok := v.(*preserves.Embedded); ok {
		return true
	}
	return preserves.AnyPart(v, hasEmbedded)
}
