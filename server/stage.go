package server

import "time"

// stage is one step of an op's way through the server, timed into
// allot_stage_duration_seconds so that a durable op's latency can be taken
// apart (allot bench --breakdown):
//
//	read   the previous reply written -> the next request read: the server
//	       waiting for the client (the client's half of the round trip)
//	parse  request read -> the op handed to the engine (decoding, and the
//	       ops before it in the same read)
//	queue  handed to the engine -> applied (the engine lock, back-pressure)
//	batch  applied -> its journal batch taken by the flusher
//	write  the batch's journal write
//	sync   the batch's fdatasync
//	wake   synced -> the reply's writer at it: the connection's goroutine
//	       running again, or, for a direct reply (a round of one op in
//	       fsync mode, resp_direct.go), the flusher reaching this reply
//	       after those it wrote before it
//	reply  the round's last reply ready -> written to the socket
//
// read and reply are timed once per round (one read, one write of all its
// replies); the others once per op. A direct reply's stages are recorded
// when the connection's next round begins (or it closes). queue, batch, write, sync and wake
// come from the engine's trace of the request (engine.Request.Trace), and
// only modes that wait for the disk have batch, write and sync.
type stage uint8

const (
	stageRead stage = iota
	stageParse
	stageQueue
	stageBatch
	stageWrite
	stageSync
	stageWake
	stageReply
	stageCount
)

var stageNames = [stageCount]string{"read", "parse", "queue", "batch", "write", "sync", "wake", "reply"}

func (s stage) String() string { return stageNames[s] }

// stageBounds are the stage histogram's bucket bounds: 1 µs to ~1 s in
// steps of a factor of 2^(1/2), fine enough to tell a 150 µs fdatasync
// from a 200 µs one.
var stageBounds = func() []time.Duration {
	b := make([]time.Duration, 41)
	v := float64(time.Microsecond)
	for i := range b {
		b[i] = time.Duration(v)
		v *= 1.4142135623730951
	}
	return b
}()

// instant is a moment of a RESP round (stage times, op latencies): the
// monotonic clock's time since clockEpoch. time.Now reads the wall clock
// too, a second vDSO call per reading (37 ns against 22 ns for time.Since
// on the 2-vCPU machine), and a round reads the clock six times: the wall
// clock of these instants is never used, only their differences.
type instant = time.Duration

// clockEpoch is the origin of every instant, set as the package is
// initialised: an instant read later is never zero, so zero means "not
// set".
var clockEpoch = time.Now()

// now reads the monotonic clock as an instant.
func now() instant { return time.Since(clockEpoch) }

// instantOf is t (an engine trace's time, read with time.Now) as an
// instant: the difference of two monotonic readings, no clock read.
func instantOf(t time.Time) instant { return t.Sub(clockEpoch) }

func (m *metrics) observeStage(s stage, d time.Duration) {
	m.stages[s].observeN(stageBounds, d, 1)
}
