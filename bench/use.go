package bench

import "allot/store"

// StoreUser is an optional Kind capability: a kind whose flags ask more
// of a store than its workload and --pipeline (rw's --request-type,
// --transactional, --lock, --durable), or whose timed part only reads,
// says so in use. It is called after Validate, before any store is
// opened.
type StoreUser interface {
	StoreUse(use *store.Use)
}

// StoreUse returns what a run of workload (kind nil for the reservation
// workload "ims") with cfg asks of a store: what the store's registration
// may refuse (store.Registration.Refusal) and what decides whether the
// run has a closed-loop bound (BoundApplies).
func StoreUse(workload string, kind Kind, cfg RunConfig) store.Use {
	d := cfg.Durability
	if d == "" {
		d = store.DurabilityFsync
	}
	u := store.Use{Workload: workload, Durability: d, Pipeline: max(cfg.Pipeline, 1), Durable: d == store.DurabilityFsync}
	if su, ok := kind.(StoreUser); ok {
		su.StoreUse(&u)
	}
	return u
}

// BoundApplies reports whether a run has a closed-loop bound (Bound):
// only where an acknowledgement waits for an fdatasync, that is a run
// whose timed part writes, durably, to a store that keeps its data beyond
// the process. For a read-only run (search, rw and kv READ), a run in
// write or none mode (or rw's --durable=false) and the memory store,
// ops in flight / fdatasync would be a ceiling nothing in their path
// obeys (the memory store ran at a hundred times it).
func BoundApplies(reg store.Registration, u store.Use) bool {
	return u.Durable && !u.ReadOnly && !reg.Volatile
}
