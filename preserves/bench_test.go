package preserves

// Binary codec benchmarks against encoding/json on an equivalent corpus:
// 10,000 wire-protocol-like packets
//
//	[[OID <A <Says "bench" #"…16–64 random bytes…"> HANDLE>] …]
//
// (one to three turn events each) plus every conformance Test value and the
// whole conformance suite. The JSON corpus is the same values mapped to JSON
// shapes (records become {"label": [fields…]}, byte strings base64 via
// []byte, sets arrays, dictionaries objects), marshalled by encoding/json and
// decoded into any. Each benchmark processes the whole corpus per op, so the
// ns/op figures compare directly; MB/s uses each format's own byte count.
//
//	go test -run '^$' -bench 'Binary|JSON(De|En)code|DecoderStream|VsJSON' -benchmem ./preserves
//
// Besides wall-clock ns/op and MB/s each benchmark reports cpu-ns/op and
// cpu-MB/s, measured from the process's CPU time, which stay meaningful on a
// loaded machine. The speed of this shared machine also drifts by a third
// within seconds, more than the differences being measured, so the ratio to
// encoding/json is measured by BenchmarkDecodeVsJSON and
// BenchmarkEncodeVsJSON instead, in rounds that run both codecs back to
// back (see binPairedRatio).

import (
	"encoding/hex"
	"encoding/json"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"sync"
	"testing"
	"time"
)

// binBenchCorpus is the corpus in encoded form only. The value trees it was
// made from are not kept: a package-level tree would stay live through every
// benchmark, and each garbage collection a decode benchmark triggers would
// then also mark tens of megabytes of pointers that the benchmark never
// touches — a cost unrelated to decoding that weighs most on the decoder
// that allocates least between collections. Each benchmark keeps live only
// its own input: bytes for the decoders, freshly built values for the
// encoders (binValues, binJSONValues).
type binBenchCorpus struct {
	binary    [][]byte
	binBytes  int64
	stream    []byte
	nValues   int
	jsonText  [][]byte
	jsonBytes int64
}

var (
	binCorpusOnce sync.Once
	binCorpus     binBenchCorpus
)

func binLoadCorpus(b *testing.B) *binBenchCorpus {
	binCorpusOnce.Do(func() {
		c := &binCorpus
		values := binValues(b)
		c.nValues = len(values)
		for _, v := range values {
			enc := EncodeCanonical(v)
			c.binary = append(c.binary, enc)
			c.binBytes += int64(len(enc))
			c.stream = append(c.stream, enc...)
			text, err := json.Marshal(binToJSON(v))
			if err != nil {
				panic(err)
			}
			c.jsonText = append(c.jsonText, text)
			c.jsonBytes += int64(len(text))
		}
	})
	return &binCorpus
}

// binValues builds the corpus values afresh (deterministically), for the
// encode benchmarks; they are garbage once the benchmark returns.
func binValues(b *testing.B) []Value {
	var values []Value
	rng := rand.New(rand.NewPCG(1, 2))
	handle := 0
	for range 10000 {
		var events Sequence
		for range 1 + rng.IntN(3) {
			payload := make([]byte, 16+rng.IntN(49))
			for i := range payload {
				payload[i] = byte(rng.Uint32())
			}
			handle++
			events = append(events, Sequence{Int(rng.IntN(8)),
				Rec("A", Rec("Says", String("bench"), ByteString(payload)), Int(handle))})
		}
		values = append(values, Sequence{events})
	}
	for _, tc := range binLoadCases(b) {
		if tc.av != nil {
			values = append(values, Strip(tc.av))
		}
	}
	whole, err := DecodeBinary(binReadSamples(b), DecodeOptions{})
	if err != nil {
		panic(err)
	}
	return append(values, whole)
}

// binJSONValues is binValues mapped to JSON shapes, for BenchmarkJSONEncode.
func binJSONValues(b *testing.B) []any {
	var out []any
	for _, v := range binValues(b) {
		out = append(out, binToJSON(v))
	}
	return out
}

// binToJSON maps a Preserves value onto the closest JSON shape.
func binToJSON(v Value) any {
	switch x := Unwrap(v).(type) {
	case Bool:
		return bool(x)
	case Int:
		return int64(x)
	case *BigInt:
		return json.Number(x.v.String())
	case Double:
		f := x.Float64()
		if math.IsInf(f, 0) || math.IsNaN(f) {
			return hex.EncodeToString(EncodeCanonical(x))
		}
		return f
	case String:
		return string(x)
	case Symbol:
		return string(x)
	case ByteString:
		return []byte(x)
	case *Record:
		fields := make([]any, len(x.Fields))
		for i, f := range x.Fields {
			fields[i] = binToJSON(f)
		}
		return map[string]any{binJSONKey(x.Label): fields}
	case Sequence:
		out := make([]any, len(x))
		for i, f := range x {
			out[i] = binToJSON(f)
		}
		return out
	case *Set:
		out := make([]any, x.Len())
		for i, f := range x.Elems() {
			out[i] = binToJSON(f)
		}
		return out
	case *Dictionary:
		out := make(map[string]any, x.Len())
		for _, e := range x.Entries() {
			out[binJSONKey(e.Key)] = binToJSON(e.Value)
		}
		return out
	case *Embedded:
		return map[string]any{"embedded": binToJSON(x.Payload.(Value))}
	}
	panic("unreachable")
}

func binJSONKey(v Value) string {
	switch x := Unwrap(v).(type) {
	case Symbol:
		return string(x)
	case String:
		return string(x)
	}
	return hex.EncodeToString(EncodeCanonical(v))
}

// binThroughput runs body once per benchmark iteration over n bytes and
// reports, besides ns/op and MB/s, the process CPU time per op and MB per CPU
// second (which includes the garbage collector's work on other threads).
func binThroughput(b *testing.B, n int64, body func()) {
	b.SetBytes(n)
	b.ReportAllocs()
	start := binProcessCPU()
	iters := 0
	for b.Loop() {
		body()
		iters++
	}
	if cpu := binProcessCPU() - start; cpu > 0 && iters > 0 {
		b.ReportMetric(float64(cpu.Nanoseconds())/float64(iters), "cpu-ns/op")
		b.ReportMetric(float64(n)*float64(iters)/1e6/cpu.Seconds(), "cpu-MB/s")
	}
}

func BenchmarkBinaryDecode(b *testing.B) {
	c := binLoadCorpus(b)
	binThroughput(b, c.binBytes, func() {
		for _, in := range c.binary {
			if _, err := DecodeBinary(in, DecodeOptions{}); err != nil {
				b.Fatal(err)
			}
		}
	})
}

func BenchmarkJSONDecode(b *testing.B) {
	c := binLoadCorpus(b)
	binThroughput(b, c.jsonBytes, func() {
		for _, in := range c.jsonText {
			var v any
			if err := json.Unmarshal(in, &v); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkBinaryEncode allocates a fresh slice per value, like json.Marshal.
func BenchmarkBinaryEncode(b *testing.B) {
	c := binLoadCorpus(b)
	values := binValues(b)
	binThroughput(b, c.binBytes, func() {
		for _, v := range values {
			_ = EncodeCanonical(v)
		}
	})
}

// BenchmarkBinaryAppend reuses one buffer, as a connection writer does.
func BenchmarkBinaryAppend(b *testing.B) {
	c := binLoadCorpus(b)
	values := binValues(b)
	var buf []byte
	binThroughput(b, c.binBytes, func() {
		for _, v := range values {
			buf = AppendCanonical(buf[:0], v)
		}
	})
}

func BenchmarkJSONEncode(b *testing.B) {
	c := binLoadCorpus(b)
	values := binJSONValues(b)
	binThroughput(b, c.jsonBytes, func() {
		for _, v := range values {
			if _, err := json.Marshal(v); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkDecoderStream decodes the corpus as one stream delivered in 4 KiB
// writes through the incremental Decoder.
func BenchmarkDecoderStream(b *testing.B) {
	c := binLoadCorpus(b)
	binThroughput(b, int64(len(c.stream)), func() {
		dec := NewDecoder(DecodeOptions{})
		n := 0
		for rest := c.stream; len(rest) > 0; {
			k := min(4096, len(rest))
			dec.Write(rest[:k])
			rest = rest[k:]
			for {
				if _, err := dec.Next(); err != nil {
					break
				}
				n++
			}
		}
		if n != c.nValues {
			b.Fatalf("decoded %d values, want %d", n, c.nValues)
		}
	})
}

// binPairedRatio runs ours and theirs back to back once per benchmark
// iteration, alternating which goes first, and reports the median over the
// rounds of (our MB/s) / (their MB/s) as "x-json". Each round's two runs see
// the same machine state, so drift in the machine's speed, which swamps
// separate benchmark runs here, cancels out of each round's ratio. Each run
// starts from a freshly collected heap: without that, one side's garbage is
// partly collected in the other's time (sharing one process and one heap
// favoured the side that allocates less, by about 5%). The result agrees
// with running the two standalone benchmarks as alternating processes.
func binPairedRatio(b *testing.B, ours func(), ourBytes int64, theirs func(), theirBytes int64) {
	var ratios []float64
	timed := func(f func()) float64 {
		// Each side starts from a collected heap, so neither pays for
		// collecting the other's garbage.
		runtime.GC()
		start := time.Now()
		f()
		return time.Since(start).Seconds()
	}
	for i := 0; b.Loop(); i++ {
		var o, t float64
		if i%2 == 0 {
			o, t = timed(ours), timed(theirs)
		} else {
			t, o = timed(theirs), timed(ours)
		}
		ratios = append(ratios, (float64(ourBytes)/o)/(float64(theirBytes)/t))
	}
	slices.Sort(ratios)
	b.ReportMetric(ratios[len(ratios)/2], "x-json")
}

// BenchmarkDecodeVsJSON is BenchmarkBinaryDecode against BenchmarkJSONDecode,
// paired (see binPairedRatio); the target is x-json ≥ 3.
func BenchmarkDecodeVsJSON(b *testing.B) {
	c := binLoadCorpus(b)
	binPairedRatio(b, func() {
		for _, in := range c.binary {
			if _, err := DecodeBinary(in, DecodeOptions{}); err != nil {
				b.Fatal(err)
			}
		}
	}, c.binBytes, func() {
		for _, in := range c.jsonText {
			var v any
			if err := json.Unmarshal(in, &v); err != nil {
				b.Fatal(err)
			}
		}
	}, c.jsonBytes)
}

// BenchmarkEncodeVsJSON is BenchmarkBinaryEncode against BenchmarkJSONEncode,
// paired (see binPairedRatio).
func BenchmarkEncodeVsJSON(b *testing.B) {
	c := binLoadCorpus(b)
	values, jsonValues := binValues(b), binJSONValues(b)
	binPairedRatio(b, func() {
		for _, v := range values {
			_ = EncodeCanonical(v)
		}
	}, c.binBytes, func() {
		for _, v := range jsonValues {
			if _, err := json.Marshal(v); err != nil {
				b.Fatal(err)
			}
		}
	}, c.jsonBytes)
}
