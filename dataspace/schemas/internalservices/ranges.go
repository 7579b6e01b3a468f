package internalservices

// Hand-written beside the generated code: what the schema cannot say,
// checked by the services and by `--check` alike.

import (
	"fmt"
	"math"
	"time"

	"github.com/syndicate-go/syndicate/preserves"
	"github.com/syndicate-go/syndicate/preserves/schema"
)

// Exact fails when v, a record, has more than n fields. The schema's
// patterns are extensible, but a built-in service name is exact: a longer
// name would start a second service doing the same (the relay listener,
// which takes an optional third field, is the exception).
func Exact(v preserves.Value, n int) error {
	if r, ok := v.(*preserves.Record); ok && len(r.Fields) > n {
		return schema.FailAt(v, fmt.Sprintf("[%d]", n), "expected %d field%s, no more", n, map[bool]string{true: "", false: "s"}[n == 1])
	}
	return nil
}

// MaxPathPrefixElements bounds http-static-files' path prefix length.
const MaxPathPrefixElements = 1 << 20

// DebtPeriod parses `<debt-reporter SECONDS>` and returns its period:
// SECONDS a double from a millisecond (less would flood the log) to what
// a time.Duration holds. A wildcard interval gives a second.
func DebtPeriod(v preserves.Value) (time.Duration, error) {
	d, err := ParseDebtReporter(v)
	if err == nil {
		err = Exact(v, 1)
	}
	if err != nil {
		return 0, err
	}
	r, ok := v.(*preserves.Record)
	if !ok || schema.IsWildcard(r.Fields[0]) {
		return time.Second, nil // unknown to a checker
	}
	secs := d.IntervalSeconds
	if math.IsNaN(secs) || secs < 0.001 || secs > float64(math.MaxInt64/int64(time.Second)) {
		return 0, schema.FailAt(v, "[0]", "expected a number of seconds from 0.001")
	}
	return time.Duration(secs * float64(time.Second)), nil
}

// StaticFiles parses `<http-static-files DIR N>`: N, the number of leading
// path elements to drop, from 0 to MaxPathPrefixElements.
func StaticFiles(v preserves.Value) (dir string, drop int, err error) {
	s, err := ParseHttpStaticFileServer(v)
	if err == nil {
		err = Exact(v, 2)
	}
	if err != nil {
		return "", 0, err
	}
	r, ok := v.(*preserves.Record)
	if !ok || schema.IsWildcard(r.Fields[1]) {
		return s.Dir, 0, nil // unknown to a checker
	}
	if n := s.PathPrefixElements; !n.IsInt64() || n.Int64() < 0 || n.Int64() > MaxPathPrefixElements {
		return "", 0, schema.FailAt(v, "[1]", "expected a path prefix length from 0 to 1048576")
	}
	return s.Dir, int(s.PathPrefixElements.Int64()), nil
}
