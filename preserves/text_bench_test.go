package preserves_test

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"testing"

	"github.com/syndicate-go/syndicate/preserves"
)

// benchPackets builds n relay-style packets, each a turn of one to four
// events such as [[3 <A <Says "bench" #"…"> 17>]], as Preserves values and
// as the equivalent JSON (records become arrays headed by their label,
// byte strings base64 strings).
func benchPackets(n int) (text, js []byte) {
	rng := rand.New(rand.NewPCG(1, 2))
	var tb, jb bytes.Buffer
	words := []string{"bench", "hello", "presence", "a longer chat message with spaces", "ok"}
	for i := 0; i < n; i++ {
		var evs preserves.Sequence
		var jevs []any
		for e := 0; e < 1+rng.IntN(4); e++ {
			oid := int64(rng.IntN(1000))
			h := int64(rng.IntN(100000))
			payload := make([]byte, 8+rng.IntN(24))
			for k := range payload {
				payload[k] = byte(rng.IntN(256))
			}
			w := words[rng.IntN(len(words))]
			var ev preserves.Value
			var jev any
			switch rng.IntN(3) {
			case 0:
				ev = preserves.Rec("A", preserves.Rec("Says", preserves.String(w), preserves.ByteString(payload)), preserves.Int(h))
				jev = []any{"A", []any{"Says", w, base64.StdEncoding.EncodeToString(payload)}, h}
			case 1:
				ev = preserves.Rec("M", preserves.Rec("Says", preserves.String(w), preserves.NewDouble(rng.Float64()*1000)))
				jev = []any{"M", []any{"Says", w, rng.Float64() * 1000}}
			default:
				ev = preserves.Rec("R", preserves.Int(h))
				jev = []any{"R", h}
			}
			evs = append(evs, preserves.Sequence{preserves.Int(oid), ev})
			jevs = append(jevs, []any{oid, jev})
		}
		tb.WriteString(preserves.FormatText(evs))
		tb.WriteByte('\n')
		b, err := json.Marshal(jevs)
		if err != nil {
			panic(err)
		}
		jb.Write(b)
		jb.WriteByte('\n')
	}
	return tb.Bytes(), jb.Bytes()
}

// cpuThroughput runs body in the benchmark loop and reports, besides the
// usual wall-clock MB/s, "cpu-MB/s": bytes per CPU second of the process
// (GC included).
func cpuThroughput(b *testing.B, n int, body func()) {
	b.SetBytes(int64(n))
	b.ReportAllocs()
	start := processCPU()
	iters := 0
	for b.Loop() {
		body()
		iters++
	}
	if cpu := processCPU() - start; cpu > 0 {
		b.ReportMetric(float64(n)*float64(iters)/1e6/cpu.Seconds(), "cpu-MB/s")
	}
}

func BenchmarkTextParse(b *testing.B) {
	text, _ := benchPackets(10000)
	cpuThroughput(b, len(text), func() {
		vs, err := preserves.ReadAllText(text, preserves.TextOptions{})
		if err != nil || len(vs) != 10000 {
			b.Fatal(err, len(vs))
		}
	})
}

// BenchmarkTextParseStream reads the same corpus through NewTextReader from
// an io.Reader (buffer refills and compaction included).
func BenchmarkTextParseStream(b *testing.B) {
	text, _ := benchPackets(10000)
	cpuThroughput(b, len(text), func() {
		r := preserves.NewTextReader(bytes.NewReader(text), preserves.TextOptions{})
		n := 0
		for {
			_, err := r.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				b.Fatal(err)
			}
			n++
		}
		if n != 10000 {
			b.Fatal(n)
		}
	})
}

// BenchmarkTextParsePositions is the script compiler's mode: every value
// wrapped with its position, annotations kept.
func BenchmarkTextParsePositions(b *testing.B) {
	text, _ := benchPackets(10000)
	cpuThroughput(b, len(text), func() {
		if _, err := preserves.ReadAllText(text, preserves.TextOptions{Positions: true, Annotations: true}); err != nil {
			b.Fatal(err)
		}
	})
}

// BenchmarkJSONParse is the comparison point: encoding/json decoding the
// equivalent JSON stream into interface values.
func BenchmarkJSONParse(b *testing.B) {
	_, js := benchPackets(10000)
	cpuThroughput(b, len(js), func() {
		d := json.NewDecoder(bytes.NewReader(js))
		n := 0
		for {
			var v any
			err := d.Decode(&v)
			if err == io.EOF {
				break
			}
			if err != nil {
				b.Fatal(err)
			}
			n++
		}
		if n != 10000 {
			b.Fatal(n)
		}
	})
}

// BenchmarkJSONUnmarshal decodes the JSON corpus as one array with
// json.Unmarshal, encoding/json's fastest path.
func BenchmarkJSONUnmarshal(b *testing.B) {
	_, js := benchPackets(10000)
	arr := append([]byte{'['}, bytes.ReplaceAll(bytes.TrimSpace(js), []byte{'\n'}, []byte{','})...)
	arr = append(arr, ']')
	cpuThroughput(b, len(arr), func() {
		var v []any
		if err := json.Unmarshal(arr, &v); err != nil || len(v) != 10000 {
			b.Fatal(err)
		}
	})
}

func BenchmarkTextFormat(b *testing.B) {
	text, _ := benchPackets(10000)
	vs, err := preserves.ReadAllText(text, preserves.TextOptions{})
	if err != nil {
		b.Fatal(err)
	}
	var buf []byte
	cpuThroughput(b, len(text), func() {
		buf = buf[:0]
		for _, v := range vs {
			buf = preserves.AppendText(buf, v)
			buf = append(buf, '\n')
		}
	})
	if !bytes.Equal(buf, text) {
		b.Fatal(fmt.Sprintf("formatting differs from the corpus (%d vs %d bytes)", len(buf), len(text)))
	}
}
