package main

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"allot/server/servertest"
	"allot/store"
)

// openForAudit11 opens a registered store on the shared servers, or
// skips it when its server is down (outside CI).
func openForAudit11(t *testing.T, reg store.Registration, cfg store.Config) store.Store {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	st, err := store.Open(ctx, reg.Name, cfg)
	if errors.Is(err, store.ErrServerDown) && os.Getenv("CI") != "true" {
		t.Skipf("%s: %v", reg.Name, err)
	}
	if err != nil {
		t.Fatalf("%s: %v", reg.Name, err)
	}
	return st
}

// What a registration declares (Pipelines, Refuses) is what its adapter
// does: a store that --stores all leaves out would fail, and one it keeps
// runs. Pipelining is checked on every store's sessions; the records
// options on every store that runs rw.
func TestAudit11RegistrationsMatchTheirAdapters(t *testing.T) {
	if testing.Short() {
		t.Skip("needs the peer servers")
	}
	if os.Getenv("ALLOT_BIN") == "" {
		t.Setenv("ALLOT_BIN", servertest.BuildAllot(t))
	}
	for _, reg := range store.Registered() {
		if reg.AddrRequired {
			continue // allot-cluster: allot's code on a cluster of its own
		}
		t.Run(reg.Name, func(t *testing.T) {
			ctx := context.Background()
			st := openForAudit11(t, reg, store.Config{Workers: 1, Pipeline: 4})
			defer st.Close()
			if reg.Runs("ims") || reg.Runs("search") || reg.Runs("checkout") {
				se, err := st.Session(ctx)
				if err != nil {
					t.Fatal(err)
				}
				_, ims := se.(store.Pipeliner)
				_, search := se.(store.SearchPipeliner)
				_, checkout := se.(store.CheckoutPipeliner)
				se.Close()
				for w, has := range map[string]bool{"ims": ims, "search": search, "checkout": checkout} {
					if !reg.Runs(w) {
						continue
					}
					refusal := reg.Refusal(store.Use{Workload: w, Durability: store.DurabilityFsync, Pipeline: 4})
					if (refusal == "") != has {
						t.Errorf("workload %s --pipeline 4: registration refuses %q; sessions pipeline it: %v", w, refusal, has)
					}
				}
			}
			if !reg.Runs("rw") {
				return
			}
			rs, ok := st.(store.RWStore)
			if !ok {
				if strings.HasPrefix(reg.Name, "naive") {
					return // a control, never in --stores all: no records
				}
				t.Fatalf("runs rw but holds no records")
			}
			base := store.RWOptions{Lock: store.RWLockHard, Durable: true, Confirm: true}
			for _, tc := range []struct {
				what, request string
				change        func(*store.RWOptions)
			}{
				{"WRITE", "WRITE", func(*store.RWOptions) {}},
				{"MODIFY_LOCKED", "MODIFY_LOCKED", func(*store.RWOptions) {}},
				{"--transactional", "WRITE", func(o *store.RWOptions) { o.Transactional = true }},
				{"--lock soft", "READ", func(o *store.RWOptions) { o.Lock = store.RWLockSoft }},
				{"--versioned", "MODIFY", func(o *store.RWOptions) { o.Versioned = true }},
				{"--durable=false", "WRITE", func(o *store.RWOptions) { o.Durable = false }},
			} {
				opts := base
				tc.change(&opts)
				u := store.Use{Workload: "rw", Durability: store.DurabilityFsync, Pipeline: 1, RW: opts, RWRequest: tc.request}
				refusal := reg.Refusal(u)
				if !opts.Durable && reg.Server != "" && refusal == "" {
					// The fast setting of a shared server is server-wide
					// (MariaDB, Redis): not changed under other runs here.
					continue
				}
				sp, err := rs.RWOpen(ctx, opts)
				refused := errors.Is(err, store.ErrRWUnsupported)
				if err != nil && !refused {
					t.Fatalf("%s: %v", tc.what, err)
				}
				if err == nil {
					// A queue opens any options, and has no record to
					// modify.
					refused = u.RWModifies() && sp.Info().Queue
					sp.Close()
				}
				if (refusal != "") != refused {
					t.Errorf("rw %s: registration refuses %q; the adapter refuses it: %v (%v)", tc.what, refusal, refused, err)
				}
			}
		})
	}
}
