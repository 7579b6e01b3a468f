// Command preserves-tool converts Preserves documents between the text and
// binary syntaxes, pretty-prints them, canonicalises them and strips their
// annotations.
//
//	preserves-tool [-i text|binary|auto] [-o text|binary|canonical] [-indent] [-strip] [FILE...]
//
// Input comes from the named files in turn, or from standard input when there
// are none (or for a FILE of "-"); every value in the input is converted and
// written to standard output. Text output puts one value per line; binary
// output concatenates the encodings. Malformed input is reported on standard
// error as `file:line:col: message` for text and `file: offset N: message` for
// binary, and the exit status is 1; a usage error exits with status 2.
package main

import "os"

func main() { os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr)) }
