package server

// resumeAt is where a goroutine takes up a round the event loop handed
// over (resp_loop_linux.go), and why it was handed over.
type resumeAt int

const (
	resumeNone   resumeAt = iota // the loop served the round
	resumeFinish                 // the direct reply before it is on its way: wait for it, submit, reply
	resumeReply                  // its replies wait for the disk: wait for them and write them
	resumeWrite                  // the socket did not take every reply: write the rest (c.rest)
	resumeRounds                 // nothing of the round is left: serve what is buffered (a CHANGES)
	resumeCount
)

// reason names a hand-off in allot_resp_loop_handoffs_total.
func (r resumeAt) reason() string {
	return [...]string{"none", "direct_reply", "replies", "write", "changes"}[r]
}

// Seams of the event loop's tests (resp_loop_test.go), each of which
// breaks on purpose what a test must see fail.
var (
	// loopDefersChanges: the loop leaves CHANGES to a goroutine (false:
	// it runs it itself, and waits as long as its BLOCK).
	loopDefersChanges = true
	// loopParks: in fsync mode a round of several ops parks until its
	// last op notifies (false: it goes to a goroutine).
	loopParks = true
)
