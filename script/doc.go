// Package script is the front end of the `.pr` configuration script
// language (the syndicate-server "config language"): it turns the Preserves
// values of a script file into an AST with source positions and performs
// every static check, collecting all errors.
//
// # Pipeline
//
//	Preserves text ──preserves.TextReader (positions on)──▶ []Value
//	   ──script.ParseValues──▶ *File (AST, this package)
//	   ──compile.Compile──▶ instruction tree (package script/compile)
//	   ──vm.Run──▶ effects in a dataspace facet (package script/vm)
//
// This package imports only preserves. Each phase has one error type: here
// it is *Error{Pos, Msg}, printed `file:line:col: message` and collected in
// an ErrorList, sorted, never truncated.
//
// # Parsing
//
// A script is a token stream: the top-level values of a file, or the items
// of a `[...]` block. The parser consumes instructions from it by the rules
// of services spec §4.3: records and dictionaries assert, sequences are
// blocks, and a few symbols (`?`, `??`, `?-`, `!`, `+=`, `let`, `=~`, `$x`)
// take the following tokens as operands. `$x INSTR` is kept as a Retarget
// node and `=~ PAT THEN ELSE...` as a Cond node whose Else holds the rest of
// the block; the compile phase resolves which variable each instruction
// targets.
//
// Expressions share one node set (Lit, Var, Bind, Discard, RecordExpr, …);
// the parser's mode (value, pattern, caveat template, pattern label) decides
// which nodes are legal, so shape errors are found here rather than at run
// time: a wildcard or binder in a value, a set in a pattern, a non-literal
// pattern label, a malformed `<* $x [...]>`, an unknown caveat, and a rewrite
// template label that uses a capture of its own pattern (the seed's
// "literal-enough" rule). What depends on the environment — an undefined
// variable, a target that is not a capability, a failed let match — stays a
// run-time error, as services spec §4.10 says.
//
// # Dialects
//
// Caveat patterns written in another dialect's structural notation (`<not
// P>`, `<rec L [P…]>`, …) read here as literals, which restrict nothing: the
// parser warns about each (File.Warnings, class ErrDialect, with this
// dialect's spelling of the intent), and `dialect sturdy-caveats` at the top
// of a file reads them structurally instead (dialect.go). A `;` comment,
// pre-2023 Preserves, is a syntax error that says so (ErrLegacyComment).
//
// Deviations from the reference, all towards reporting more: incomplete
// constructs at the end of a block or file (`[ ?- ]`, `[ $x ]`, `[ _ ]`,
// `let ?x =`) are errors (quirk Q5, Q16), and no `[]` is appended to the
// file except to anchor trailing comments; wildcards and binders in values
// are compile errors rather than run-time errors.
package script
