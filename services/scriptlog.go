package services

import (
	"github.com/syndicate-go/syndicate/dataspace"
	"github.com/syndicate-go/syndicate/preserves"
)

// NewScriptLog creates, in the active facet, the `$log` that scripts hold
// (issue 22): a capability for the log dataspace that passes assertions
// and syncs on as they are (so scripts observe `$log` as before) and
// marks every `<log TIMESTAMP DETAIL>` message as a script's, setting
// DETAIL's `source` to SourceScript whatever the script put there. The
// daemon service and the server's lifecycle events send to the log
// dataspace itself, so a line marked daemon or server was sent by the
// server, and no script, nor a peer a script hands its `$log` to, can
// forge one.
//
// Like NewForwarder it only stores and passes values on (rebuilding one
// dictionary), so it cannot fail on any value: it may live in the
// top-level actor.
func NewScriptLog(t *dataspace.Turn, logds *dataspace.Ref) *dataspace.Ref {
	return t.Create(&scriptLog{Proxy{Target: logds}})
}

// scriptLog is a Proxy that marks the messages.
type scriptLog struct{ Proxy }

func (s *scriptLog) Message(t *dataspace.Turn, v preserves.Value) error {
	return s.Proxy.Message(t, MarkScript(v))
}

// MarkScript returns v with the source of a `<log TIMESTAMP DETAIL>`
// message set to SourceScript; any other value is returned as it is.
func MarkScript(v preserves.Value) preserves.Value {
	r, ok := preserves.Unwrap(v).(*preserves.Record)
	if !ok || len(r.Fields) != 2 || !preserves.Equal(r.Label, LabelLog) {
		return v
	}
	d, ok := preserves.Unwrap(r.Fields[1]).(*preserves.Dictionary)
	if !ok {
		return v
	}
	entries := make([]preserves.DictEntry, 0, d.Len()+1)
	for _, e := range d.Entries() {
		if !preserves.Equal(e.Key, LogKeySource) {
			entries = append(entries, e)
		}
	}
	entries = append(entries, preserves.DictEntry{Key: LogKeySource, Value: SourceScript})
	return preserves.NewRecord(LabelLog, r.Fields[0], preserves.NewDictionary(entries...))
}
