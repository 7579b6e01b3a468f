package daemon

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/syndicate-go/syndicate/services"
)

// Fail closed (issue 24): a misspelt restricting key or sub-key makes the
// daemon failed with a "did you mean", and its process never runs.
func TestMisspeltRestrictionFailsClosed(t *testing.T) {
	parallel(t)
	for i, tc := range []struct{ key, reason string }{
		{`usr: "nobody"`, "did you mean user?"},
		{`grup: "nogroup"`, "did you mean group?"},
		{`limit: {nofile: 10}`, "did you mean limits?"},
		{`cgroups: {pidsMax: 10}`, "did you mean cgroup?"},
		{`limits: {nofiles: 10}`, "did you mean nofile?"},
		{`cgroup: {pidMax: 10}`, "did you mean pidsMax?"},
	} {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			h, _ := bootDaemons(t, Options{})
			marker := filepath.Join(t.TempDir(), "ran")
			require(h, "d", pv(t, fmt.Sprintf(`{argv: "touch %s", %s}`, marker, tc.key)))
			h.waitHas(state("d", services.StateFailed), true)
			i := h.waitInfo(t, "d", func(i services.Info) bool { return len(i.Reasons) > 0 }, "reason")
			if !strings.Contains(i.Reasons[0], tc.reason) {
				t.Errorf("reasons %q, want %q", i.Reasons, tc.reason)
			}
			h.settle()
			if _, err := os.Stat(marker); err == nil {
				t.Error("the daemon ran")
			}
			if h.everHad(state("d", services.StateReady)) {
				t.Error("ready with a misspelt restriction")
			}
		})
	}
}
