package testutil

import (
	"math"
	"math/big"
	"math/rand/v2"
	"strings"

	"github.com/syndicate-go/syndicate/preserves"
)

// Hostile generates the Preserves values a hostile script or peer might
// send (issue 12's hostile-vocabulary harness): every kind of value, with
// the awkward cases over-represented: sets, dictionaries with odd keys,
// embedded capabilities, NaN and infinities, huge integers, empty records,
// records with odd labels, deep nesting, source positions.
//
// Its choices come from a byte string (a fuzz input; 0 once exhausted, so
// every input is a finite value) or, with NewHostileSeeded, from a seeded
// generator. Symbols come from a fixed list that names none of the
// services that reach outside the process (`daemon`, `tcp`, `unix`,
// `config-watcher`, `relay-listener`): a harness adds those itself,
// sanitised, so generated values never start a program, open a file by a
// random name or leave the loopback interface.
type Hostile struct {
	data []byte
	rnd  *rand.Rand
	// Embed returns an embedded capability for a generated value (nil:
	// an embedded string, which is not a capability).
	Embed func() preserves.Value
	// MaxDepth bounds ordinary nesting (the deep-nesting case goes deeper
	// on purpose); 0 means 4.
	MaxDepth int
}

// NewHostile draws choices from data.
func NewHostile(data []byte) *Hostile { return &Hostile{data: data} }

// NewHostileSeeded draws choices from a generator seeded with seed.
func NewHostileSeeded(seed uint64) *Hostile {
	return &Hostile{rnd: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))}
}

// Byte returns the next choice.
func (h *Hostile) Byte() byte {
	if h.rnd != nil {
		return byte(h.rnd.UintN(256))
	}
	if len(h.data) == 0 {
		return 0
	}
	b := h.data[0]
	h.data = h.data[1:]
	return b
}

// Intn returns a choice in [0, n).
func (h *Hostile) Intn(n int) int { return int(h.Byte()) % n }

// Exhausted reports whether a byte-driven generator has used its input.
func (h *Hostile) Exhausted() bool { return h.rnd == nil && len(h.data) == 0 }

// HostileSymbols are the symbols generated values use: labels and
// dictionary keys of the services' vocabularies, pattern and protocol
// words, and oddities.
var HostileSymbols = []string{
	"a", "q", "ok", "error", "resolve", "bind", "bound", "ref", "noise", "oid", "key", "sig",
	"caveats", "service", "secretKey", "preSharedKeys", "protocol", "rewrite", "reject", "alts",
	"rec", "arr", "dict", "lit", "group", "discard", "_", "Observe", "log", "line", "exit",
	"milestone", "require-service", "run-service", "service-state", "depends-on",
	"restart-service", "service-object", "started", "ready", "failed", "complete",
	"http-bind", "http-request", "http-response", "http-router", "http-static-files",
	"http-listener", "gatekeeper", "debt-reporter", "connect-transport", "resolve-path",
	"resolve-path-step", "route", "initiator", "packet", "attenuate", "A", "R", "M", "S",
	"", " ", "\x00", "λ", "a b", "#f", "<", "[",
}

var hostileStrings = []string{
	"", "x", "-", "hello", "\x00", "\xff\xfe", "λ→∀", "..", ".", "a/b", "%s%n", "${HOME}",
	"Noise_NN_25519_ChaChaPoly_BLAKE2s", "Noise_XX_25519_AESGCM_SHA256", "GET", "/",
	strings.Repeat("x", 4096), "\u202e", "\r\n", "line\nbreak",
}

// Value returns one generated value.
func (h *Hostile) Value() preserves.Value { return h.value(0) }

func (h *Hostile) value(depth int) preserves.Value {
	max := h.MaxDepth
	if max == 0 {
		max = 4
	}
	k := h.Intn(20)
	if depth >= max && k >= 9 {
		k %= 9 // only atoms below the depth limit
	}
	switch k {
	case 0:
		return preserves.Bool(h.Byte()&1 == 1)
	case 1:
		return preserves.Int(h.smallInt())
	case 2:
		return h.bigInt()
	case 3:
		return h.double()
	case 4:
		return preserves.String(hostileStrings[h.Intn(len(hostileStrings))])
	case 5:
		n := h.Intn(40)
		b := make([]byte, n)
		for i := range b {
			b[i] = h.Byte()
		}
		if h.Byte()%8 == 0 {
			b = make([]byte, 32) // the size of a key
		}
		return preserves.ByteString(b)
	case 6, 7:
		return h.Symbol()
	case 8:
		if h.Embed != nil {
			return h.Embed()
		}
		return preserves.NewEmbedded(preserves.String("not a capability"))
	case 9, 10:
		return h.record(depth)
	case 11:
		return h.sequence(depth)
	case 12:
		n := h.Intn(4)
		es := make([]preserves.Value, n)
		for i := range es {
			es[i] = h.value(depth + 1)
		}
		return preserves.NewSet(es...)
	case 13, 14:
		n := h.Intn(5)
		es := make([]preserves.DictEntry, n)
		for i := range es {
			var key preserves.Value
			if h.Byte()%3 == 0 {
				key = h.Symbol()
			} else {
				key = h.value(depth + 1) // odd keys: sets, records, doubles, …
			}
			es[i] = preserves.DictEntry{Key: key, Value: h.value(depth + 1)}
		}
		return preserves.NewDictionary(es...)
	case 15:
		// Deep nesting, past any recursion a careless walker allows.
		n := 50 + h.Intn(200)*10
		var v preserves.Value = h.value(max)
		for i := 0; i < n; i++ {
			if i%2 == 0 {
				v = preserves.Sequence{v}
			} else {
				v = preserves.NewRecord(preserves.Symbol("d"), v)
			}
		}
		return v
	case 16:
		// Empty records, with plain and odd labels.
		switch h.Intn(3) {
		case 0:
			return preserves.NewRecord(h.Symbol())
		case 1:
			return preserves.NewRecord(h.value(depth + 1))
		default:
			return preserves.NewRecord(preserves.NewSet())
		}
	case 17:
		// A script's position annotation, as the config watcher attaches.
		return &preserves.Annotated{Pos: preserves.Pos{File: "hostile.pr", Line: 1 + h.Intn(50), Col: 1 + h.Intn(80)}, Item: preserves.Strip(h.value(depth + 1))}
	case 18:
		return preserves.Annotate(h.value(depth+1), h.value(max))
	default:
		return preserves.Sequence{}
	}
}

// Symbol returns one of HostileSymbols.
func (h *Hostile) Symbol() preserves.Symbol {
	return preserves.Symbol(HostileSymbols[h.Intn(len(HostileSymbols))])
}

func (h *Hostile) record(depth int) preserves.Value {
	var label preserves.Value = h.Symbol()
	if h.Byte()%5 == 0 {
		label = h.value(depth + 1) // labels that are not symbols
	}
	n := h.Intn(5)
	fs := make([]preserves.Value, n)
	for i := range fs {
		fs[i] = h.value(depth + 1)
	}
	return preserves.NewRecord(label, fs...)
}

func (h *Hostile) sequence(depth int) preserves.Value {
	n := h.Intn(5)
	s := make(preserves.Sequence, n)
	for i := range s {
		s[i] = h.value(depth + 1)
	}
	return s
}

func (h *Hostile) smallInt() int64 {
	switch h.Intn(8) {
	case 0:
		return math.MaxInt64
	case 1:
		return math.MinInt64
	case 2:
		return -1
	case 3:
		return math.MaxInt32 + 1
	case 4:
		return 65536
	default:
		return int64(h.Byte()) - 16
	}
}

func (h *Hostile) bigInt() preserves.Value {
	exp := []int64{64, 65, 200, 1000, 10000}[h.Intn(5)]
	n := new(big.Int).Lsh(big.NewInt(1), uint(exp))
	if h.Byte()&1 == 1 {
		n.Neg(n)
	}
	n.Add(n, big.NewInt(int64(h.Intn(3))-1))
	return preserves.NewBigInt(n)
}

func (h *Hostile) double() preserves.Value {
	fs := []float64{math.NaN(), math.Inf(1), math.Inf(-1), math.Copysign(0, -1), 0, 1e-310, math.MaxFloat64, 0.001, 1.5, -3}
	i := h.Intn(len(fs) + 1)
	if i == len(fs) {
		// A NaN with a payload.
		return preserves.DoubleFromBits(0x7ff0000000000001 | uint64(h.Byte())<<8)
	}
	return preserves.NewDouble(fs[i])
}
