package externalservices

import (
	"testing"

	"golang.org/x/sys/unix"
)

// The capability table is the kernel's numbering: as many names as
// numbers, each at its number.
func TestCapabilityNumbers(t *testing.T) {
	t.Parallel()
	if got, want := len(capabilityNames), unix.CAP_LAST_CAP+1; got != want {
		t.Fatalf("%d capability names, the kernel has %d", got, want)
	}
	for name, want := range map[string]int{
		"CAP_CHOWN": unix.CAP_CHOWN, "CAP_NET_BIND_SERVICE": unix.CAP_NET_BIND_SERVICE,
		"CAP_SYS_ADMIN": unix.CAP_SYS_ADMIN, "CAP_LEASE": unix.CAP_LEASE, "CAP_SYSLOG": unix.CAP_SYSLOG,
		"CAP_CHECKPOINT_RESTORE": unix.CAP_CHECKPOINT_RESTORE,
	} {
		if got, ok := Capabilities[name]; !ok || got != want {
			t.Errorf("Capabilities[%s] = %d, %v; want %d", name, got, ok, want)
		}
	}
}
