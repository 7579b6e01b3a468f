package caveat

import (
	"errors"
	"fmt"

	"github.com/syndicate-go/syndicate/preserves"
)

// Validate checks a caveat list before it is used to attenuate anything:
// in every rewrite (including those inside `or` and, recursively, inside
// `attenuate` templates) the pattern has no `bind` under a `not`
// ([ErrBindingUnderNegation]) and every `<ref n>` of the template satisfies
// 0 ≤ n < the number of binds in the pattern ([ErrUnboundRef]). Reject and
// unknown caveats are always valid. The first problem found is returned.
func Validate(cs []Caveat) error {
	return validateList(cs, "")
}

func validateList(cs []Caveat, path string) error {
	for i, c := range cs {
		where := fmt.Sprintf("%scaveat %d", path, i)
		switch x := c.(type) {
		case Rewrite:
			if err := validateRewrite(x, where); err != nil {
				return err
			}
		case Alts:
			for j, r := range x.Alternatives {
				if err := validateRewrite(r, fmt.Sprintf("%s alternative %d", where, j)); err != nil {
					return err
				}
			}
		case Reject:
			// Binds are harmless in a reject (nothing is instantiated),
			// so only completeness is checked.
			if _, err := countBinds(x.Pattern, false, false, where); err != nil {
				return err
			}
		case Unknown:
			if x.Value == nil {
				return errorf(ErrNilValue, "%s: unknown caveat without a value", where)
			}
		case nil:
			return errorf(ErrNilValue, "%s is nil", where)
		}
	}
	return nil
}

func validateRewrite(r Rewrite, where string) error {
	n, err := countBinds(r.Pattern, false, true, where)
	if err == nil {
		err = validateTemplate(r.Template, n, where)
	}
	// Name the innermost offending rewrite, which is complete (no nils)
	// unless the error says otherwise.
	var e *Error
	if errors.As(err, &e) && e.Err != ErrNilValue && !e.named {
		e.Msg += " in " + preserves.Show(ToValue(r))
		e.named = true
	}
	return err
}

// ErrBindingUnderNegation: a rewrite pattern has a `bind` inside `not`.
var ErrBindingUnderNegation = errors.New("caveat: binding under negation")

// countBinds returns the number of binds in p. With strict, a bind under a
// negation is an error. Hand-built patterns with nil parts are refused with
// ErrNilValue, so that ToValue and Apply never meet them.
func countBinds(p Pattern, negated, strict bool, where string) (int, error) {
	switch x := p.(type) {
	case nil:
		return 0, errorf(ErrNilValue, "%s: missing pattern", where)
	case PBind:
		if negated && strict {
			return 0, errorf(ErrBindingUnderNegation, "%s: <bind …> inside <not …>", where)
		}
		n, err := countBinds(x.Pattern, negated, strict, where)
		return n + 1, err
	case PNot:
		return countBinds(x.Pattern, true, strict, where)
	case PAnd:
		return countAll(x.Patterns, negated, strict, where)
	case PRec:
		if x.Label == nil {
			return 0, errorf(ErrNilValue, "%s: record pattern without a label", where)
		}
		return countAll(x.Fields, negated, strict, where)
	case PLabel:
		if x.Label == nil {
			return 0, errorf(ErrNilValue, "%s: record pattern without a label", where)
		}
	case PArr:
		return countAll(x.Items, negated, strict, where)
	case PDict:
		total := 0
		for _, e := range x.Entries {
			if e.Key == nil {
				return 0, errorf(ErrNilValue, "%s: dictionary pattern with a nil key", where)
			}
			n, err := countBinds(e.Pattern, negated, strict, where)
			if err != nil {
				return 0, err
			}
			total += n
		}
		return total, nil
	case Lit:
		if x.Value == nil {
			return 0, errorf(ErrNilValue, "%s: literal without a value", where)
		}
	}
	return 0, nil
}

func countAll(ps []Pattern, negated, strict bool, where string) (int, error) {
	total := 0
	for _, q := range ps {
		n, err := countBinds(q, negated, strict, where)
		if err != nil {
			return 0, err
		}
		total += n
	}
	return total, nil
}

// ErrUnboundRef: a template's `<ref n>` names no binding of its pattern.
var ErrUnboundRef = errors.New("caveat: unbound reference")

func validateTemplate(t Template, binds int, where string) error {
	switch x := t.(type) {
	case nil:
		return errorf(ErrNilValue, "%s: missing template", where)
	case Lit:
		if x.Value == nil {
			return errorf(ErrNilValue, "%s: literal without a value", where)
		}
	case TRef:
		if x.big != nil || x.Binding < 0 || x.Binding >= int64(binds) {
			n := fmt.Sprint(x.Binding)
			if x.big != nil {
				n = x.big.String()
			}
			return errorf(ErrUnboundRef, "%s: <ref %s>, but the pattern binds %d value(s)", where, n, binds)
		}
	case TAttenuate:
		if err := validateTemplate(x.Template, binds, where); err != nil {
			return err
		}
		return validateList(x.Caveats, where+": attenuate ")
	case TRec:
		if x.Label == nil {
			return errorf(ErrNilValue, "%s: record template without a label", where)
		}
		for _, f := range x.Fields {
			if err := validateTemplate(f, binds, where); err != nil {
				return err
			}
		}
	case TArr:
		for _, f := range x.Items {
			if err := validateTemplate(f, binds, where); err != nil {
				return err
			}
		}
	case TDict:
		for _, e := range x.Entries {
			if e.Key == nil {
				return errorf(ErrNilValue, "%s: dictionary template with a nil key", where)
			}
			if err := validateTemplate(e.Template, binds, where); err != nil {
				return err
			}
		}
	}
	return nil
}
