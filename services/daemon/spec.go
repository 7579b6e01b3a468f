package daemon

import (
	"github.com/syndicate-go/syndicate/dataspace/schemas/externalservices"
	"github.com/syndicate-go/syndicate/preserves"
)

// The daemon spec (§5.2 and our extension keys) is defined once, below
// `script`, in dataspace/schemas/externalservices (spec.go, beside the
// code generated from externalServices.prs), so that `--check` performs
// the elaboration the daemon service performs. The names below are that
// package's, for this package's processes, restart loop and readiness
// protocols.

type (
	Spec          = externalservices.Spec
	EnvChange     = externalservices.EnvChange
	Readiness     = externalservices.Readiness
	Limits        = externalservices.Limits // limits.go applies them
	ExecControls  = externalservices.ExecControls
	CgroupLimits  = externalservices.CgroupLimits
	EnvFile       = externalservices.EnvFile
	RestartPolicy = externalservices.RestartPolicy
	Protocol      = externalservices.Protocol
)

// Restart policies (§5.5), protocols, readiness protocols and defaults.
const (
	RestartAlways  = externalservices.RestartPolicyAlways     // restart after 200 ms (exit 0) or 1 s (error)
	RestartOnError = externalservices.RestartPolicyOnError    // complete on exit 0, restart after 1 s on error
	RestartAll     = externalservices.RestartPolicyAll        // complete on exit 0, crash the worker on error
	RestartNever   = externalservices.RestartPolicyNever      // complete whatever the exit
	ProtocolNone   = externalservices.ProtocolNone            // stdin /dev/null, stdout logged
	ProtocolBinary = externalservices.ProtocolBinarySyndicate // application/syndicate
	ProtocolText   = externalservices.ProtocolTextSyndicate   // text/syndicate
	ReadyAtStart   = externalservices.ReadyAtStart
	ReadyFD        = externalservices.ReadyFD
	ReadySDNotify  = externalservices.ReadySDNotify
	ReadyListen    = externalservices.ReadyListen

	DefaultStopTimeout  = externalservices.DefaultStopTimeout
	DefaultReadyTimeout = externalservices.DefaultReadyTimeout
)

// The classes of spec errors (§5.3 treats them differently: see
// specAsserted).
var (
	ErrNotASpec     = externalservices.ErrNotASpec
	ErrInvalidField = externalservices.ErrInvalidField
	// ErrRestrictingKey: a misspelt key that restricts the daemon; the
	// daemon is failed and its process never runs (fail closed).
	ErrRestrictingKey = externalservices.ErrRestrictingKey
)

// ParseSpec is externalservices.ParseSpec: the error, when not nil, is a
// *schema.ParseError of class ErrNotASpec or ErrInvalidField.
func ParseSpec(v preserves.Value) (*Spec, error) { return externalservices.ParseSpec(v) }

// ParseSpecAt is externalservices.ParseSpecAt: ParseSpec of v written at
// `at` (an atom's place is its parent's to know).
func ParseSpecAt(v preserves.Value, at preserves.Pos) (*Spec, error) {
	return externalservices.ParseSpecAt(v, at)
}
