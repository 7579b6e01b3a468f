// Package control is the `$control` entity (services spec §1.4): a message
// `<exit N>` asks the server to end with exit status N. Anything else, and
// every assertion, is ignored.
package control

import (
	"math"

	"github.com/rs/zerolog"

	"github.com/syndicate-go/syndicate/dataspace"
	"github.com/syndicate-go/syndicate/dataspace/schemas/control"
	"github.com/syndicate-go/syndicate/preserves"
)

// Entity implements `$control`. Exit is called (from the entity's actor) with
// the requested status; the server decides how to end.
type Entity struct {
	dataspace.BaseEntity
	Log  zerolog.Logger
	Exit func(code int)
}

// Message handles `<exit N>`. A code that does not fit a signed 32-bit
// integer is logged and replaced by 1, as the reference does.
func (e *Entity) Message(t *dataspace.Turn, v preserves.Value) error {
	r, ok := v.(*preserves.Record)
	if !ok || len(r.Fields) != 1 || !preserves.Equal(r.Label, control.LabelExit) {
		return nil
	}
	code := 1
	switch n := r.Fields[0].(type) {
	case preserves.Int:
		if n >= math.MinInt32 && n <= math.MaxInt32 {
			code = int(n)
		} else {
			e.Log.Warn().Str("code", preserves.Show(n)).Msg("exit code out of range; exiting with status 1")
		}
	case *preserves.BigInt:
		e.Log.Warn().Str("code", preserves.Show(n)).Msg("exit code out of range; exiting with status 1")
	default:
		return nil // <exit "2"> is not an ExitServer message
	}
	e.Log.Info().Int("code", code).Msg("exit requested through $control")
	e.Exit(code)
	return nil
}
