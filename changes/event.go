package changes

import "allot/changes/event"

// Event and Row are the change stream's event and row change (package
// event, which a client imports without the follower).
type (
	Event = event.Event
	Row   = event.Row
)

// ParseEvent decodes one event's JSON, as CHANGES and the SSE stream carry
// it.
func ParseEvent(b []byte) (Event, error) { return event.ParseEvent(b) }
