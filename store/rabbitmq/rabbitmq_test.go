package rabbitmq_test

import (
	"context"
	"errors"
	"flag"
	"testing"

	"allot/bench"
	_ "allot/bench/rw"
	"allot/inventory"
	"allot/services"
	"allot/services/servicestest"
	"allot/store"
	"allot/store/rabbitmq"
	"allot/store/storetest"
)

func open(t *testing.T) *rabbitmq.Store {
	t.Helper()
	servicestest.Require(t, services.RabbitMQ)
	st, err := rabbitmq.Open(context.Background(), store.Config{})
	if err != nil {
		t.Fatal(err)
	}
	return st
}

func TestRecords(t *testing.T) {
	storetest.RunRecords(t, func(t *testing.T, _ store.Durability) store.Store { return open(t) }, storetest.RecordsCaps{Queue: true})
}

func TestRefusesInventory(t *testing.T) {
	st := open(t)
	defer st.Close()
	if err := st.Load(context.Background(), []inventory.Row{}); err == nil {
		t.Fatal("Load of inventory rows succeeded on a queue")
	}
}

func TestUnreachableIsServerDown(t *testing.T) {
	_, err := rabbitmq.Open(context.Background(), store.Config{Addr: "127.0.0.1:1"})
	if !errors.Is(err, store.ErrServerDown) {
		t.Fatalf("err %v, want ErrServerDown", err)
	}
}

// TestWorkload runs workload rw on the broker in each publish mode and
// checks what the checker counted.
func TestWorkload(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"read", []string{"--request-type", "READ"}},
		{"write-confirm-durable", []string{"--request-type", "WRITE", "--durable"}},
		{"write-tx-durable", []string{"--request-type", "WRITE", "--transactional", "--durable"}},
		{"write-forget-transient", []string{"--request-type", "WRITE", "--confirm=false", "--durable=false"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := open(t)
			defer st.Close()
			reg, err := bench.LookupKind("rw")
			if err != nil {
				t.Fatal(err)
			}
			k := reg.New()
			fs := flag.NewFlagSet("rw", flag.ContinueOnError)
			k.RegisterFlags(fs)
			if err := fs.Parse(tc.args); err != nil {
				t.Fatal(err)
			}
			cfg := bench.KindConfig{RunConfig: bench.RunConfig{Workers: 4, Store: "rabbitmq"}, Ops: 2000, Seed: 1}
			if err := cfg.Validate(); err != nil {
				t.Fatal(err)
			}
			if err := k.Validate(cfg); err != nil {
				t.Fatal(err)
			}
			res, err := k.Run(context.Background(), cfg, st)
			if err != nil {
				t.Fatal(err)
			}
			if !res.Check.OK || res.Errors != 0 {
				t.Fatalf("check %+v, errors %d %v", res.Check, res.Errors, res.ErrorSamples)
			}
			if res.Ops != 2000 {
				t.Errorf("ops %d, want 2000", res.Ops)
			}
			e := res.Extra
			switch tc.name {
			case "read":
				// A consumer that stops may leave prefetched messages,
				// which go back to the queue: the sum is what counts.
				if e["consumed"].(int64)+int64(e["left_in_queue"].(int)) != 2000 || e["consumed"].(int64) < 1900 {
					t.Errorf("extra %v: want 2000 consumed or left, most consumed", e)
				}
			default:
				if e["published"].(int64) != 2000 || e["left_in_queue"].(int) != 2000 {
					t.Errorf("extra %v: want 2000 published, all left in the queue", e)
				}
			}
		})
	}
}
