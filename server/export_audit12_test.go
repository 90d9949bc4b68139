package server

import "context"

// HoldChangeSlots takes n change-stream reader slots of s, as n readers
// being served would, for tests of the bound; release gives them back.
func HoldChangeSlots(s *Server, n int) (release func()) {
	for range n {
		if !s.takeChangeSlot(context.Background(), 0) {
			panic("HoldChangeSlots: no free reader slot")
		}
	}
	return func() {
		for range n {
			s.putChangeSlot()
		}
	}
}
