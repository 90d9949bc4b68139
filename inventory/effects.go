package inventory

// Touched appends to dst the keys of every row op may change if it is
// applied to s now, each once, in the order a reader of the change stream
// expects them: a capture's group in warehouse (allocation) order; a hold's
// or an order's groups in request-line order, each in warehouse order; a
// confirm's, cancel's or expiry's rows in the hold's allocation order; the
// one row of a release or a stock. Kinds that change no row (reads, and
// kinds this release does not know) append nothing.
//
// It is what a follower of the journal uses to turn a journaled op into a
// change event: it reads the counts of these rows before and after Apply,
// and the difference is the event's rows. Asking the state which rows an
// op may touch, rather than trusting the op's Result, keeps one rule for
// every kind (a confirm has no allocation in its result; a capture's result
// names warehouses, not rows) and needs nothing from the op beyond what the
// journal keeps. A row in the list may end up unchanged (a capture takes
// from the first warehouses only): the caller drops rows whose count did
// not move, except for a stock, which is a set even when the count stays.
//
// Touched is pure: it reads s and changes nothing.
func (s *State) Touched(op *Op, dst []RowKey) []RowKey {
	switch op.Kind {
	case KindCapture:
		if g := s.groups[op.Key.Group()]; g != nil {
			for _, r := range g.rows {
				dst = append(dst, r.key)
			}
		}
	case KindRelease, KindStock:
		dst = append(dst, op.Key)
	case KindHold, KindOrder:
		for i := range op.Lines {
			gk := op.Lines[i].Group
			seen := false
			for j := 0; j < i; j++ {
				if op.Lines[j].Group == gk {
					seen = true
					break
				}
			}
			if seen {
				continue
			}
			if g := s.groups[gk]; g != nil {
				for _, r := range g.rows {
					dst = append(dst, r.key)
				}
			}
		}
	case KindConfirm, KindCancel, KindExpire:
		if h := s.holds[op.Hold]; h != nil && h.state == HoldHeld {
			for _, a := range h.alloc {
				dst = appendOnce(dst, a.row.key)
			}
		}
	}
	return dst
}

// appendOnce appends k unless it is already in dst (a hold's allocation
// names each row once; this guards the invariant cheaply for the handful of
// rows a hold has).
func appendOnce(dst []RowKey, k RowKey) []RowKey {
	for _, d := range dst {
		if d == k {
			return dst
		}
	}
	return append(dst, k)
}

// Count returns row k's count, and false when the row does not exist.
func (s *State) Count(k RowKey) (int64, bool) {
	if r := s.rows[k]; r != nil {
		return r.count, true
	}
	return 0, false
}
