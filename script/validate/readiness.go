package validate

import (
	"github.com/syndicate-go/syndicate/preserves"
)

// readiness checks the readiness keys of a dictionary daemon spec
// (readiness, readyTimeout, watchdog; services/daemon/readiness.go has the
// run-time parser and the semantics). get looks a key up.
func (v *validator) readiness(get func(string) (preserves.Value, preserves.Value, bool)) {
	_, x, has := get("readiness")
	if !has {
		for _, k := range []string{"readyTimeout", "watchdog"} {
			if _, y, ok := get(k); ok {
				v.errorf(y, "%s needs a readiness protocol (a readiness key)", k)
			}
		}
		return
	}
	notify := false
	if !isUnknown(x) {
		notify = v.readinessProtocol(x)
	}
	if _, y, ok := get("readyOnStart"); ok && preserves.Unwrap(y) == preserves.Bool(true) {
		v.errorf(y, "readyOnStart: #t contradicts the readiness protocol (the daemon is ready when it says so)")
	}
	if _, y, ok := get("readyTimeout"); ok && !isUnknown(y) && !nonNegativeNumber(y) {
		v.errorf(y, "readyTimeout must be a non-negative number of seconds, not %s", render(y))
	}
	if _, y, ok := get("watchdog"); ok && !isUnknown(y) {
		if !nonNegativeNumber(y) || isZero(y) {
			v.errorf(y, "watchdog must be a positive number of seconds, not %s", render(y))
		} else if !notify && !isUnknown(x) {
			v.errorf(y, "watchdog needs readiness: sd-notify (WATCHDOG=1 is an sd_notify message)")
		}
	}
}

// readinessProtocol checks the value of `readiness`; it reports whether
// it is sd-notify.
func (v *validator) readinessProtocol(x preserves.Value) bool {
	const shapes = `<notification-fd N>, sd-notify, <tcp PORT>, <tcp "HOST" PORT> or <unix "PATH">`
	if s, ok := preserves.Unwrap(x).(preserves.Symbol); ok {
		if s == "sd-notify" {
			return true
		}
		v.errorf(x, "readiness: %s is not a readiness protocol (%s)", render(x), shapes)
		return false
	}
	l, f, ok := label(x)
	intIn := func(at preserves.Value, lo, hi int64, what string) {
		if isUnknown(at) {
			return
		}
		if n, ok := preserves.Unwrap(at).(preserves.Int); !ok || int64(n) < lo || int64(n) > hi {
			v.errorf(at, "%s must be an integer from %d to %d, not %s", what, lo, hi, render(at))
		}
	}
	switch {
	case ok && l == "notification-fd" && len(f) == 1:
		intIn(f[0], 3, 255, "notification-fd (0-2 are stdio)")
	case ok && l == "tcp" && len(f) == 1:
		intIn(f[0], 1, 65535, "tcp port")
	case ok && l == "tcp" && len(f) == 2:
		v.str(f[0], "tcp host")
		intIn(f[1], 1, 65535, "tcp port")
	case ok && l == "unix" && len(f) == 1:
		v.str(f[0], "unix socket path")
	default:
		v.errorf(x, "readiness: %s is not a readiness protocol (%s)", render(x), shapes)
	}
	return false
}

func isZero(x preserves.Value) bool {
	switch n := preserves.Unwrap(x).(type) {
	case preserves.Int:
		return n == 0
	case preserves.Double:
		return n.Float64() == 0
	}
	return false
}
