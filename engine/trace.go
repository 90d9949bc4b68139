package engine

import "time"

// Trace is when a durable batch passed the flusher's stages: taken (the
// frame sealed and the replies collected), written to the journal, and
// synced. The flusher copies it into every request of the batch before it
// releases them, so a front end can tell, for one of its requests, how
// long it waited for a batch, for the write, for fdatasync, and for its
// own goroutine to run again. Three clock reads per batch, not per op.
type Trace struct {
	Taken, Written, Synced time.Time
}
