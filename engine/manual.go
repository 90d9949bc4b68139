package engine

import "errors"

// Flush does once what the flusher does each time it wakes: it seals the
// pending frame, writes it (and syncs it, in fsync mode), releases the
// replies it covers and starts a snapshot when one is due; it returns when
// that is done. It needs Config.ManualFlush: the flusher then never wakes
// by itself (no kick, no timer), and frames end where the caller flushes,
// where write mode's Submit writes, where none mode's frame is full, and at
// Close. In fsync mode a reply waits for the Flush after its Submit.
//
// The simulator runs engines so, so that its seed, not goroutine timing,
// decides the frame boundaries. Everything else the engine does is the
// same.
func (e *Engine) Flush() error {
	if e.step == nil {
		return errors.New("engine: Flush needs Config.ManualFlush")
	}
	done := make(chan struct{})
	select {
	case e.step <- done:
	case <-e.flusherDone:
		return ErrClosed
	}
	<-done
	return nil
}
