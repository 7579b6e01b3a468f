package caveat

import (
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
		case nil:
			return errorf(ErrNilValue, "%s is nil", where)
		}
	}
	return nil
}

func validateRewrite(r Rewrite, where string) error {
	n, err := countBinds(r.Pattern, false, where)
	if err != nil {
		return err
	}
	return validateTemplate(r.Template, n, where)
}

// countBinds returns the number of binds in p, failing on a bind that sits
// under a negation.
func countBinds(p Pattern, negated bool, where string) (int, error) {
	switch x := p.(type) {
	case PBind:
		if negated {
			return 0, errorf(ErrBindingUnderNegation, "%s: <bind …> inside <not …>", where)
		}
		n, err := countBinds(x.Pattern, negated, where)
		return n + 1, err
	case PNot:
		return countBinds(x.Pattern, true, where)
	case PAnd:
		return countAll(x.Patterns, negated, where)
	case PRec:
		return countAll(x.Fields, negated, where)
	case PArr:
		return countAll(x.Items, negated, where)
	case PDict:
		total := 0
		for _, e := range x.Entries {
			n, err := countBinds(e.Pattern, negated, where)
			if err != nil {
				return 0, err
			}
			total += n
		}
		return total, nil
	}
	return 0, nil
}

func countAll(ps []Pattern, negated bool, where string) (int, error) {
	total := 0
	for _, q := range ps {
		n, err := countBinds(q, negated, where)
		if err != nil {
			return 0, err
		}
		total += n
	}
	return total, nil
}

func validateTemplate(t Template, binds int, where string) error {
	switch x := t.(type) {
	case TRef:
		if x.big != nil || x.Binding < 0 || x.Binding >= int64(binds) {
			n := fmt.Sprint(x.Binding)
			if x.big != nil {
				n = x.big.(*preserves.BigInt).Big().String()
			}
			return errorf(ErrUnboundRef, "%s: <ref %s>, but the pattern binds %d value(s)", where, n, binds)
		}
	case TAttenuate:
		if err := validateTemplate(x.Template, binds, where); err != nil {
			return err
		}
		return validateList(x.Caveats, where+": attenuate ")
	case TRec:
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
			if err := validateTemplate(e.Template, binds, where); err != nil {
				return err
			}
		}
	}
	return nil
}
