// Package event is the change stream's event, as CHANGES and the SSE
// stream carry it: a leaf package, so that a client can decode events
// without importing the journal follower (package changes).
package event

import (
	"encoding/json"

	"allot/inventory"
)

// Event is one committed mutation.
type Event struct {
	Seq uint64 `json:"seq"`
	// TimeMS is the batch's stamp: the engine's clock, in milliseconds
	// since the Unix epoch, when the op was applied (0 for ops journaled
	// by a release that did not stamp its frames).
	TimeMS int64  `json:"time_ms"`
	Op     string `json:"op"`
	Hold   string `json:"hold,omitempty"`
	Key    string `json:"key,omitempty"`
	// SKU is the record a catalog.set or catalog.del event changed (a
	// catalog event has no rows to name it); omitted on other events.
	SKU string `json:"sku,omitempty"`
	// Rows are the rows the op changed, in the op's own order (see
	// inventory.State.Touched); never nil, so that it encodes as [].
	Rows []Row `json:"rows"`
}

// Row is one row's change.
type Row struct {
	SKU        string `json:"sku"`
	Warehouse  string `json:"warehouse"`
	Condition  string `json:"condition"`
	Source     string `json:"source"`
	Delta      int64  `json:"delta"`
	CountAfter int64  `json:"count_after"`
}

// Key returns the row's key.
func (r *Row) Key() inventory.RowKey {
	return inventory.RowKey{SKU: r.SKU, Warehouse: r.Warehouse, Condition: r.Condition, Source: r.Source}
}

// AppendJSON appends the event's JSON (one line, no newline) to dst.
func (e *Event) AppendJSON(dst []byte) []byte {
	b, err := json.Marshal(e)
	if err != nil {
		// Strings and integers only: it cannot fail.
		panic("event: encode: " + err.Error())
	}
	return append(dst, b...)
}

// ParseEvent decodes one event's JSON, as CHANGES and the SSE stream carry
// it.
func ParseEvent(b []byte) (Event, error) {
	var e Event
	err := json.Unmarshal(b, &e)
	if e.Rows == nil {
		e.Rows = []Row{}
	}
	return e, err
}
