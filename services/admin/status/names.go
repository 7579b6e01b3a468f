package status

// One way to name a service, in every command that takes one (status,
// logs, restart, analyze, stop, start, kill): the argument is Preserves
// text, read as a pattern over service names.
//
//   - A bare symbol S (`web`) names the service called S, or `<L S …>` for
//     any label L: `web` is `<daemon web>` when that is the only match,
//     and an error listing the candidates when there are several.
//   - A pattern with wildcards (`<daemon _>`) names every service it
//     matches.
//   - Any other value names that service exactly.
//
// A name that matches nothing is an error (*NoServiceError) with a "did
// you mean" suggestion drawn from the known names, so a typo is never a
// silent no-op.

import (
	"fmt"
	"slices"
	"strings"

	"github.com/syndicate-go/syndicate/dataspace/pattern"
	"github.com/syndicate-go/syndicate/preserves"
	"github.com/syndicate-go/syndicate/preserves/schema"
	"github.com/syndicate-go/syndicate/services"
)

// NoServiceError: a service argument matched no known service.
type NoServiceError struct {
	Arg        string // the argument as typed
	Suggestion string // the closest known name, or ""
}

func (e *NoServiceError) Error() string {
	msg := "no service matches " + e.Arg
	if e.Suggestion != "" {
		msg += " (did you mean " + e.Suggestion + "?)"
	}
	return msg
}

// AmbiguousError: a bare symbol matched several services.
type AmbiguousError struct {
	Arg        string
	Candidates []string
}

func (e *AmbiguousError) Error() string {
	return fmt.Sprintf("%s names %d services: %s; write the one you mean", e.Arg, len(e.Candidates), strings.Join(e.Candidates, ", "))
}

// Select resolves a service argument against the known names. arg is
// the argument as typed, v the value read from it (without annotations)
// and p its pattern (see the package's rules above). It returns the names
// matched, in Preserves order: never none (that is a *NoServiceError).
func Select(arg string, v preserves.Value, p pattern.Pattern, names []preserves.Value) ([]preserves.Value, error) {
	var out []preserves.Value
	if sym, ok := v.(preserves.Symbol); ok && !isWildSymbol(sym) {
		for _, n := range names {
			if preserves.Equal(n, sym) {
				out = append(out, n)
			} else if r, ok := n.(*preserves.Record); ok && len(r.Fields) > 0 && preserves.Equal(r.Fields[0], sym) {
				out = append(out, n)
			}
		}
		if len(out) > 1 {
			// An exact name wins over records that carry it.
			if i := slices.IndexFunc(out, func(n preserves.Value) bool { return preserves.Equal(n, sym) }); i >= 0 {
				return out[i : i+1], nil
			}
			sortNames(out)
			var texts []string
			for _, n := range out {
				texts = append(texts, services.ShortName(n))
			}
			return nil, &AmbiguousError{Arg: arg, Candidates: texts}
		}
	} else {
		for _, n := range names {
			if _, ok := pattern.Match(p, n); ok {
				out = append(out, n)
			}
		}
	}
	if len(out) == 0 {
		return nil, &NoServiceError{Arg: arg, Suggestion: suggest(arg, names)}
	}
	sortNames(out)
	return out, nil
}

func sortNames(ns []preserves.Value) { slices.SortFunc(ns, preserves.Compare) }

func isWildSymbol(s preserves.Symbol) bool {
	return s == "_" || strings.HasPrefix(string(s), "?")
}

// suggest is the known name closest to arg: as a whole, or (for a bare
// word) as the first field of a record, which is then what to type.
func suggest(arg string, names []preserves.Value) string {
	var whole, bare []string
	for _, n := range names {
		whole = append(whole, preserves.FormatText(n))
		if r, ok := n.(*preserves.Record); ok && len(r.Fields) > 0 {
			if s, ok := r.Fields[0].(preserves.Symbol); ok {
				bare = append(bare, string(s))
			}
		}
	}
	if s := schema.Suggest(arg, bare); s != "" {
		return s
	}
	return schema.Suggest(arg, whole)
}
