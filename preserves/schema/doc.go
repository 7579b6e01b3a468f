// Package schema reads Preserves Schema (.prs files), checks it, and
// generates Go code from it; it is also the run-time support that code
// imports. cmd/preserves-schema-go is its command line.
//
// # Pipeline
//
// [ReadModule] and [ReadDir] turn the text syntax into the abstract form
// (a [Module] of [Definition]s and [Pattern]s) following the schema
// specification's reading rules; [Module.Value] renders it as the
// metaschema value the reference toolchain writes, and the tests compare
// it with the reference's compiled bundles for every protocol schema.
// [Check] resolves references across the [Bundle] and rejects
// definitions that recurse without consuming input. [Generate] maps each
// module to a Go package:
//
//	alternation of literals      type X uint8 + constants (an enum)
//	other alternation            sealed interface X + struct XLabel per alternative
//	record, tuple, dict, &       struct of the bound fields, in source order
//	literal                      struct{}
//	reference                    type alias
//	other simple pattern         defined type (struct{ Value T } for any, int, #:)
//
// and every type gets ParseX(preserves.Value) (X, error) and
// ToValue() preserves.Value. Every literal symbol that labels a record
// (at any depth, once however many records share it) becomes a typed
// constant named Label + the mangled label, `const LabelHttpRequest =
// preserves.Symbol("http-request")`, which the parsers and ToValue use
// and which users take to build dataspace patterns instead of writing
// the label again. Definitions are named without the prefix, so only a
// definition (or alternative) whose own name starts with Label can meet
// a label constant; the generator then reports a positioned schema
// error instead of emitting Go that does not compile. A label that
// mangles to nothing (`<_>`) gets no constant. Host types: any → preserves.Value, bool,
// double → float64, int → *big.Int (any size, as the schema says),
// string, bytes → []byte, symbol → preserves.Symbol, #:p → any (the
// embedded payload, whatever embeddedType says), [p ...] and #{p} →
// []T (a set keeps Preserves order), {k: v ...:...} → map[K]V when K is
// string, symbol or bool, otherwise []Pair[K, V].
//
// # Parsing and errors
//
// Generated parsers look through annotations at every depth, accept the
// extra fields, elements and keys the specification allows (records of
// the modules in [Options].Exact must have exactly their fields), and try
// alternatives in source order; an alternative that cannot match by its
// record label, literal or kind is skipped, its error built only if
// nothing matches, as errors (which show the value) are most of the cost
// of a parse that tries several alternatives. The value's symbol label and
// kind are found once per parse ([SymbolHead], [KindOf]) and compared with
// ==; other labels and literals use [MayBeRecordOf], [MayEqual],
// [MayEqualOneOf]. What a successful parse still costs beyond a
// hand-written one is the host representation: each alternative is boxed
// into its interface (one allocation per alternation level, as a record
// <chunk "…"> parsed as an HttpResponse holding a Chunk takes two) and an
// int becomes a *big.Int. A failure is a *[ParseError] (class
// [ErrParse]): the path from the value given to Parse… to the part that
// is wrong (".label", "[2]", "[key]"), that part's source position when
// one is known — its own annotation (values read with
// preserves.TextOptions.Positions), or, for plain values whose positions
// are kept in the side table of package preserves (what scripts assert),
// the most specific place remembered along the path ([AtIn], [Locate],
// [FailAt]: an atom's place is its parent's item position) — and
// for an alternation every alternative's reason; [ParseError.Deepest]
// picks the one that got furthest. Hand-written companions of generated
// code (range checks, the daemon spec's elaboration) return *ParseError
// too, with a finer [ParseError].Class that errors.Is also finds. Mistakes in a schema are *[Error]
// (class [ErrSchema]) with file:line:col.
//
// A static checker that knows only part of a value (a script whose
// variables have no value yet) puts an embedded [Wildcard] where it does
// not know: it matches every pattern, so the same generated parsers that
// the runtime uses report exactly the errors in what is known.
//
// # Deviations
//
// ToValue of an intersection merges its parts; hand-built parts that
// disagree make it panic (a parsed value always merges). include clauses,
// the old `;` comments and the float atom kind are rejected. Every
// embedded payload is `any`, so generated packages import only preserves
// and this package and can sit at any layer.
package schema
