package listener

import (
	"bufio"
	"io"
	"math/big"
	"net/http"
	"strings"
	"testing"

	"github.com/syndicate-go/syndicate/dataspace/relay"
	httpschema "github.com/syndicate-go/syndicate/dataspace/schemas/http"
	"github.com/syndicate-go/syndicate/preserves"
)

// BenchmarkTranslateRequest: one typical browser request into
// `<http-request …>`.
func BenchmarkTranslateRequest(b *testing.B) {
	raw := "GET /static/css/site.css?v=3&lang=en HTTP/1.1\r\nHost: example.org:9001\r\nUser-Agent: bench\r\nAccept: text/css,*/*;q=0.1\r\nAccept-Encoding: gzip, deflate\r\nCookie: a=b; c=d\r\n\r\n"
	r, err := http.ReadRequest(bufio.NewReader(strings.NewReader(raw)))
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := translateRequest(r, nil, 9001, 1); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkWebSocketWrite: framing a relay writer's buffer of 64 small
// binary packets, one frame each.
func BenchmarkWebSocketWrite(b *testing.B) {
	var buf []byte
	for i := 0; i < 64; i++ {
		buf = append(buf, packet(b, `[[0 <A <present "someone" 12345> 7>]]`, relay.Binary)...)
	}
	ws := newWSConn(&memConn{w: io.Discard}, nil)
	b.SetBytes(int64(len(buf)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ws.Write(buf); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkParseResponse: decoding the HttpResponse messages of a small
// streamed response (status, header, 16 chunks, done); chunks are the
// per-message path of a streaming responder.
func BenchmarkParseResponse(b *testing.B) {
	msgs := []preserves.Value{
		httpschema.HttpResponseStatus{Code: big.NewInt(200), Message: "OK"}.ToValue(),
		httpschema.HttpResponseHeader{Name: "content-type", Value: "text/plain"}.ToValue(),
	}
	for i := 0; i < 16; i++ {
		msgs = append(msgs, httpschema.HttpResponseChunk{Chunk: httpschema.ChunkBytes{Value: []byte("a chunk of a streamed response\n")}}.ToValue())
	}
	msgs = append(msgs, httpschema.HttpResponseDone{Chunk: httpschema.ChunkString{Value: ""}}.ToValue())
	b.ReportAllocs()
	for b.Loop() {
		for _, m := range msgs {
			if ev := parseResponse(m); ev.kind == respInvalid {
				b.Fatal(preserves.Show(m))
			}
		}
	}
}

// chunkFast answers only as the generated parser does.
func TestChunkFastAgreesWithSchema(t *testing.T) {
	vals := []preserves.Value{
		preserves.Rec("chunk", preserves.String("héllo")),
		preserves.Rec("chunk", preserves.ByteString("\x00\xff")),
		preserves.Rec("done", preserves.String("")),
		preserves.Rec("done", preserves.ByteString("x")),
		preserves.Rec("chunk", preserves.Int(1)),
		preserves.Rec("chunk"),
		preserves.Rec("chunk", preserves.String("a"), preserves.String("b")),
		preserves.Rec("done", preserves.Symbol("s")),
		preserves.Rec("header", preserves.Symbol("a"), preserves.String("b")),
		preserves.NewRecord(preserves.String("chunk"), preserves.String("a")),
		preserves.Sequence{preserves.String("chunk")},
	}
	fast := 0
	for _, v := range vals {
		ev, ok := chunkFast(v)
		if !ok {
			continue
		}
		fast++
		m, err := httpschema.ParseHttpResponse(v)
		if err != nil {
			t.Fatalf("%s: fast path answered, the schema rejects: %v", preserves.Show(v), err)
		}
		var want respEvent
		switch m := m.(type) {
		case httpschema.HttpResponseChunk:
			want = respEvent{kind: respChunk, data: chunkData(m.Chunk)}
		case httpschema.HttpResponseDone:
			want = respEvent{kind: respDone, data: chunkData(m.Chunk)}
		default:
			t.Fatalf("%s: fast path answered %v, the schema %T", preserves.Show(v), ev.kind, m)
		}
		if ev.kind != want.kind || string(ev.data) != string(want.data) {
			t.Errorf("%s: fast %v %q, schema %v %q", preserves.Show(v), ev.kind, ev.data, want.kind, want.data)
		}
	}
	if fast != 4 {
		t.Errorf("fast path answered %d values, want 4", fast)
	}
}
