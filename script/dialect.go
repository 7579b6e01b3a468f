package script

import (
	"fmt"
	"slices"
	"strings"

	"github.com/syndicate-go/syndicate/preserves"
)

// Dialects (docs/language.md, "Dialects").
//
// Caveat patterns have two readings. This dialect's, shared with the
// classic reference server, is the script pattern notation of `?` and `??`
// (`_`, `?x`, `$x`, everything else literal). Other dialects — the
// wire-level sturdy.prs Pattern language, and a fork of the reference used
// by synit systems — give records labelled `not`, `and`, `rec`, `arr`,
// `dict`, `lit`, `bind` and `_` a structural meaning. A script written for
// them reads here as a literal that never occurs, so its attenuation
// restricts nothing: the parser warns about every such pattern (ErrDialect)
// and suggests this dialect's spelling.
//
// `dialect sturdy-caveats`, first in a file, switches that file's caveat
// patterns to the structural reading. Each pattern is then checked and
// turned into a value expression that evaluates to its sturdy.prs form
// (node SturdyPat), which the runtime parses like any caveat received over
// the wire. The fork's shorthands are accepted where their meaning is
// unambiguous, and anything else is an error: a structural pattern is never
// guessed at, since a wrong guess could only make a capability weaker than
// its author meant.

// DialectSturdyCaveats is the name of the structural caveat-pattern dialect.
const DialectSturdyCaveats = "sturdy-caveats"

// foreignLabels are the labels of sturdy.prs Pattern records.
var foreignLabels = map[string]bool{
	"not": true, "and": true, "rec": true, "arr": true, "dict": true, "lit": true, "bind": true, "_": true,
}

// atomKinds are the bare symbols of sturdy.prs PAtom and PEmbedded.
var atomKinds = map[string]bool{
	"Boolean": true, "Double": true, "SignedInteger": true, "String": true,
	"ByteString": true, "Symbol": true, "Embedded": true,
}

// directive parses `dialect NAME` at toks[i] (the leading directives of a
// file) and returns the index after it.
func (p *parser) directive(toks []preserves.Value, i int) int {
	pos := p.pos(toks[i])
	if i+1 >= len(toks) {
		p.errorf(pos, "dialect needs a name (%s)", DialectSturdyCaveats)
		return i + 1
	}
	name, ok := symbolOf(toks[i+1])
	switch {
	case !ok || name != DialectSturdyCaveats:
		p.errorf(p.pos(toks[i+1]), "unknown dialect %s (the one dialect is %s)", render(toks[i+1]), DialectSturdyCaveats)
	case p.dialect != "":
		p.errorf(pos, "dialect %s is already set", p.dialect)
	default:
		p.dialect = name
	}
	return i + 2
}

// isDirective reports whether tok is the `dialect` keyword.
func isDirective(tok preserves.Value) bool {
	s, ok := symbolOf(tok)
	return ok && s == "dialect"
}

// ---------------------------------------------------------------------------
// Warnings: structural forms read literally

// caveatUse is a caveat pattern of a classic-dialect file, kept until the
// end of the file: whether the directive is a fix that works depends on
// every caveat of the file (finishDialect).
type caveatUse struct {
	caveat  preserves.Value // the whole <kind …> caveat
	pattern preserves.Value
	kind    string          // reject, accept or rewrite
	foreign preserves.Value // its outermost structural form, if any
}

// notePattern records the caveat pattern v of caveat cv, read in this
// dialect.
func (p *parser) notePattern(cv, v preserves.Value, kind string) {
	at, _ := findForeign(v)
	p.caveats = append(p.caveats, caveatUse{caveat: cv, pattern: v, kind: kind, foreign: at})
}

// finishDialect warns about every caveat pattern of the file that contains
// a record other dialects read structurally, with a suggestion that works
// as written, its edits in the warning's Fixes: this dialect's spelling of
// the caveat when there is one; else the directive, with the file's other
// caveat patterns spelt structurally when they need to be (under the
// directive every caveat pattern of the file is structural). first is the
// file's first instruction, before which the directive goes.
func (p *parser) finishDialect(first preserves.Value) {
	var classic []Fix // the other patterns' structural spellings
	spellable := true
	for _, c := range p.caveats {
		if c.foreign != nil {
			if !readsStructurally(c.pattern) {
				spellable = false // its intent is unclear: no directive
				break
			}
			continue
		}
		s, ok := structural(c.pattern)
		if !ok {
			spellable = false
			break
		}
		if text := spell(s); text != spell(preserves.Strip(c.pattern)) {
			classic = append(classic, Fix{Pos: p.valuePos(c.pattern), Text: text})
		}
	}
	directive := []Fix{{Pos: p.valuePos(first), Insert: true, Text: "dialect " + DialectSturdyCaveats + "\n"}}
	for _, c := range p.caveats {
		if c.foreign == nil {
			continue
		}
		form := preserves.Strip(c.foreign)
		l, _ := symbolOf(form.(*preserves.Record).Label)
		verb := "passes"
		if c.kind == "reject" {
			verb = "blocks"
		}
		msg := render(c.foreign) + " is a literal here: this dialect gives <" + l + " …> no structural meaning " +
			"(sturdy.prs and other servers' scripts do), so this <" + c.kind + "> only " + verb +
			" values equal to it and the attenuation does not restrict what it appears to"
		var fixes []Fix
		switch s := suggest(c.kind, preserves.Strip(c.pattern)); {
		case s != "" && !strings.Contains(s, "…"):
			msg += "; in this dialect write " + s
			fixes = []Fix{{Pos: p.valuePos(c.caveat), Text: s}}
			if spellable && len(classic) == 0 {
				msg += ", or start the file with `dialect " + DialectSturdyCaveats + "` to read caveat patterns structurally"
			}
		case spellable:
			msg += "; start the file with `dialect " + DialectSturdyCaveats + "` to read caveat patterns structurally"
			if len(classic) > 0 {
				msg += ", and spell the file's other caveat patterns structurally too: " + p.listFixes(classic)
			}
			fixes = append(directive, classic...)
		case s != "":
			msg += "; in this dialect write " + s + " (… stands for one _ per field: one alternative per field count in use)"
		default:
			msg += "; neither this dialect nor `dialect " + DialectSturdyCaveats + "` reads it as written: spell it in one of them (docs/language.md, \"Dialects\")"
		}
		p.warns = append(p.warns, &Error{Pos: p.pos(c.foreign), Msg: msg, Err: ErrDialect, Warning: true, Fixes: fixes})
	}
}

// readsStructurally reports whether the pattern v is a valid structural
// pattern, as `dialect sturdy-caveats` would read it.
func readsStructurally(v preserves.Value) bool {
	q := &parser{dialect: DialectSturdyCaveats}
	q.sturdyPattern(v)
	return len(q.errs) == 0
}

// listFixes names the edits of fs for a message, the first three in full.
func (p *parser) listFixes(fs []Fix) string {
	var parts []string
	for i, f := range fs {
		if i == 3 {
			parts = append(parts, fmt.Sprintf("and %d more", len(fs)-3))
			break
		}
		parts = append(parts, fmt.Sprintf("%d:%d as %s", f.Pos.Line, f.Pos.Col, f.Text))
	}
	return strings.Join(parts, ", ")
}

// valuePos is where v itself starts, after any comment attached to it.
func (p *parser) valuePos(v preserves.Value) preserves.Pos {
	if pos := p.pos(preserves.Unwrap(v)); pos.IsValid() {
		return pos
	}
	return p.pos(v)
}

// structural spells the caveat pattern v, written in this dialect, in the
// structural notation of `dialect sturdy-caveats`, with the same meaning:
// a record <L P…> is <rec L [P…]>, a sequence <arr […]>, a dictionary
// <dict {…}>, any other literal <lit V>; `_`, `?x`, `<?x P>` and `$x`
// read the same in both. An attenuation or a set cannot be spelt.
func structural(v preserves.Value) (preserves.Value, bool) {
	switch x := preserves.Strip(v).(type) {
	case preserves.Symbol:
		s := string(x)
		switch {
		case s == "_" || len(s) > 1 && (s[0] == '?' || s[0] == '$'):
			return x, true
		case len(s) > 0 && s[0] == '=':
			return preserves.Rec("lit", preserves.Symbol(s[1:])), true
		}
		return preserves.Rec("lit", x), true
	case *preserves.Record:
		l, _ := symbolOf(x.Label)
		if l == "*" || l == "_" {
			return nil, false
		}
		fs, ok := structuralAll(x.Fields)
		if !ok {
			return nil, false
		}
		if len(l) > 1 && l[0] == '?' && len(fs) == 1 {
			return preserves.NewRecord(x.Label, fs...), true
		}
		return preserves.Rec("rec", x.Label, preserves.Sequence(fs)), true
	case preserves.Sequence:
		items, ok := structuralAll(x)
		return preserves.Rec("arr", preserves.Sequence(items)), ok
	case *preserves.Dictionary:
		d, ok := mapDict(x, structural)
		if !ok {
			return nil, false
		}
		return preserves.Rec("dict", d), true
	case *preserves.Set, *preserves.Embedded:
		return nil, false
	default:
		return preserves.Rec("lit", x), true
	}
}

// mapDict applies f to the values of d, failing when f fails.
func mapDict(d *preserves.Dictionary, f func(preserves.Value) (preserves.Value, bool)) (*preserves.Dictionary, bool) {
	es := make([]preserves.DictEntry, 0, d.Len())
	for _, e := range d.Entries() {
		v, ok := f(e.Value)
		if !ok {
			return nil, false
		}
		es = append(es, preserves.DictEntry{Key: e.Key, Value: v})
	}
	return preserves.NewDictionary(es...), true
}

func structuralAll(vs []preserves.Value) ([]preserves.Value, bool) { return mapAll(vs, structural) }

// mapAll applies f to each of vs, failing when f fails.
func mapAll(vs []preserves.Value, f func(preserves.Value) (preserves.Value, bool)) (preserves.Sequence, bool) {
	out := make(preserves.Sequence, len(vs))
	for i, v := range vs {
		var ok bool
		if out[i], ok = f(v); !ok {
			return nil, false
		}
	}
	return out, true
}

// findForeign returns the outermost record of v labelled with a structural
// form, in pre-order. The first field of `<Observe PATTERN OBSERVER>` is
// skipped: it is a dataspace pattern value, whose `<bind …>`, `<rec …>`,
// `<lit …>` and `<_>` records are what an Observe assertion really holds,
// so read literally they mean what they say (`<reject <Observe <bind _>
// _>>` refuses observers that capture whole assertions).
func findForeign(v preserves.Value) (preserves.Value, bool) {
	switch x := preserves.Unwrap(v).(type) {
	case *preserves.Record:
		if l, ok := symbolOf(x.Label); ok && foreignLabels[l] {
			return v, true
		}
		if at, ok := findForeign(x.Label); ok {
			return at, true
		}
		fields := x.Fields
		if l, ok := symbolOf(x.Label); ok && l == "Observe" && len(fields) == 2 {
			fields = fields[1:]
		}
		for _, f := range fields {
			if at, ok := findForeign(f); ok {
				return at, true
			}
		}
	case preserves.Sequence:
		for _, f := range x {
			if at, ok := findForeign(f); ok {
				return at, true
			}
		}
	case *preserves.Dictionary:
		for _, e := range x.Entries() {
			if at, ok := findForeign(e.Value); ok {
				return at, true
			}
		}
	}
	return nil, false
}

// knownArity gives the field count of well-known records, so that the
// fork's label-only `<rec L>` can be suggested as a script pattern.
var knownArity = map[string]int{
	"Observe": 2, "service-state": 2, "service-object": 2, "depends-on": 2,
	"require-service": 1, "run-service": 1, "restart-service": 1,
	"milestone": 1, "daemon": 2, "log": 2,
}

// suggest spells the caveat `<kind v>`, whose pattern v was written
// structurally, in this dialect; "" when it cannot be.
func suggest(kind string, v preserves.Value) string {
	switch kind {
	case "reject":
		// <reject <not A>> and <reject <and <not A> <not B> …>> pass only
		// A, B, …: an <or> of accepts.
		if alts, ok := negations(v); ok {
			out := make(preserves.Sequence, len(alts))
			for i, a := range alts {
				s, ok := toScript(a)
				if !ok {
					return ""
				}
				out[i] = preserves.Rec("accept", s)
			}
			return spell(preserves.Rec("or", out))
		}
	case "accept":
	default:
		return ""
	}
	s, ok := toScript(v)
	if !ok {
		return ""
	}
	return spell(preserves.Rec(kind, s))
}

// spell is the text of a suggestion, its `…` placeholders unquoted.
func spell(v preserves.Value) string {
	return strings.ReplaceAll(preserves.FormatText(v), "|…|", "…")
}

// negations returns [A] for `<not A>` and [A B …] for `<and <not A> <not B>
// …>` (or `<and [<not A> …]>`).
func negations(v preserves.Value) ([]preserves.Value, bool) {
	r, ok := v.(*preserves.Record)
	if !ok {
		return nil, false
	}
	switch l, _ := symbolOf(r.Label); {
	case l == "not" && len(r.Fields) == 1:
		return []preserves.Value{r.Fields[0]}, true
	case l == "and" && len(r.Fields) > 0:
		items := r.Fields
		if s, ok := r.Fields[0].(preserves.Sequence); ok && len(r.Fields) == 1 {
			items = s
		}
		var out []preserves.Value
		for _, it := range items {
			a, ok := negations(it)
			if !ok || len(a) != 1 {
				return nil, false
			}
			out = append(out, a[0])
		}
		return out, len(out) > 0
	}
	return nil, false
}

// toScript translates a structural pattern to this dialect's notation,
// when it has no `not`, `and` or atom-kind test. A `<rec L>` of unknown
// field count becomes `<L …>`, to be completed by the reader.
func toScript(v preserves.Value) (preserves.Value, bool) {
	switch x := v.(type) {
	case preserves.Symbol:
		if atomKinds[string(x)] {
			return nil, false
		}
		return x, true
	case *preserves.Record:
		l, _ := symbolOf(x.Label)
		if !foreignLabels[l] {
			// This dialect's record pattern, perhaps with structural
			// forms inside.
			fs, ok := toScriptSeq(preserves.Sequence(x.Fields))
			if !ok {
				return nil, false
			}
			return preserves.NewRecord(x.Label, fs...), true
		}
		switch {
		case l == "_" && len(x.Fields) == 0:
			return preserves.Symbol("_"), true
		case l == "bind" && len(x.Fields) == 1:
			return toScript(x.Fields[0]) // a capture changes nothing here
		case l == "lit" && len(x.Fields) == 1:
			if plain(x.Fields[0], modePattern) {
				return x.Fields[0], true
			}
			if s, ok := x.Fields[0].(preserves.Symbol); ok {
				return preserves.Symbol("=" + string(s)), true
			}
		case l == "rec" && len(x.Fields) == 1 || l == "rec" && len(x.Fields) == 2 && isEmptyDict(x.Fields[1]):
			label, _ := symbolOf(x.Fields[0])
			n, ok := knownArity[label]
			if !ok {
				return preserves.NewRecord(x.Fields[0], preserves.Symbol("…")), true
			}
			return preserves.NewRecord(x.Fields[0], slices.Repeat([]preserves.Value{preserves.Symbol("_")}, n)...), true
		case l == "rec" && len(x.Fields) == 2:
			items, ok := toScriptSeq(x.Fields[1])
			if ok {
				return preserves.NewRecord(x.Fields[0], items...), true
			}
		case l == "arr" && len(x.Fields) == 1:
			items, ok := toScriptSeq(x.Fields[0])
			if ok {
				return preserves.Sequence(items), true
			}
		case l == "dict" && len(x.Fields) == 1:
			d, ok := x.Fields[0].(*preserves.Dictionary)
			if !ok {
				return nil, false
			}
			return mapDict(d, toScript)
		}
		return nil, false
	case preserves.Sequence:
		return toScriptSeq(x)
	}
	return v, true
}

func toScriptSeq(v preserves.Value) (preserves.Sequence, bool) {
	s, ok := v.(preserves.Sequence)
	if !ok {
		return nil, false
	}
	return mapAll(s, toScript)
}

func isEmptyDict(v preserves.Value) bool {
	d, ok := preserves.Unwrap(v).(*preserves.Dictionary)
	return ok && d.Len() == 0
}

// ---------------------------------------------------------------------------
// The structural reading

// sturdyPattern parses a caveat pattern in the sturdy-caveats dialect.
func (p *parser) sturdyPattern(v preserves.Value) *SturdyPat {
	sp := &SturdyPat{At: p.pos(v)}
	sp.Value = p.spat(v, sp, false)
	return sp
}

// spat returns a value expression for the sturdy.prs form of the pattern v,
// appending its binders to sp (negated: inside a `not`).
func (p *parser) spat(v preserves.Value, sp *SturdyPat, negated bool) Expr {
	pos := p.pos(v)
	bind := func(name string, sub preserves.Value) Expr {
		if negated {
			p.errorf(pos, "a binder inside <not …> captures nothing (sturdy.prs forbids it)")
		}
		sp.Binders = append(sp.Binders, name)
		var inner Expr
		if sub == nil {
			inner = p.mkRec(pos, "_")
		} else {
			inner = p.spat(sub, sp, negated)
		}
		return p.mkRec(pos, "bind", inner)
	}
	switch x := preserves.Unwrap(v).(type) {
	case preserves.Symbol:
		s := string(x)
		switch {
		case s == "_":
			return p.mkRec(pos, "_")
		case len(s) > 1 && s[0] == '?':
			return bind(s[1:], nil)
		case s != "" && s[0] == '$':
			return p.mkRec(pos, "lit", p.varRef(pos, s[1:], modeValue, nil))
		case atomKinds[s]:
			return p.lit(pos, x, nil)
		}
		p.errorf(pos, "bare symbol %s is not a sturdy.prs pattern: write <lit %s> for the symbol, or <_> for anything", render(v), render(v))
		return p.mkRec(pos, "_")
	case *preserves.Record:
		l, _ := symbolOf(x.Label)
		n := len(x.Fields)
		switch {
		case l == "_" && n == 0:
			return p.mkRec(pos, "_")
		case l == "bind" && n == 1:
			return bind("", x.Fields[0])
		case len(l) > 1 && l[0] == '?' && n == 1:
			return bind(l[1:], x.Fields[0])
		case l == "not" && n == 1:
			return p.mkRec(pos, "not", p.spat(x.Fields[0], sp, true))
		case l == "and" && n == 1 && isSeq(x.Fields[0]):
			return p.mkRec(pos, "and", p.spatSeq(x.Fields[0], sp, negated))
		case l == "and" && n > 0:
			// The fork's variadic <and P Q …> is sturdy.prs <and [P Q …]>.
			return p.mkRec(pos, "and", p.spats(pos, x.Fields, sp, negated))
		case l == "rec" && (n == 1 || n == 2 && isEmptyDict(x.Fields[1])):
			// The fork's <rec L> and <rec L {}>: any record labelled L,
			// whatever its fields (a Go extension of sturdy.prs, which
			// other servers refuse as an unknown caveat: they fail closed).
			return p.mkRec(pos, "rec", p.expr(x.Fields[0], modeValue))
		case l == "rec" && n == 2 && isSeq(x.Fields[1]):
			return p.mkRec(pos, "rec", p.expr(x.Fields[0], modeValue), p.spatSeq(x.Fields[1], sp, negated))
		case l == "rec":
			p.errorf(pos, "%s is ambiguous: write <rec LABEL [P …]> for exactly those fields, or <rec LABEL> for any record labelled LABEL", render(v))
		case l == "arr" && n == 1 && isSeq(x.Fields[0]):
			return p.mkRec(pos, "arr", p.spatSeq(x.Fields[0], sp, negated))
		case l == "dict" && n == 1:
			d, ok := preserves.Unwrap(x.Fields[0]).(*preserves.Dictionary)
			if !ok {
				break
			}
			de := p.dicts.New()
			de.At = p.pos(x.Fields[0])
			for _, en := range d.Entries() {
				k := p.lit(p.pos(en.Key), p.strip(en.Key), nil)
				de.Entries = append(de.Entries, DictEntry{Key: k, Value: p.spat(en.Value, sp, negated)})
			}
			return p.mkRec(pos, "dict", de)
		case l == "lit" && n == 1:
			return p.mkRec(pos, "lit", p.expr(x.Fields[0], modeValue))
		}
		if foreignLabels[l] || l == "rec" {
			if l != "rec" {
				p.errorf(pos, "%s is not a sturdy.prs pattern (%s)", render(v), sturdyForms[l])
			}
		} else {
			p.errorf(pos, "%s is not a sturdy.prs pattern: with `dialect %s` caveat patterns are structural; write <rec %s [P …]> for the record, or <lit V> for a literal value",
				render(v), DialectSturdyCaveats, render(x.Label))
		}
	case preserves.Sequence:
		p.errorf(pos, "a sequence is not a sturdy.prs pattern: write <arr [P …]>, or <lit V> for a literal value")
	case *preserves.Dictionary:
		p.errorf(pos, "a dictionary is not a sturdy.prs pattern: write <dict {KEY: P …}>, or <lit V> for a literal value")
	default:
		p.errorf(pos, "%s is not a sturdy.prs pattern: write <lit %s>", render(v), render(v))
	}
	return p.mkRec(pos, "_")
}

// sturdyForms gives the accepted spellings of each structural form, for
// error messages.
var sturdyForms = map[string]string{
	"_":    "write <_>",
	"bind": "write <bind P>",
	"not":  "write <not P>",
	"and":  "write <and [P …]> or <and P Q …>",
	"arr":  "write <arr [P …]>",
	"dict": "write <dict {KEY: P …}>",
	"lit":  "write <lit V>",
}

func isSeq(v preserves.Value) bool {
	_, ok := preserves.Unwrap(v).(preserves.Sequence)
	return ok
}

func (p *parser) spatSeq(v preserves.Value, sp *SturdyPat, negated bool) Expr {
	return p.spats(p.pos(v), preserves.Unwrap(v).(preserves.Sequence), sp, negated)
}

func (p *parser) spats(at preserves.Pos, vs []preserves.Value, sp *SturdyPat, negated bool) Expr {
	s := p.seqs.New()
	s.At, s.Elems = at, p.exprs.Slice(len(vs))[:0]
	for _, v := range vs {
		s.Elems = append(s.Elems, p.spat(v, sp, negated))
	}
	return s
}

// mkRec builds `<label fields…>` as an expression.
func (p *parser) mkRec(at preserves.Pos, label string, fields ...Expr) *RecordExpr {
	r := p.recs.New()
	r.At, r.Label, r.Fields = at, p.lit(at, preserves.Symbol(label), nil), fields
	if r.Fields == nil {
		r.Fields = []Expr{}
	}
	return r
}
