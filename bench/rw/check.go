package rw

import (
	"fmt"

	"allot/bench"
	"allot/store"
)

// violationsListMax bounds the violations a result lists (all are counted).
const violationsListMax = 20

type checker struct{ res bench.CheckResult }

func (c *checker) addf(format string, args ...any) {
	c.res.ViolationCount++
	if len(c.res.Violations) < violationsListMax {
		c.res.Violations = append(c.res.Violations, fmt.Sprintf(format, args...))
	}
}

// check compares the records read back after the run with what the run's
// acknowledged calls imply, and adds its counts to extra.
//
// Records: each loaded record's final value must lie between its
// acknowledged modifies and those plus the modifies whose call failed. Less
// is lost updates: a violation in every mode but MODIFY without a lock,
// where they are the anomaly the mode exists to show and are counted in
// extra["lost_updates"] instead. More is a violation in every mode (an
// update applied twice, or from nowhere). Every acknowledged insert must be
// there with its value; a READ-only run must read every record's loaded
// value, and MIXED's reads a value from the loaded one plus the modifies
// acknowledged before the read began (less is a stale read) to the loaded
// one plus the modifies sent to that record before the read returned. An
// insert whose call failed may be missing, but if it is there it must
// hold the value sent.
//
// Queues: every confirmed message must have been consumed once or still be
// in the queue; a message consumed twice is a violation, and so is one no
// worker published (or loaded), or one whose body is not the one
// published: the store made it up; published but
// unconfirmed (fire-and-forget) messages that are missing are counted, not
// violations, since nothing promised them.
func (r *run) check(final []store.RWRecord, extra map[string]any) bench.CheckResult {
	c := &checker{res: bench.CheckResult{Violations: []string{}}}
	if r.info.Queue {
		r.checkQueue(c, final, extra)
	} else {
		r.checkRecords(c, final, extra)
	}
	c.res.OK = c.res.ViolationCount == 0
	return c.res
}

func (r *run) checkRecords(c *checker, final []store.RWRecord, extra map[string]any) {
	got := make(map[string]int64, len(final))
	for _, f := range final {
		if _, dup := got[f.Key]; dup {
			c.addf("record %s read back twice", f.Key)
		}
		got[f.Key] = f.Value
	}
	var lost, lostRecords, expected int64
	unlocked := r.k.modifyMode() == store.RWUnlocked && r.k.RequestType == RequestModify
	for i, rec := range r.loaded {
		v, ok := got[rec.Key]
		if !ok {
			c.addf("record %s is missing", rec.Key)
			continue
		}
		lo := rec.Value + r.acked[i].Load()
		hi := lo + r.unknown[i].Load()
		expected += lo - rec.Value
		switch {
		case v < lo:
			lost += lo - v
			lostRecords++
			if !unlocked {
				c.addf("record %s: %d acknowledged updates lost (value %d, want %d)", rec.Key, lo-v, v, lo)
			}
		case v > hi:
			c.addf("record %s: value %d is more than the %d updates issued allow (%d)", rec.Key, v, hi-rec.Value, hi)
		}
	}
	extra["updates_acknowledged"] = expected
	extra["lost_updates"] = lost
	extra["records_with_lost_updates"] = lostRecords
	var writes, writesMissing int64
	for _, list := range r.written {
		for _, w := range list {
			writes++
			v, ok := got[w.Key]
			switch {
			case !ok:
				writesMissing++
				c.addf("acknowledged insert %s is missing", w.Key)
			case v != w.Value:
				c.addf("insert %s: value %d, want %d", w.Key, v, w.Value)
			}
		}
	}
	if writes > 0 {
		extra["inserts_acknowledged"] = writes
		extra["inserts_missing"] = writesMissing
	}
	known := len(r.loaded) + int(writes)
	for _, list := range r.writtenUnknown {
		for _, w := range list {
			// A failed insert may be there or not; if it is, with the
			// value it was sent with.
			if v, ok := got[w.Key]; ok {
				known++
				if v != w.Value {
					c.addf("insert %s (its call failed): value %d, want %d", w.Key, v, w.Value)
				}
			}
		}
	}
	if len(got) != known {
		c.addf("%d records read back, %d loaded or inserted", len(got), known)
	}
	if n := r.readsWrong.Load(); n > 0 {
		c.addf("%d reads returned a value no write made", n)
	}
	if n := r.readsStale.Load(); n > 0 {
		c.addf("%d reads returned a value older than a modify acknowledged before they began (stale reads)", n)
	}
	if n := r.readsMissing.Load(); n > 0 {
		c.addf("%d reads did not find their record", n)
	}
}

func (r *run) checkQueue(c *checker, final []store.RWRecord, extra map[string]any) {
	seen := make(map[int64]int)
	var consumed int64
	for _, list := range r.consumed {
		for _, v := range list {
			seen[v]++
			consumed++
		}
	}
	remaining := make(map[string]int, len(final))
	for _, f := range final {
		remaining[f.Key]++
		seen[f.Value]++
	}
	extra["consumed"] = consumed
	extra["left_in_queue"] = len(final)
	switch r.k.RequestType {
	case RequestRead:
		extra["published"] = len(r.loaded)
		// The loaded messages are the only ones published: a consumer
		// that got a value none of them holds, or a message left whose
		// id and body no loaded message had, came from the store.
		loaded := make(map[int64]string, len(r.loaded))
		for _, m := range r.loaded {
			loaded[m.Value] = m.Key
		}
		for w, list := range r.consumed {
			for _, v := range list {
				if _, ok := loaded[v]; !ok {
					c.addf("worker %d consumed a message with body %d, which no loaded message had", w, v)
				}
			}
		}
		for _, f := range final {
			if k, ok := loaded[f.Value]; !ok || k != f.Key {
				c.addf("message %s with body %d left in the queue was never loaded", f.Key, f.Value)
			}
		}
		if consumed == 0 && len(r.loaded) > 0 && r.reads.Load() > 0 {
			// Nothing lost, nothing twice, and nothing measured: every
			// read came back empty from a queue that held every message.
			c.addf("no message was consumed: %d reads found the queue empty while it held %d messages", r.reads.Load(), len(final))
		}
		for _, m := range r.loaded {
			switch n := seen[m.Value]; {
			case n == 0:
				c.addf("message %s (confirmed when loaded) was neither consumed nor left in the queue", m.Key)
			case n > 1:
				c.addf("message %s delivered %d times", m.Key, n)
			}
		}
	case RequestWrite:
		var published, missing int64
		for _, list := range r.written {
			for _, w := range list {
				published++
				if _, ok := remaining[w.Key]; !ok {
					missing++
					if r.confirmed() {
						c.addf("confirmed message %s is missing", w.Key)
					}
				}
			}
		}
		extra["published"] = published
		if r.confirmed() {
			extra["confirmed"] = published
		} else {
			extra["confirmed"] = 0
			extra["unconfirmed_missing"] = missing
		}
		for k, n := range remaining {
			if n > 1 {
				c.addf("message %s delivered %d times", k, n)
			}
		}
		// Every message left must be one a worker published, with the
		// body it was published with: a publish whose call failed may
		// have reached the queue, and only those and the acknowledged
		// ones may.
		sent := make(map[string]int64, published)
		for _, lists := range [2][][]store.RWRecord{r.written, r.writtenUnknown} {
			for _, list := range lists {
				for _, w := range list {
					sent[w.Key] = w.Value
				}
			}
		}
		for _, f := range final {
			switch v, ok := sent[f.Key]; {
			case !ok:
				c.addf("message %s with body %d is in the queue, but no worker published it", f.Key, f.Value)
			case v != f.Value:
				c.addf("message %s has body %d, published with %d", f.Key, f.Value, v)
			}
		}
	}
}

// confirmed reports whether an acknowledged publish was confirmed by the
// broker (a tx commit or a publisher confirm), not just sent.
func (r *run) confirmed() bool { return r.k.Transactional || r.k.Confirm }
