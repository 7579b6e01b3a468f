package logger

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"

	"github.com/syndicate-go/syndicate/dataspace"
	"github.com/syndicate-go/syndicate/preserves"
	"github.com/syndicate-go/syndicate/preserves/testutil"
	"github.com/syndicate-go/syndicate/services"
)

func mustParse(t *testing.T, s string) preserves.Value {
	t.Helper()
	v, err := preserves.ParseText(s)
	require.NoError(t, err)
	return v
}

func TestFormat(t *testing.T) {
	for _, c := range []struct{ ts, detail, want string }{
		{`"T"`, `{line: "hi", extra: 1}`, `T -[-] -: "hi" {extra: 1}`},
		{`"-"`, `{line: "hello"}`, `- -[-] -: "hello"`},
		{`"2025-01-02T03:04:05Z"`, `{pid: 4321, service: <daemon web>, stream: stderr, line: "oops\n"}`,
			`2025-01-02T03:04:05Z <daemon web>[4321] stderr: "oops\n"`},
		{`7`, `{line: #"\xff"}`, `- -[-] -: #x"ff"`},
	} {
		got, ok := Format(mustParse(t, c.ts), mustParse(t, c.detail))
		require.True(t, ok)
		require.Equal(t, c.want, got)
	}
	_, ok := Format(preserves.String("T"), preserves.Int(1))
	require.False(t, ok, "a non-dictionary DETAIL is ignored")
}

// Scenario 7 of services spec §13: a message to $log prints a line.
func TestScenario07LogMessagePrinted(t *testing.T) {
	out := &testutil.Buffer{}
	log := zerolog.New(out)
	sys := dataspace.NewSystem(dataspace.Options{Logger: log})
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		require.NoError(t, sys.Shutdown(ctx))
	}()
	sys.Spawn("main", func(t *dataspace.Turn) error {
		logds := t.Create(dataspace.NewDataspace())
		env := services.Env{Log: logds, Logger: log}
		if err := Boot(t, env); err != nil {
			return err
		}
		// Sent in the same turn as the subscription: the Observe is
		// delivered first, so nothing is lost.
		t.Message(logds, preserves.Rec("log", preserves.String("T"),
			preserves.NewDictionary(
				preserves.DictEntry{Key: preserves.Symbol("line"), Value: preserves.String("hi")},
				preserves.DictEntry{Key: preserves.Symbol("extra"), Value: preserves.Int(1)})))
		t.PreventInertCheck()
		return nil
	})
	deadline := time.Now().Add(20 * time.Second)
	for !strings.Contains(out.String(), `T -[-] -: \"hi\" {extra: 1}`) {
		if time.Now().After(deadline) {
			t.Fatalf("log line not printed; output: %s", out.String())
		}
		time.Sleep(5 * time.Millisecond)
	}
}
