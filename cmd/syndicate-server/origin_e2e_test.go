//go:build e2e

package main

import (
	"fmt"
	"os/exec"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// Issue 26: "restart requested, and by whom". The lifecycle line in the
// daemon's log stream says who asked: the operator through the admin
// socket (uid, pid, command line), or the script that sent the message
// (file:line:col).
func TestE2ERestartRequestedByWhom(t *testing.T) {
	t.Parallel()
	client := buildClient(t)
	dir := t.TempDir()
	sock := filepath.Join(dir, "admin.sock")
	cfg := filepath.Join(dir, "config")
	script := filepath.Join(cfg, "web.pr")
	writeFile(t, script, `<require-service <daemon web>>
<daemon web "exec sleep 100">
?? <kick> [
  ! <restart-service <daemon web>>
]
`)
	r := start(t, "-c", cfg, "--admin-socket", sock)
	logs := func() string {
		out, _ := exec.Command(client, "--admin", sock, "logs", "-n", "100", "web").CombinedOutput()
		return string(out)
	}
	eventually(t, 20*time.Second, "web ready", func() bool { return regexp.MustCompile(`web> syndicate: ready`).MatchString(logs()) })

	out, err := exec.Command(client, "--admin", sock, "restart", "web").CombinedOutput()
	require.NoError(t, err, "%s", out)
	byOperator := regexp.MustCompile(`syndicate: restart requested by uid \d+, pid \d+ \(syndicate --admin \S+ restart web\), over the admin socket`)
	eventually(t, 20*time.Second, "the operator named", func() bool { return byOperator.MatchString(logs()) })

	out, err = exec.Command(client, "--admin", sock, "send", "<kick>").CombinedOutput()
	require.NoError(t, err, "%s", out)
	byScript := regexp.MustCompile(regexp.QuoteMeta(fmt.Sprintf("syndicate: restart requested by the script at %s:4:", script)))
	eventually(t, 20*time.Second, "the script named", func() bool { return byScript.MatchString(logs()) })
	require.Equal(t, 0, r.stop(t))
}
