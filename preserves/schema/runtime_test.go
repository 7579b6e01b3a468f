package schema_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/syndicate-go/syndicate/preserves"
	"github.com/syndicate-go/syndicate/preserves/schema"
)

// TestMapValueSortsOnce: a Go map's entries come out in Preserves key
// order, the dictionary NewDictionary would build, though MapValue
// builds it with NewSortedDictionary (no second check).
func TestMapValueSortsOnce(t *testing.T) {
	m := map[preserves.Symbol]string{}
	var es []preserves.DictEntry
	for _, k := range []string{"z", "a", "é", "A", "", "ab", "b", "aa", "zz", "m"} {
		m[preserves.Symbol(k)] = k + "!"
		es = append(es, preserves.DictEntry{Key: preserves.Symbol(k), Value: preserves.String(k + "!")})
	}
	for range 20 { // map iteration order varies
		got := schema.MapValue(m, func(k preserves.Symbol) preserves.Value { return k },
			func(v string) preserves.Value { return preserves.String(v) })
		want := preserves.NewDictionary(append([]preserves.DictEntry(nil), es...)...)
		require.Equal(t, want.Entries(), got.(*preserves.Dictionary).Entries())
		require.True(t, preserves.Equal(want, got))
	}
}

// TestDispatchGuards: an alternation tries only the alternatives whose
// guard holds; a Wildcard (as v or as a record's label) holds every guard.
func TestDispatchGuards(t *testing.T) {
	rec := preserves.NewRecord(preserves.Symbol("point"), preserves.Int(1))
	h, w := schema.SymbolHead(preserves.Annotate(rec, preserves.String("note")))
	require.Equal(t, preserves.Symbol("point"), h)
	require.False(t, w)
	k, w := schema.KindOf(preserves.Annotate(rec, preserves.String("note")))
	require.Equal(t, preserves.KindRecord, k)
	require.False(t, w)
	h, w = schema.SymbolHead(preserves.NewRecord(preserves.String("point")))
	require.Equal(t, preserves.Symbol(""), h)
	require.False(t, w)
	h, w = schema.SymbolHead(preserves.Symbol("point"))
	require.Equal(t, preserves.Symbol(""), h)
	require.False(t, w)
	wc := preserves.NewEmbedded(schema.Wildcard{})
	_, w = schema.SymbolHead(wc)
	require.True(t, w)
	_, w = schema.SymbolHead(preserves.NewRecord(wc))
	require.True(t, w)
	_, w = schema.KindOf(wc)
	require.True(t, w)
}

// TestAsIntSmall: integers parsed from preserves.Int have their value and
// sign, and grow like any big.Int.
func TestAsIntSmall(t *testing.T) {
	for _, x := range []int64{0, 1, -1, 200, -9001, 1<<63 - 1, -1 << 63} {
		n, err := schema.AsInt(preserves.Int(x))
		require.NoError(t, err)
		require.True(t, n.IsInt64())
		require.Equal(t, x, n.Int64())
		n.Lsh(n, 70)
		require.Equal(t, x, n.Rsh(n, 70).Int64())
	}
}
