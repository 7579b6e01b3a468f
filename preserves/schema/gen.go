package schema

import (
	"bytes"
	"fmt"
	"go/format"
	"math"
	"path"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"unicode"

	"github.com/syndicate-go/syndicate/preserves"
)

// Options configures code generation.
type Options struct {
	// ImportPrefix is the import path of the directory holding one
	// package per module: module [a b] lives in ImportPrefix/ab.
	ImportPrefix string
	// Packages overrides the package name (and directory) of a module,
	// keyed by its dotted path: {"schema": "meta"}.
	Packages map[string]string
	// Source names the generator's input in the header of each file.
	Source string
	// Exact lists modules (by dotted path) whose records must have
	// exactly the fields their definition lists: the schema language
	// allows more, and a module that must fail closed on anything it does
	// not understand (caveats) cannot.
	Exact map[string]bool
}

// PackageName is the Go package (and directory) of module p: the path
// joined and lower-cased, unless Options.Packages says otherwise. The go
// tool ignores files of a package named documentation (and main is no
// library), so those get the suffix "schema".
func (o Options) PackageName(p ModulePath) string {
	if n, ok := o.Packages[p.String()]; ok {
		return n
	}
	n := strings.ToLower(strings.Join(p, ""))
	if n == "documentation" || n == "main" {
		n += "schema"
	}
	return n
}

const runtimeImport = "github.com/syndicate-go/syndicate/preserves/schema"
const preservesImport = "github.com/syndicate-go/syndicate/preserves"

// Generate checks the bundle and returns the Go source of every module,
// keyed by the path of its file relative to the output directory
// ("gatekeeper/gatekeeper.go"). Every mistake found is reported, each
// with its position.
func Generate(b *Bundle, opts Options) (map[string][]byte, error) {
	if err := Check(b); err != nil {
		return nil, err
	}
	out := map[string][]byte{}
	for _, m := range b.Modules {
		g := &gen{b: b, m: m, opts: opts, imports: map[string]string{}, names: map[string]preserves.Pos{}}
		src, err := g.module()
		if err != nil {
			return nil, err
		}
		pkg := opts.PackageName(m.Path)
		out[pkg+"/"+pkg+".go"] = src
	}
	return out, nil
}

type gen struct {
	b       *Bundle
	m       *Module
	opts    Options
	body    bytes.Buffer
	imports map[string]string // import path → package name
	names   map[string]preserves.Pos
	lits    []string
	litIdx  map[string]string
	tmp     int
	// labels names the constant of each record label (labelNames), in
	// the order the module first uses them; labelIdx indexes it.
	labels   []recordLabel
	labelIdx map[preserves.Symbol]int
}

// recordLabel is one exported label constant and the types whose
// records carry it.
type recordLabel struct {
	name   string
	sym    preserves.Symbol
	owners []string
}

func (g *gen) p(format string, args ...any) {
	fmt.Fprintf(&g.body, format, args...)
	g.body.WriteByte('\n')
}

func (g *gen) fresh(prefix string) string {
	g.tmp++
	return prefix + strconv.Itoa(g.tmp)
}

func (g *gen) use(path string) string {
	name := path[strings.LastIndexByte(path, '/')+1:]
	g.imports[path] = name
	return name
}

// Mangle turns a label or binding into an exported Go identifier: split
// at every character that is not a letter or digit, capitalise each
// piece, join.
func Mangle(s string) string {
	var b strings.Builder
	up := true
	for _, r := range s {
		if !unicode.IsLetter(r) && !unicode.IsDigit(r) {
			up = true
			continue
		}
		if up {
			r = unicode.ToUpper(r)
			up = false
		}
		b.WriteRune(r)
	}
	out := b.String()
	if out != "" && unicode.IsDigit(rune(out[0])) {
		out = "X" + out
	}
	return out
}

func lowerFirst(s string) string { return strings.ToLower(s[:1]) + s[1:] }

func (g *gen) claim(name string, pos preserves.Pos) error {
	if name == "" {
		return &Error{Pos: pos, Msg: "a name that mangles to nothing"}
	}
	if prev, ok := g.names[name]; ok {
		return &Error{Pos: pos, Msg: fmt.Sprintf("the Go name %s is already taken (at %s)", name, prev)}
	}
	g.names[name] = pos
	return nil
}

func (g *gen) resolve(r *Ref) (*Module, *Definition, error) { return g.b.resolve(g.m, r) }

// qual is the Go name of definition d of module m as seen from g.m.
func (g *gen) qual(m *Module, d *Definition) string {
	if m == g.m {
		return Mangle(d.Name)
	}
	pkg := g.opts.PackageName(m.Path)
	return g.use(path.Join(g.opts.ImportPrefix, pkg)) + "." + Mangle(d.Name)
}

func (g *gen) parseFn(m *Module, d *Definition) string {
	q := g.qual(m, d)
	if i := strings.LastIndexByte(q, '.'); i >= 0 {
		return q[:i+1] + "Parse" + q[i+1:]
	}
	return "Parse" + q
}

func isUnitDef(d *Definition) bool {
	_, ok := d.Pattern.(Lit)
	return ok
}

// unit reports whether p's host type is unit: a literal, or a reference
// to a literal definition.
func (g *gen) unit(p Pattern) bool {
	switch x := p.(type) {
	case Lit:
		return true
	case *Ref:
		_, d, err := g.resolve(x)
		return err == nil && isUnitDef(d)
	}
	return false
}

// typeOf is the Go type of a simple pattern's host value; unit patterns
// are struct{}.
func (g *gen) typeOf(p Pattern) (string, error) {
	switch x := p.(type) {
	case Any:
		return g.use(preservesImport) + ".Value", nil
	case Atom:
		switch x.Kind {
		case Boolean:
			return "bool", nil
		case Double:
			return "float64", nil
		case SignedInteger:
			return "*" + g.use("math/big") + ".Int", nil
		case String:
			return "string", nil
		case ByteString:
			return "[]byte", nil
		case Symbol:
			return g.use(preservesImport) + ".Symbol", nil
		}
	case Embedded:
		return "any", nil
	case Lit:
		return "struct{}", nil
	case SeqOf:
		t, err := g.typeOf(x.Elem)
		return "[]" + t, err
	case SetOf:
		t, err := g.typeOf(x.Elem)
		return "[]" + t, err
	case DictOf:
		k, err := g.typeOf(x.Key)
		if err != nil {
			return "", err
		}
		v, err := g.typeOf(x.Val)
		if g.mapKey(x.Key) {
			return "map[" + k + "]" + v, err
		}
		return "[]" + g.use(runtimeImport) + ".Pair[" + k + ", " + v + "]", err
	case *Ref:
		m, d, err := g.resolve(x)
		if err != nil {
			return "", err
		}
		return g.qual(m, d), nil
	}
	return "", fmt.Errorf("%w: no host type for %T", ErrSchema, p)
}

// mapKey reports whether a dictionary keyed by p can be a Go map: its
// Go equality must be Preserves equality.
func (g *gen) mapKey(p Pattern) bool {
	a, ok := p.(Atom)
	return ok && (a.Kind == String || a.Kind == Symbol || a.Kind == Boolean)
}

// natural is the Go type the run-time helper for p returns.
func (g *gen) natural(p Pattern) string {
	t, _ := g.typeOf(p)
	return t
}

type field struct {
	name, goName, typ string
	pos               preserves.Pos
}

// gather lists the fields a compound pattern binds, in source order.
func (g *gen) gather(n NamedPattern, out *[]field) error {
	switch {
	case n.Name != "":
		if g.unit(n.Pattern) {
			return nil
		}
		t, err := g.typeOf(n.Pattern)
		if err != nil {
			return err
		}
		gn := Mangle(n.Name)
		for _, f := range *out {
			if f.goName == gn {
				return &Error{Pos: n.Pos, Msg: fmt.Sprintf("two bindings named %s (Go field %s) in one scope", n.Name, gn)}
			}
		}
		if gn == "ToValue" || gn == "" {
			return &Error{Pos: n.Pos, Msg: fmt.Sprintf("the binding %q cannot be a Go field", n.Name)}
		}
		*out = append(*out, field{n.Name, gn, t, n.Pos})
		return nil
	case !isSimple(n.Pattern):
		switch x := n.Pattern.(type) {
		case Rec:
			if err := g.gather(x.Label, out); err != nil {
				return err
			}
			return g.gather(x.Fields, out)
		case Tuple:
			for _, e := range x.Elems {
				if err := g.gather(e, out); err != nil {
					return err
				}
			}
		case TuplePrefix:
			for _, e := range x.Fixed {
				if err := g.gather(e, out); err != nil {
					return err
				}
			}
			return g.gather(x.Variable, out)
		case Dict:
			for _, e := range x.Entries {
				if err := g.gather(e.Pattern, out); err != nil {
					return err
				}
			}
		}
		return nil
	case g.unit(n.Pattern):
		return nil
	}
	if x, ok := n.Pattern.(*Ref); ok {
		if _, _, err := g.resolve(x); err != nil {
			return err
		}
	}
	return &Error{Pos: n.Pos, Msg: "an anonymous pattern here would lose what it matches: bind it with @name"}
}

func (g *gen) fieldType(fs []field, goName string) string {
	for _, f := range fs {
		if f.goName == goName {
			return f.typ
		}
	}
	return ""
}

// lit is a Go expression for the literal v.
func (g *gen) lit(v preserves.Value) string {
	pv := g.use(preservesImport)
	switch x := v.(type) {
	case preserves.Bool:
		return fmt.Sprintf("%s.Bool(%t)", pv, bool(x))
	case preserves.Double:
		return fmt.Sprintf("%s.DoubleFromBits(%#x)", pv, x.Bits())
	case preserves.Int:
		return fmt.Sprintf("%s.Int(%d)", pv, int64(x))
	case preserves.String:
		return fmt.Sprintf("%s.String(%s)", pv, strconv.Quote(string(x)))
	case preserves.ByteString:
		return fmt.Sprintf("%s.ByteString(%s)", pv, strconv.Quote(string(x)))
	case preserves.Symbol:
		return fmt.Sprintf("%s.Symbol(%s)", pv, strconv.Quote(string(x)))
	}
	// Compound (and big) literals are built once, at package level.
	key := preserves.FormatText(v)
	if g.litIdx == nil {
		g.litIdx = map[string]string{}
	}
	if name, ok := g.litIdx[key]; ok {
		return name
	}
	name := "lit" + strconv.Itoa(len(g.lits))
	g.litIdx[key] = name
	g.lits = append(g.lits, fmt.Sprintf("%s = %s", name, g.litExpr(v)))
	return name
}

func (g *gen) litExpr(v preserves.Value) string {
	pv := g.use(preservesImport)
	var parts []string
	switch x := v.(type) {
	case *preserves.BigInt:
		return fmt.Sprintf("%s.MustBigInt(%q)", g.use(runtimeImport), x.Big().String())
	case *preserves.Record:
		parts = append(parts, g.litExpr(x.Label))
		for _, f := range x.Fields {
			parts = append(parts, g.litExpr(f))
		}
		return pv + ".NewRecord(" + strings.Join(parts, ", ") + ")"
	case preserves.Sequence:
		for _, e := range x {
			parts = append(parts, g.litExpr(e))
		}
		return pv + ".Sequence{" + strings.Join(parts, ", ") + "}"
	case *preserves.Set:
		for _, e := range x.Elems() {
			parts = append(parts, g.litExpr(e))
		}
		return pv + ".NewSet(" + strings.Join(parts, ", ") + ")"
	case *preserves.Dictionary:
		for _, e := range x.Entries() {
			parts = append(parts, g.litExpr(e.Key), g.litExpr(e.Value))
		}
		return pv + ".Dict(" + strings.Join(parts, ", ") + ")"
	case *preserves.Embedded:
		return "nil /* embedded literal */"
	}
	return g.lit(v)
}

// labelNames gives every literal symbol that labels a record of the
// module its constant, Label + Mangle(label), and claims the name, so a
// definition whose Go name is taken is a positioned schema error rather
// than Go code that does not compile. Labels that mangle to nothing
// (`<_>`) get no constant.
func (g *gen) labelNames() error {
	g.labelIdx = map[preserves.Symbol]int{}
	var err error
	var walk func(p Pattern, owner string, pos preserves.Pos)
	walk = func(p Pattern, owner string, pos preserves.Pos) {
		var parts []NamedPattern
		switch x := p.(type) {
		case Rec:
			if l, ok := x.Label.Pattern.(Lit); ok && x.Label.Name == "" && err == nil {
				if sym, ok := l.Literal.(preserves.Symbol); ok {
					err = g.addLabel(sym, owner, pos)
				}
			}
			parts = []NamedPattern{x.Label, x.Fields}
		case Tuple:
			parts = x.Elems
		case TuplePrefix:
			parts = append(append(parts, x.Fixed...), x.Variable)
		case Dict:
			for _, e := range x.Entries {
				parts = append(parts, e.Pattern)
			}
		}
		for _, n := range parts {
			walk(n.Pattern, owner, n.Pos)
		}
	}
	for _, d := range g.m.Definitions {
		name := Mangle(d.Name)
		for _, a := range d.Or {
			walk(a.Pattern, name+Mangle(a.Label), a.Pos)
		}
		for _, n := range d.And {
			walk(n.Pattern, name, n.Pos)
		}
		if d.Pattern != nil {
			walk(d.Pattern, name, d.Pos)
		}
	}
	return err
}

func (g *gen) addLabel(sym preserves.Symbol, owner string, pos preserves.Pos) error {
	if i, ok := g.labelIdx[sym]; ok {
		if l := &g.labels[i]; !slices.Contains(l.owners, owner) {
			l.owners = append(l.owners, owner)
		}
		return nil
	}
	name := "Label" + Mangle(string(sym))
	if name == "Label" {
		return nil
	}
	if err := g.claim(name, pos); err != nil {
		return err
	}
	g.labelIdx[sym] = len(g.labels)
	g.labels = append(g.labels, recordLabel{name: name, sym: sym, owners: []string{owner}})
	return nil
}

// label is the Go expression for a record's literal label: its
// constant when it has one.
func (g *gen) label(v preserves.Value) string {
	if sym, ok := v.(preserves.Symbol); ok {
		if i, ok := g.labelIdx[sym]; ok {
			return g.labels[i].name
		}
	}
	return g.lit(v)
}

// ---- parsing ----------------------------------------------------------

// fail is the statement that returns err from a generated parser, its
// path prefixed with steps (Go expressions) and, for a part without a
// position of its own, located along the path from v (AtIn).
func (g *gen) fail(steps []string) string {
	if len(steps) == 0 {
		return "return zero, err"
	}
	return "return zero, " + g.use(runtimeImport) + ".AtIn(err, v, " + strings.Join(steps, ", ") + ")"
}

func with(steps []string, s string) []string {
	return append(steps[:len(steps):len(steps)], s)
}

// simple emits statements parsing src (a preserves.Value expression)
// with the simple pattern p into dst of Go type dstType; dst "" means the
// result is only checked.
func (g *gen) simple(p Pattern, src, dst, dstType string, steps []string) error {
	sc := g.use(runtimeImport)
	assign := func(helper string) {
		switch {
		case dst == "":
			g.p("if _, err := %s.%s(%s); err != nil { %s }", sc, helper, src, g.fail(steps))
		case dstType == g.natural(p):
			g.p("if %s, err = %s.%s(%s); err != nil { %s }", dst, sc, helper, src, g.fail(steps))
		default:
			t := g.fresh("t")
			g.p("%s, err := %s.%s(%s)", t, sc, helper, src)
			g.p("if err != nil { %s }", g.fail(steps))
			g.p("%s = %s(%s)", dst, dstType, t)
		}
	}
	switch x := p.(type) {
	case Any:
		if dst != "" {
			g.p("%s = %s", dst, src)
		}
	case Atom:
		helper := map[AtomKind]string{Boolean: "AsBool", Double: "AsDouble", SignedInteger: "AsInt",
			String: "AsString", ByteString: "AsBytes", Symbol: "AsSymbol"}[x.Kind]
		assign(helper)
	case Embedded:
		if x, ok := x.Interface.(*Ref); ok {
			if _, _, err := g.resolve(x); err != nil {
				return err
			}
		}
		assign("AsEmbedded")
	case Lit:
		g.p("if err := %s.CheckLit(%s, %s); err != nil { %s }", sc, src, g.lit(x.Literal), g.fail(steps))
	case *Ref:
		m, d, err := g.resolve(x)
		if err != nil {
			return err
		}
		if dst == "" {
			g.p("if _, err := %s(%s); err != nil { %s }", g.parseFn(m, d), src, g.fail(steps))
			return nil
		}
		g.p("if %s, err = %s(%s); err != nil { %s }", dst, g.parseFn(m, d), src, g.fail(steps))
	case SeqOf, SetOf:
		var elem Pattern
		s := g.fresh("s")
		if q, ok := x.(SeqOf); ok {
			elem = q.Elem
			g.p("%s, err := %s.AsSeq(%s, 0)", s, sc, src)
		} else {
			elem = x.(SetOf).Elem
			g.p("%s, err := %s.AsSet(%s)", s, sc, src)
		}
		g.p("if err != nil { %s }", g.fail(steps))
		return g.elems(elem, s, 0, dst, dstType, steps)
	case DictOf:
		return g.simpleDict(x, src, dst, dstType, steps)
	default:
		return fmt.Errorf("%w: %T is not a simple pattern", ErrSchema, p)
	}
	return nil
}

// simpleDict is simple for a dictOf pattern.
func (g *gen) simpleDict(x DictOf, src, dst, dstType string, steps []string) error {
	sc := g.use(runtimeImport)
	d := g.fresh("d")
	g.p("%s, err := %s.AsDict(%s)", d, sc, src)
	g.p("if err != nil { %s }", g.fail(steps))
	kt, err := g.typeOf(x.Key)
	if err != nil {
		return err
	}
	vt, err := g.typeOf(x.Val)
	if err != nil {
		return err
	}
	if dst == "" {
		dst, dstType = g.fresh("m"), "[]"+sc+".Pair["+kt+", "+vt+"]"
		g.p("var %s %s", dst, dstType)
		defer g.p("_ = %s", dst)
	}
	i, e := g.fresh("i"), g.fresh("e")
	g.p("%s = make(%s, %s.Len())", dst, dstType, d)
	g.p("for %s, %s := range %s.Entries() {", i, e, d)
	ks := with(steps, sc+".Key("+e+".Key)")
	if g.mapKey(x.Key) {
		k, v := g.fresh("k"), g.fresh("v")
		g.p("_ = %s", i)
		g.p("var %s %s", k, kt)
		g.p("var %s %s", v, vt)
		if err := g.simple(x.Key, e+".Key", k, kt, ks); err != nil {
			return err
		}
		if err := g.simple(x.Val, e+".Value", v, vt, ks); err != nil {
			return err
		}
		g.p("%s[%s] = %s", dst, k, v)
	} else {
		if err := g.simple(x.Key, e+".Key", dst+"["+i+"].Key", kt, ks); err != nil {
			return err
		}
		if err := g.simple(x.Val, e+".Value", dst+"["+i+"].Value", vt, ks); err != nil {
			return err
		}
	}
	g.p("}")
	return nil
}

// elems parses s[from:] element by element into dst (a slice).
func (g *gen) elems(elem Pattern, s string, from int, dst, dstType string, steps []string) error {
	et, err := g.typeOf(elem)
	if err != nil {
		return err
	}
	i, e := g.fresh("i"), g.fresh("e")
	rng := s
	if from > 0 {
		rng = fmt.Sprintf("%s[%d:]", s, from)
	}
	step := g.use(runtimeImport) + ".Index(" + i + ")"
	if from > 0 {
		step = fmt.Sprintf("%s.Index(%s+%d)", g.use(runtimeImport), i, from)
	}
	if dst != "" {
		g.p("%s = make(%s, len(%s))", dst, dstType, rng)
		g.p("for %s, %s := range %s {", i, e, rng)
		if err := g.simple(elem, e, dst+"["+i+"]", et, with(steps, step)); err != nil {
			return err
		}
	} else {
		g.p("for %s, %s := range %s {", i, e, rng)
		g.p("_ = %s", i)
		if err := g.simple(elem, e, "", "", with(steps, step)); err != nil {
			return err
		}
	}
	g.p("}")
	return nil
}

// named emits the parse of a NamedPattern whose bound fields go to r.
func (g *gen) named(n NamedPattern, src string, fs []field, steps []string) error {
	switch {
	case n.Name != "" && !g.unit(n.Pattern):
		gn := Mangle(n.Name)
		return g.simple(n.Pattern, src, "r."+gn, g.fieldType(fs, gn), steps)
	case isSimple(n.Pattern):
		return g.simple(n.Pattern, src, "", "", steps)
	}
	return g.compound(n.Pattern, src, fs, steps)
}

func (g *gen) compound(p Pattern, src string, fs []field, steps []string) error {
	sc := g.use(runtimeImport)
	switch x := p.(type) {
	case Rec:
		min := 0
		if x.Fields.Name == "" {
			switch f := x.Fields.Pattern.(type) {
			case Tuple:
				min = len(f.Elems)
			case TuplePrefix:
				min = len(f.Fixed)
			}
		}
		r := g.fresh("rec")
		if l, ok := x.Label.Pattern.(Lit); ok && x.Label.Name == "" {
			asRecordOf := "AsRecordOf"
			if _, ok := x.Fields.Pattern.(Tuple); ok && x.Fields.Name == "" && g.opts.Exact[g.m.Path.String()] {
				asRecordOf = "AsExactRecordOf"
			}
			if t, ok := x.Fields.Pattern.(Tuple); ok && x.Fields.Name == "" && len(t.Elems) == 0 {
				g.p("if _, err := %s.%s(%s, %s, 0); err != nil { %s }", sc, asRecordOf, src, g.label(l.Literal), g.fail(steps))
				return nil
			}
			g.p("%s, err := %s.%s(%s, %s, %d)", r, sc, asRecordOf, src, g.label(l.Literal), min)
			g.p("if err != nil { %s }", g.fail(steps))
		} else {
			g.p("%s, err := %s.AsRecord(%s, %d)", r, sc, src, min)
			g.p("if err != nil { %s }", g.fail(steps))
			if err := g.named(x.Label, r+".Label", fs, with(steps, `".label"`)); err != nil {
				return err
			}
		}
		if x.Fields.Name == "" {
			switch f := x.Fields.Pattern.(type) {
			case Tuple:
				return g.tuple(f.Elems, r+".Fields", fs, steps)
			case TuplePrefix:
				return g.tuplePrefix(f, r+".Fields", fs, steps)
			}
		}
		return g.named(x.Fields, g.use(preservesImport)+".Sequence("+r+".Fields)", fs, with(steps, `".fields"`))
	case Tuple:
		s := g.fresh("s")
		g.p("%s, err := %s.AsSeq(%s, %d)", s, sc, src, len(x.Elems))
		g.p("if err != nil { %s }", g.fail(steps))
		return g.tuple(x.Elems, s, fs, steps)
	case TuplePrefix:
		s := g.fresh("s")
		g.p("%s, err := %s.AsSeq(%s, %d)", s, sc, src, len(x.Fixed))
		g.p("if err != nil { %s }", g.fail(steps))
		return g.tuplePrefix(x, s, fs, steps)
	case Dict:
		d := g.fresh("d")
		g.p("%s, err := %s.AsDict(%s)", d, sc, src)
		g.p("if err != nil { %s }", g.fail(steps))
		if len(x.Entries) == 0 {
			g.p("_ = %s", d)
		}
		for _, e := range x.Entries {
			v := g.fresh("x")
			g.p("%s, err := %s.Entry(%s, %s, %s)", v, sc, src, d, g.lit(e.Key))
			g.p("if err != nil { %s }", g.fail(steps))
			if err := g.named(e.Pattern, v, fs, with(steps, strconv.Quote("["+preserves.FormatText(e.Key)+"]"))); err != nil {
				return err
			}
		}
		return nil
	}
	return g.simple(p, src, "", "", steps)
}

func (g *gen) tuple(elems []NamedPattern, s string, fs []field, steps []string) error {
	for i, e := range elems {
		if err := g.named(e, fmt.Sprintf("%s[%d]", s, i), fs, with(steps, strconv.Quote(fmt.Sprintf("[%d]", i)))); err != nil {
			return err
		}
	}
	return nil
}

func (g *gen) tuplePrefix(x TuplePrefix, s string, fs []field, steps []string) error {
	if err := g.tuple(x.Fixed, s, fs, steps); err != nil {
		return err
	}
	k := len(x.Fixed)
	if seq, ok := x.Variable.Pattern.(SeqOf); ok {
		dst, dt := "", ""
		if x.Variable.Name != "" {
			dst = "r." + Mangle(x.Variable.Name)
			dt = g.fieldType(fs, Mangle(x.Variable.Name))
		} else if !g.unit(seq.Elem) {
			return &Error{Pos: x.Variable.Pos, Msg: "an anonymous tail would lose what it matches: bind it with @name"}
		}
		return g.elems(seq.Elem, s, k, dst, dt, steps)
	}
	return g.named(x.Variable, fmt.Sprintf("%s.Sequence(%s[%d:])", g.use(preservesImport), s, k), fs, steps)
}

// ---- unparsing --------------------------------------------------------

// expr is a Go expression unparsing src, of the host type of simple
// pattern p.
func (g *gen) expr(p Pattern, src, srcType string) (string, error) {
	pv, sc := g.use(preservesImport), g.use(runtimeImport)
	conv := func(natural string) string {
		if srcType != "" && srcType != natural {
			return natural + "(" + src + ")"
		}
		return src
	}
	switch x := p.(type) {
	case Any:
		return src, nil
	case Atom:
		switch x.Kind {
		case Boolean:
			return pv + ".Bool(" + src + ")", nil
		case Double:
			return pv + ".NewDouble(" + conv("float64") + ")", nil
		case SignedInteger:
			return sc + ".IntValue(" + src + ")", nil
		case String:
			return pv + ".String(" + src + ")", nil
		case ByteString:
			return pv + ".ByteString(" + src + ")", nil
		case Symbol:
			return conv(pv + ".Symbol"), nil
		}
	case Embedded:
		return pv + ".NewEmbedded(" + src + ")", nil
	case Lit:
		return g.lit(x.Literal), nil
	case *Ref:
		m, d, err := g.resolve(x)
		if err != nil {
			return "", err
		}
		if isUnitDef(d) {
			return g.qual(m, d) + "{}.ToValue()", nil
		}
		return src + ".ToValue()", nil
	case SeqOf, SetOf:
		elem, helper := Pattern(nil), "SeqValue"
		if q, ok := x.(SeqOf); ok {
			elem = q.Elem
		} else {
			elem, helper = x.(SetOf).Elem, "SetValue"
		}
		f, err := g.closure(elem)
		if err != nil {
			return "", err
		}
		return fmt.Sprintf("%s.%s(%s, %s)", sc, helper, src, f), nil
	case DictOf:
		kf, err := g.closure(x.Key)
		if err != nil {
			return "", err
		}
		vf, err := g.closure(x.Val)
		if err != nil {
			return "", err
		}
		helper := "PairsValue"
		if g.mapKey(x.Key) {
			helper = "MapValue"
		}
		return fmt.Sprintf("%s.%s(%s, %s, %s)", sc, helper, src, kf, vf), nil
	}
	return "", fmt.Errorf("%w: %T is not a simple pattern", ErrSchema, p)
}

func (g *gen) closure(p Pattern) (string, error) {
	t, err := g.typeOf(p)
	if err != nil {
		return "", err
	}
	x := g.fresh("x")
	e, err := g.expr(p, x, t)
	if err != nil {
		return "", err
	}
	if g.unit(p) {
		x = "_"
	}
	return fmt.Sprintf("func(%s %s) %s.Value { return %s }", x, t, g.use(preservesImport), e), nil
}

func (g *gen) namedExpr(n NamedPattern, fs []field) (string, error) {
	switch {
	case n.Name != "" && !g.unit(n.Pattern):
		gn := Mangle(n.Name)
		return g.expr(n.Pattern, "r."+gn, g.fieldType(fs, gn))
	case isSimple(n.Pattern):
		return g.expr(n.Pattern, "", "")
	}
	return g.compoundExpr(n.Pattern, fs)
}

func (g *gen) namedExprs(ns []NamedPattern, fs []field) ([]string, error) {
	out := make([]string, len(ns))
	for i, n := range ns {
		e, err := g.namedExpr(n, fs)
		if err != nil {
			return nil, err
		}
		out[i] = e
	}
	return out, nil
}

func (g *gen) compoundExpr(p Pattern, fs []field) (string, error) {
	pv, sc := g.use(preservesImport), g.use(runtimeImport)
	switch x := p.(type) {
	case Rec:
		l, err := g.namedExpr(x.Label, fs)
		if err != nil {
			return "", err
		}
		if lit, ok := x.Label.Pattern.(Lit); ok && x.Label.Name == "" {
			l = g.label(lit.Literal)
		}
		if t, ok := x.Fields.Pattern.(Tuple); ok && x.Fields.Name == "" {
			es, err := g.namedExprs(t.Elems, fs)
			if err != nil {
				return "", err
			}
			return pv + ".NewRecord(" + strings.Join(append([]string{l}, es...), ", ") + ")", nil
		}
		f, err := g.namedExpr(x.Fields, fs)
		if err != nil {
			return "", err
		}
		return pv + ".NewRecord(" + l + ", " + sc + ".Fields(" + f + ")...)", nil
	case Tuple:
		es, err := g.namedExprs(x.Elems, fs)
		if err != nil {
			return "", err
		}
		return pv + ".Sequence{" + strings.Join(es, ", ") + "}", nil
	case TuplePrefix:
		es, err := g.namedExprs(x.Fixed, fs)
		if err != nil {
			return "", err
		}
		t, err := g.namedExpr(x.Variable, fs)
		if err != nil {
			return "", err
		}
		return sc + ".Concat(" + pv + ".Sequence{" + strings.Join(es, ", ") + "}, " + t + ")", nil
	case Dict:
		var kvs []string
		for _, e := range x.Entries {
			v, err := g.namedExpr(e.Pattern, fs)
			if err != nil {
				return "", err
			}
			kvs = append(kvs, g.lit(e.Key), v)
		}
		return pv + ".Dict(" + strings.Join(kvs, ", ") + ")", nil
	}
	return g.expr(p, "", "")
}

// ---- definitions ------------------------------------------------------

func (g *gen) doc(lines []string, fallback string) {
	if len(lines) == 0 {
		g.p("// %s", fallback)
		return
	}
	for _, l := range lines {
		for _, s := range strings.Split(l, "\n") {
			g.p("// %s", strings.TrimRight(s, " "))
		}
	}
}

func (g *gen) module() ([]byte, error) {
	for _, d := range g.m.Definitions {
		if err := g.claim(Mangle(d.Name), d.Pos); err != nil {
			return nil, err
		}
	}
	if err := g.labelNames(); err != nil {
		return nil, err
	}
	for _, d := range g.m.Definitions {
		if err := g.definition(d); err != nil {
			return nil, err
		}
	}
	var out bytes.Buffer
	pkg := g.opts.PackageName(g.m.Path)
	src := g.opts.Source
	if src == "" {
		src = path.Base(g.m.File)
	}
	fmt.Fprintf(&out, "// Code generated by preserves-schema-go from %s; DO NOT EDIT.\n\n", src)
	fmt.Fprintf(&out, "// Package %s holds the Go types of the Preserves schema module %s: one\n// type per definition, with Parse… and ToValue.\npackage %s\n\n", pkg, g.m.Path, pkg)
	paths := make([]string, 0, len(g.imports))
	for p := range g.imports {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	out.WriteString("import (\n")
	for _, p := range paths {
		fmt.Fprintf(&out, "\t%q\n", p)
	}
	out.WriteString(")\n\n")
	if len(g.labels) > 0 {
		out.WriteString("// The labels of this module's records, one constant per label.\nconst (\n")
		for _, l := range g.labels {
			fmt.Fprintf(&out, "\t// %s is the label of %s.\n\t%s = %s\n", l.name, strings.Join(l.owners, ", "), l.name, g.lit(l.sym))
		}
		out.WriteString(")\n\n")
	}
	if len(g.lits) > 0 {
		out.WriteString("var (\n")
		for _, l := range g.lits {
			out.WriteString("\t" + l + "\n")
		}
		out.WriteString(")\n\n")
	}
	out.Write(g.body.Bytes())
	res, err := format.Source(out.Bytes())
	if err != nil {
		return nil, fmt.Errorf("%w: generated code for %s does not format: %v\n%s", ErrSchema, g.m.Path, err, out.Bytes())
	}
	return res, nil
}

// parser emits `func name(v preserves.Value) (typ, error)` whose body
// parses into r.
func (g *gen) parser(name, typ string, body func() error) error {
	pv := g.use(preservesImport)
	outer := g.body
	g.body = bytes.Buffer{}
	err := body()
	inner := g.body.String()
	g.body = outer
	if err != nil {
		return err
	}
	g.p("func %s(v %s.Value) (%s, error) {", name, pv, typ)
	if strings.Contains(inner, "zero") {
		g.p("var r, zero %s", typ)
	} else {
		g.p("var r %s", typ)
	}
	if assignsErr.MatchString(inner) {
		g.p("var err error")
	}
	g.body.WriteString(inner)
	g.p("return r, nil")
	g.p("}")
	g.p("")
	return nil
}

// assignsErr finds a plain assignment to err (which needs a declaration)
// in generated statements.
var assignsErr = regexp.MustCompile(`(?m)^if [^;]*, err = `)

// record emits the struct of a definition's fields and its parser.
func (g *gen) record(d *Definition, name, what string, fs []field, parse func() error) error {
	g.doc(d.Doc, name+" is "+what+" "+d.Name+".")
	g.p("type %s struct {", name)
	g.fieldsDecl(fs)
	g.p("}")
	g.p("")
	g.p("// Parse%s parses v as a %s.", name, name)
	return g.parser("Parse"+name, name, parse)
}

func (g *gen) fieldsDecl(fs []field) {
	for _, f := range fs {
		g.p("%s %s", f.goName, f.typ)
	}
}

func (g *gen) definition(d *Definition) error {
	name := Mangle(d.Name)
	pv := g.use(preservesImport)
	switch {
	case d.Or != nil:
		return g.union(d, name)
	case d.And != nil:
		var fs []field
		for _, n := range d.And {
			if err := g.gather(n, &fs); err != nil {
				return err
			}
		}
		if err := g.record(d, name, "the intersection", fs, func() error {
			for _, n := range d.And {
				if err := g.named(n, "v", fs, nil); err != nil {
					return err
				}
			}
			return nil
		}); err != nil {
			return err
		}
		parts, err := g.namedExprs(d.And, fs)
		if err != nil {
			return err
		}
		g.p("// ToValue merges the values of the parts; it panics if hand-built parts disagree.")
		g.p("func (r %s) ToValue() %s.Value {", name, pv)
		g.p("return %s.MustMerge(%q, %s)", g.use(runtimeImport), name, strings.Join(parts, ", "))
		g.p("}")
		g.p("")
		return nil
	}
	return g.single(d, name)
}

func (g *gen) single(d *Definition, name string) error {
	pv := g.use(preservesImport)
	p := d.Pattern
	switch x := p.(type) {
	case Lit:
		g.doc(d.Doc, name+" is the literal "+preserves.FormatText(x.Literal)+".")
		g.p("type %s struct{}", name)
		g.p("")
		g.p("// Parse%s checks that v is %s.", name, preserves.FormatText(x.Literal))
		if err := g.parser("Parse"+name, name, func() error { return g.simple(p, "v", "", "", nil) }); err != nil {
			return err
		}
		g.p("func (%s) ToValue() %s.Value { return %s }", name, pv, g.lit(x.Literal))
		g.p("")
		return nil
	case *Ref:
		m, rd, err := g.resolve(x)
		if err != nil {
			return err
		}
		q := g.qual(m, rd)
		g.doc(d.Doc, name+" is "+q+".")
		g.p("type %s = %s", name, q)
		g.p("")
		g.p("// Parse%s parses v as a %s.", name, q)
		g.p("func Parse%s(v %s.Value) (%s, error) { return %s(v) }", name, pv, name, g.parseFn(m, rd))
		g.p("")
		return nil
	}
	if isSimple(p) {
		t, err := g.typeOf(p)
		if err != nil {
			return err
		}
		dst, dt, src := "r", name, "r"
		wrapped := strings.HasPrefix(t, "*") || t == "any" || t == pv+".Value"
		g.doc(d.Doc, name+" is "+preserves.FormatText(p.Value())+".")
		if wrapped {
			g.p("type %s struct{ Value %s }", name, t)
			dst, dt, src = "r.Value", t, "r.Value"
		} else {
			g.p("type %s %s", name, t)
		}
		g.p("")
		g.p("// Parse%s parses v as a %s.", name, name)
		if err := g.parser("Parse"+name, name, func() error { return g.simple(p, "v", dst, dt, nil) }); err != nil {
			return err
		}
		e, err := g.expr(p, src, dt)
		if err != nil {
			return err
		}
		g.p("func (r %s) ToValue() %s.Value { return %s }", name, pv, e)
		g.p("")
		return nil
	}
	var fs []field
	if err := g.gather(NamedPattern{Pattern: p, Pos: d.Pos}, &fs); err != nil {
		return err
	}
	if err := g.record(d, name, "the record or collection pattern", fs, func() error { return g.compound(p, "v", fs, nil) }); err != nil {
		return err
	}
	e, err := g.compoundExpr(p, fs)
	if err != nil {
		return err
	}
	g.p("func (r %s) ToValue() %s.Value { return %s }", name, pv, e)
	g.p("")
	return nil
}

// isEnum reports whether d is an alternation of literals only.
func isEnum(d *Definition) bool {
	for _, a := range d.Or {
		if _, ok := a.Pattern.(Lit); !ok {
			return false
		}
	}
	return d.Or != nil
}

func (g *gen) union(d *Definition, name string) error {
	pv := g.use(preservesImport)
	labels := make([]string, len(d.Or))
	for i, a := range d.Or {
		labels[i] = strconv.Quote(a.Label)
		if err := g.claim(name+Mangle(a.Label), a.Pos); err != nil {
			return err
		}
	}
	if isEnum(d) {
		return g.enum(d, name)
	}
	g.doc(d.Doc, name+" is one of the alternatives of "+d.Name+".")
	g.p("type %s interface {", name)
	g.p("is%s()", name)
	g.p("ToValue() %s.Value", pv)
	g.p("}")
	g.p("")
	for _, a := range d.Or {
		if err := g.alternative(name, a); err != nil {
			return err
		}
	}
	return g.unionParse(d, name, labels)
}

// enum emits the union d whose alternatives are all literals as a
// small integer type.
func (g *gen) enum(d *Definition, name string) error {
	pv, sc := g.use(preservesImport), g.use(runtimeImport)
	if len(d.Or) > math.MaxUint8 {
		return &Error{Pos: d.Pos, Msg: "too many alternatives"}
	}
	g.doc(d.Doc, name+" is one of the literals of "+d.Name+".")
	g.p("type %s uint8", name)
	g.p("")
	g.p("const (")
	for i, a := range d.Or {
		for _, l := range a.Doc {
			for _, s := range strings.Split(l, "\n") {
				g.p("// %s", strings.TrimRight(s, " "))
			}
		}
		if i == 0 {
			g.p("%s%s %s = iota", name, Mangle(a.Label), name)
		} else {
			g.p("%s%s", name, Mangle(a.Label))
		}
	}
	g.p(")")
	g.p("")
	vals := make([]string, len(d.Or))
	for i, a := range d.Or {
		vals[i] = g.lit(a.Pattern.(Lit).Literal)
	}
	lv := lowerFirst(name) + "Values"
	g.p("var %s = [...]%s.Value{%s}", lv, pv, strings.Join(vals, ", "))
	g.p("")
	g.p("// Parse%s parses v as one of the literals of %s.", name, name)
	g.p("func Parse%s(v %s.Value) (%s, error) {", name, pv, name)
	g.p("i, err := %s.LitIndex(v, %s[:])", sc, lv)
	g.p("return %s(i), err", name)
	g.p("}")
	g.p("")
	g.p("// ToValue returns the literal; an out-of-range %s panics.", name)
	g.p("func (r %s) ToValue() %s.Value { return %s[r] }", name, pv, lv)
	g.p("")
	g.p("func (r %s) String() string {", name)
	g.p("if int(r) < len(%s) { return %s.FormatText(%s[r]) }", lv, pv, lv)
	g.p("return %q + %s(int(r)) + \")\"", name+"(", g.use("strconv")+".Itoa")
	g.p("}")
	g.p("")
	return nil
}

// alternative emits the type of the alternative a of the union name,
// its parser and its ToValue.
func (g *gen) alternative(name string, a Alternative) error {
	pv := g.use(preservesImport)
	vn := name + Mangle(a.Label)
	g.doc(a.Doc, fmt.Sprintf("%s is the alternative %q of %s.", vn, a.Label, name))
	var fs []field
	var parse func() error
	var expr func() (string, error)
	switch {
	case !isSimple(a.Pattern):
		if err := g.gather(NamedPattern{Pattern: a.Pattern, Pos: a.Pos}, &fs); err != nil {
			return err
		}
		g.p("type %s struct {", vn)
		g.fieldsDecl(fs)
		g.p("}")
		parse = func() error { return g.compound(a.Pattern, "v", fs, nil) }
		expr = func() (string, error) { return g.compoundExpr(a.Pattern, fs) }
	case g.unit(a.Pattern):
		g.p("type %s struct{}", vn)
		parse = func() error { return g.simple(a.Pattern, "v", "", "", nil) }
		expr = func() (string, error) { return g.expr(a.Pattern, "", "") }
	default:
		t, err := g.typeOf(a.Pattern)
		if err != nil {
			return err
		}
		g.p("type %s struct{ Value %s }", vn, t)
		parse = func() error { return g.simple(a.Pattern, "v", "r.Value", t, nil) }
		expr = func() (string, error) { return g.expr(a.Pattern, "r.Value", t) }
	}
	g.p("")
	g.p("func (%s) is%s() {}", vn, name)
	g.p("")
	if err := g.parser("parse"+vn, vn, parse); err != nil {
		return err
	}
	e, err := expr()
	if err != nil {
		return err
	}
	g.p("func (r %s) ToValue() %s.Value { return %s }", vn, pv, e)
	g.p("")
	return nil
}

// unionParse emits the parser of the union d, which tries its
// alternatives in order.
func (g *gen) unionParse(d *Definition, name string, labels []string) error {
	pv, sc := g.use(preservesImport), g.use(runtimeImport)
	g.p("// Parse%s tries the alternatives of %s in order; the first that matches wins.", name, name)
	g.p("func Parse%s(v %s.Value) (%s, error) {", name, pv, name)
	g.p("var errs [%d]error", len(d.Or))
	// An alternative that surely fails (another record label, another
	// kind) is skipped, and its error built only when no alternative
	// matches: building errors (texts of values) is most of the cost of
	// a parse that tries several alternatives. A skipped alternative
	// fails at its first test, so the second call costs little.
	// The guards test the label (h) or kind (k) of v, found once.
	guards := make([]string, len(d.Or))
	head, kind := false, false
	for i, a := range d.Or {
		guards[i] = g.guard(a.Pattern, 0)
		head = head || strings.HasPrefix(guards[i], "w || h ")
		kind = kind || strings.HasPrefix(guards[i], "w || k ")
	}
	switch {
	case head && kind:
		g.p("h, w := %s.SymbolHead(v)", sc)
		g.p("k, _ := %s.KindOf(v)", sc)
	case head:
		g.p("h, w := %s.SymbolHead(v)", sc)
	case kind:
		g.p("k, w := %s.KindOf(v)", sc)
	}
	for i, a := range d.Or {
		call := fmt.Sprintf("if r, err := parse%s(v); err == nil { return r, nil } else { errs[%d] = err }", name+Mangle(a.Label), i)
		if guards[i] != "" {
			g.p("if %s {", guards[i])
			g.p("%s", call)
			g.p("}")
		} else {
			g.p("%s", call)
		}
	}
	for i, a := range d.Or {
		if guards[i] != "" {
			g.p("if errs[%d] == nil { _, errs[%d] = parse%s(v) }", i, i, name+Mangle(a.Label))
		}
	}
	g.p("return nil, %s.NoMatch(v, %q, []string{%s}, errs[:])", sc, name, strings.Join(labels, ", "))
	g.p("}")
	g.p("")
	return nil
}

// guard is a Go expression on v that is false only when p surely does
// not match v, by one cheap test: a record's literal label, a literal, or
// the kind of value p requires (through references, a few deep). It is ""
// when there is no such test.
func (g *gen) guard(p Pattern, depth int) string {
	sc, pv := g.use(runtimeImport), g.use(preservesImport)
	switch x := p.(type) {
	case Rec:
		if l, ok := x.Label.Pattern.(Lit); ok {
			if _, ok := l.Literal.(preserves.Symbol); ok {
				return "w || h == " + g.label(l.Literal)
			}
			return fmt.Sprintf("%s.MayBeRecordOf(v, %s)", sc, g.label(l.Literal))
		}
	case Lit:
		return fmt.Sprintf("%s.MayEqual(v, %s)", sc, g.lit(x.Literal))
	case *Ref:
		// Another module's labels and literals are not constants of this one.
		if m, d, err := g.resolve(x); err == nil && m == g.m && depth < 4 {
			switch {
			case d.Or == nil && d.And == nil:
				return g.guard(d.Pattern, depth+1)
			case isEnum(d):
				return fmt.Sprintf("%s.MayEqualOneOf(v, %sValues[:])", sc, lowerFirst(Mangle(d.Name)))
			}
		}
	}
	if k := g.kind(g.m, p, depth); k != "" {
		return fmt.Sprintf("w || k == %s.Kind%s", pv, k)
	}
	return ""
}

// kind is the name of the preserves.Kind every value p (of module m)
// matches has, "" when there is none (or it is not found a few
// references deep).
func (g *gen) kind(m *Module, p Pattern, depth int) string {
	switch x := p.(type) {
	case Atom:
		return string(x.Kind) // named as preserves.Kind's constants are
	case Lit:
		return x.Literal.Kind().String()
	case Rec:
		return "Record"
	case Tuple, TuplePrefix, SeqOf:
		return "Sequence"
	case Dict, DictOf:
		return "Dictionary"
	case SetOf:
		return "Set"
	case *Ref:
		dm, d, err := g.b.resolve(m, x)
		if err != nil || depth >= 4 || d.And != nil {
			return ""
		}
		if d.Or == nil {
			return g.kind(dm, d.Pattern, depth+1)
		}
		k := ""
		for i, a := range d.Or {
			ak := g.kind(dm, a.Pattern, depth+1)
			if ak == "" || (i > 0 && ak != k) {
				return ""
			}
			k = ak
		}
		return k
	}
	return ""
}
