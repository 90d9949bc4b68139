package naive_test

import (
	"context"
	"strings"
	"testing"

	"allot/services"
	"allot/services/servicestest"
	"allot/store"
	"allot/store/naive"
)

// TestOnlyTheReservationWorkload: the control exists for the reservation
// workload's checker. It must not offer the postgres adapter's other
// workloads (records, search, checkout) under its own name: they would run
// the adapter's correct, locking code and report it as the control's. Its
// description says what it is.
func TestOnlyTheReservationWorkload(t *testing.T) {
	servicestest.Require(t, services.Postgres)
	ctx := context.Background()
	st, err := naive.Open(ctx, store.Config{Durability: store.DurabilityWrite}, "test_naive_caps")
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	var s store.Store = st
	if _, ok := s.(store.RWStore); ok {
		t.Error("the naive store offers store.RWStore: the records workloads would run the postgres adapter's code as naive-postgres")
	}
	if _, ok := s.(store.Searcher); ok {
		t.Error("the naive store offers store.Searcher")
	}
	if _, ok := s.(store.CheckoutPreparer); ok {
		t.Error("the naive store offers store.CheckoutPreparer")
	}
	desc, err := st.Describe(ctx)
	if err != nil || !strings.Contains(desc, "no lock") || !strings.Contains(desc, "PostgreSQL") {
		t.Errorf("Describe = %q %v, want the server and that it reads then writes with no lock", desc, err)
	}
	if _, ok := s.(store.ServerProcess); !ok {
		t.Error("the naive store lost store.ServerProcess")
	}
}
