package control

import (
	"testing"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"

	"github.com/syndicate-go/syndicate/preserves"
)

func TestExitMessages(t *testing.T) {
	for _, c := range []struct {
		msg  string
		code int // -1: ignored
	}{
		{`<exit 2>`, 2},
		{`<exit 0>`, 0},
		{`<exit 5000000000>`, 1},
		{`<exit -2147483649>`, 1},
		{`<exit 100000000000000000000000>`, 1},
		{`<exit "2">`, -1},
		{`<exit>`, -1},
		{`<exit 1 2>`, -1},
		{`<quit 2>`, -1},
		{`exit`, -1},
	} {
		got := -1
		e := &Entity{Log: zerolog.Nop(), Exit: func(code int) { got = code }}
		v, err := preserves.ParseText(c.msg)
		require.NoError(t, err)
		require.NoError(t, e.Message(nil, v))
		require.Equal(t, c.code, got, c.msg)
	}
}
