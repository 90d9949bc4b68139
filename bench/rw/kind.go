package rw

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"strings"

	"allot/bench"
	"allot/store"
)

// Request types, as the seed bench named them.
const (
	RequestRead         = "READ"
	RequestWrite        = "WRITE"
	RequestModify       = "MODIFY"
	RequestModifyLocked = "MODIFY_LOCKED"
	RequestMixed        = "MIXED"
)

// Defaults and bounds of the flags.
const (
	OpsDefault       = 20000
	RecordsDefault   = 100
	RecordsMax       = 10_000_000
	BatchDefault     = 10
	BatchMax         = 1000
	ReadRatioDefault = 0.5
)

func init() {
	bench.RegisterKind(bench.KindRegistration{
		Name:  "rw",
		About: "records: --request-type READ|WRITE|MODIFY|MODIFY_LOCKED|MIXED, --lock hard|soft, --versioned, --transactional, --durable; lost updates counted",
		New:   func() bench.Kind { return &Kind{} },
		// Whether an op is one durable call depends on the run's flags:
		// each run says so (Kind.oneDurableCallPerOp).
		DurableCalls: "an rw run's ops are one durable call each only for WRITE, MODIFY or MODIFY_LOCKED without --versioned, one record a call (not --transactional with --batch above 1) and, on a queue, a publish the broker confirms; reads make none, a batch carries several ops, a compare-and-set retried makes several calls",
	})
}

// Kind is workload "rw". Its fields are the parsed flags.
type Kind struct {
	RequestType   string
	Lock          string
	Versioned     bool
	Transactional bool
	// Durable is nil when --durable was not given: it then follows the
	// store's durability (fsync is durable).
	Durable   *bool
	ReadRatio float64
	Records   int
	Batch     int
	Confirm   bool

	durableFlag bool
	fs          *flag.FlagSet
}

// RegisterFlags adds rw's flags.
func (k *Kind) RegisterFlags(fs *flag.FlagSet) {
	k.fs = fs
	fs.StringVar(&k.RequestType, "request-type", RequestRead, "rw: READ (by key), WRITE (insert new records), MODIFY (read, then write, no lock), MODIFY_LOCKED (under an exclusive lock) or MIXED (reader workers beside locked-modify workers, --read-ratio)")
	fs.StringVar(&k.Lock, "lock", string(store.RWLockHard), "rw: what a read does while a writer holds the record: hard (it waits: reads lock too) or soft (it reads the last committed value)")
	fs.BoolVar(&k.Versioned, "versioned", false, "rw: MODIFY (and MIXED's writes) as optimistic compare-and-set on a version column, retried on conflict, instead of without a lock")
	fs.BoolVar(&k.Transactional, "transactional", false, "rw: --batch writes per transaction instead of one each (autocommit); on a queue, a tx channel instead of publisher confirms")
	fs.BoolVar(&k.durableFlag, "durable", true, "rw: the store's durable setting (true) or its fast one (false); default: durable when --durability is fsync")
	fs.Float64Var(&k.ReadRatio, "read-ratio", ReadRatioDefault, "rw: MIXED: the share of workers that only read (the others only modify), 0..1; at least one of each")
	fs.IntVar(&k.Records, "records", RecordsDefault, "rw: records loaded before the run (the keys READ and MODIFY pick from; few keys, more contention)")
	fs.IntVar(&k.Batch, "batch", BatchDefault, "rw: with --transactional, records per transaction")
	fs.BoolVar(&k.Confirm, "confirm", true, "rw: on a queue without --transactional, wait for publisher confirms (false: fire-and-forget)")
}

// Validate checks the flags.
func (k *Kind) Validate(cfg bench.KindConfig) error {
	k.RequestType = strings.ToUpper(k.RequestType)
	switch k.RequestType {
	case RequestRead, RequestWrite, RequestModify, RequestModifyLocked, RequestMixed:
	default:
		return fmt.Errorf("--request-type %q: want READ, WRITE, MODIFY, MODIFY_LOCKED or MIXED", k.RequestType)
	}
	if _, err := store.ParseRWLock(k.Lock); err != nil {
		return fmt.Errorf("--lock %q: want hard or soft", k.Lock)
	}
	if k.Versioned && k.RequestType != RequestModify && k.RequestType != RequestMixed {
		return fmt.Errorf("--versioned applies to MODIFY and MIXED, not %s", k.RequestType)
	}
	if k.ReadRatio < 0 || k.ReadRatio > 1 {
		return fmt.Errorf("--read-ratio must be from 0 to 1, got %g", k.ReadRatio)
	}
	if k.Records < 1 || k.Records > RecordsMax {
		return fmt.Errorf("--records must be from 1 to %d, got %d", RecordsMax, k.Records)
	}
	if k.Batch < 1 || k.Batch > BatchMax {
		return fmt.Errorf("--batch must be from 1 to %d, got %d", BatchMax, k.Batch)
	}
	if k.Transactional && (k.RequestType == RequestModify || k.RequestType == RequestModifyLocked || k.RequestType == RequestMixed) && k.Batch > k.Records {
		return fmt.Errorf("--batch %d is more than --records %d: a transaction modifies distinct records", k.Batch, k.Records)
	}
	if cfg.Ops < 0 {
		return fmt.Errorf("--ops must not be negative, got %d", cfg.Ops)
	}
	if cfg.Pipeline > 1 {
		return fmt.Errorf("--pipeline %d: rw runs one call at a time per worker (workload kv keeps many in flight)", cfg.Pipeline)
	}
	k.Durable = nil
	if k.fs != nil {
		k.fs.Visit(func(f *flag.Flag) {
			if f.Name == "durable" {
				d := k.durableFlag
				k.Durable = &d
			}
		})
	}
	return nil
}

// options turns the flags into the store's options for a store opened in
// durability d.
func (k *Kind) options(d store.Durability) store.RWOptions {
	durable := d == store.DurabilityFsync || d == ""
	if k.Durable != nil {
		durable = *k.Durable
	}
	return store.RWOptions{Lock: store.RWLock(k.Lock), Transactional: k.Transactional, Versioned: k.Versioned, Durable: durable, Confirm: k.Confirm}
}

// StoreUse implements bench.StoreUser: the record space's options, the
// request type (a queue has no MODIFY), and READ only reads.
func (k *Kind) StoreUse(u *store.Use) {
	u.RW = k.options(u.Durability)
	u.RWRequest = k.RequestType
	u.Durable = u.RW.Durable
	u.ReadOnly = k.RequestType == RequestRead
}

// oneDurableCallPerOp reports whether every op of a run of k, on a record
// space (or a queue) in durability d, waits for one durable call, never
// two in sequence (bench.Result.OneDurableCallPerOp), so that its ops/s
// is a share of the run's bound: durable writes of one record a call.
// Not MIXED or READ, whose reads are ops that make no durable call; not
// --transactional with --batch above 1, whose call carries that many
// ops; not --versioned, whose compare-and-set lost to another writer is
// tried again, another call; not a queue's publish without a confirm
// (or a transaction), which waits for no disk.
func (k *Kind) oneDurableCallPerOp(queue bool, d store.Durability) bool {
	if !k.options(d).Durable || k.Transactional && k.Batch > 1 {
		return false
	}
	switch k.RequestType {
	case RequestWrite:
		return !queue || k.Confirm || k.Transactional
	case RequestModify, RequestModifyLocked:
		return !k.Versioned && !queue
	}
	return false
}

// modifyMode is how MODIFY, MODIFY_LOCKED and MIXED's writes modify.
func (k *Kind) modifyMode() store.RWModify {
	switch {
	case k.Versioned:
		return store.RWVersioned
	case k.RequestType == RequestModify:
		return store.RWUnlocked
	}
	return store.RWLocked
}

// Run runs the workload on st. See Kind's doc in doc.go.
func (k *Kind) Run(ctx context.Context, cfg bench.KindConfig, st store.Store) (*bench.Result, error) {
	if err := cfg.RunConfig.Validate(); err != nil {
		return nil, err
	}
	if cfg.Rate > 0 {
		return nil, fmt.Errorf("rw: the open loop (--rate) is not supported; rw runs closed loop")
	}
	rs, ok := st.(store.RWStore)
	if !ok {
		return nil, fmt.Errorf("%w: %s holds no records (store.RWStore)", bench.ErrUnsupported, cfg.Store)
	}
	if cfg.Ops == 0 {
		cfg.Ops = OpsDefault
	}
	space, err := rs.RWOpen(ctx, k.options(cfg.Durability))
	if err != nil {
		if errors.Is(err, store.ErrRWUnsupported) {
			return nil, fmt.Errorf("%w: %v", bench.ErrUnsupported, err)
		}
		return nil, err
	}
	defer space.Close()
	r := newRun(k, cfg, space)
	return r.run(ctx, st)
}
