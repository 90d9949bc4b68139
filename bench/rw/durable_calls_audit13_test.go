package rw

import (
	"testing"

	"allot/store"
)

// Which rw runs declare each op one durable call, flag by flag: durable
// writes of one record a call, and nothing else.
func TestAudit13OneDurableCallPerOp(t *testing.T) {
	no := false
	for _, c := range []struct {
		name  string
		k     Kind
		queue bool
		d     store.Durability
		want  bool
	}{
		{"WRITE", Kind{RequestType: RequestWrite, Batch: 10}, false, store.DurabilityFsync, true},
		{"WRITE in write mode", Kind{RequestType: RequestWrite}, false, store.DurabilityWrite, false},
		{"WRITE --durable=false", Kind{RequestType: RequestWrite, Durable: &no}, false, store.DurabilityFsync, false},
		{"WRITE --transactional --batch 1", Kind{RequestType: RequestWrite, Transactional: true, Batch: 1}, false, store.DurabilityFsync, true},
		{"WRITE --transactional --batch 10", Kind{RequestType: RequestWrite, Transactional: true, Batch: 10}, false, store.DurabilityFsync, false},
		{"MODIFY", Kind{RequestType: RequestModify}, false, store.DurabilityFsync, true},
		{"MODIFY_LOCKED", Kind{RequestType: RequestModifyLocked}, false, store.DurabilityFsync, true},
		{"MODIFY --versioned", Kind{RequestType: RequestModify, Versioned: true}, false, store.DurabilityFsync, false},
		{"MODIFY_LOCKED --transactional --batch 5", Kind{RequestType: RequestModifyLocked, Transactional: true, Batch: 5}, false, store.DurabilityFsync, false},
		{"MIXED", Kind{RequestType: RequestMixed}, false, store.DurabilityFsync, false},
		{"READ", Kind{RequestType: RequestRead}, false, store.DurabilityFsync, false},
		{"queue WRITE confirmed", Kind{RequestType: RequestWrite, Confirm: true}, true, store.DurabilityFsync, true},
		{"queue WRITE unconfirmed", Kind{RequestType: RequestWrite}, true, store.DurabilityFsync, false},
		{"queue WRITE --transactional --batch 1", Kind{RequestType: RequestWrite, Transactional: true, Batch: 1}, true, store.DurabilityFsync, true},
		{"queue READ", Kind{RequestType: RequestRead, Confirm: true}, true, store.DurabilityFsync, false},
	} {
		if got := c.k.oneDurableCallPerOp(c.queue, c.d); got != c.want {
			t.Errorf("%s: one durable call per op %v, want %v", c.name, got, c.want)
		}
	}
}
