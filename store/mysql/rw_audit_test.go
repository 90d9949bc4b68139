package mysql_test

import (
	"context"
	"testing"

	"allot/store"
	"allot/store/mysql"
	"allot/store/storetest"
)

// Workload kv's batches wrap around the key space, so two batches in
// flight may name the same keys in different orders. InnoDB's multi-row
// upsert locks its rows in the order it lists them: unordered, two of
// them deadlock and one is rolled back (an error) where its experts would
// list the rows in key order.
func TestPipelineWriteDoesNotDeadlock(t *testing.T) {
	st := open(t, mysql.InnoDB, store.DurabilityWrite)
	defer st.Close()
	sp, err := st.RWOpen(context.Background(), store.RWOptions{Lock: store.RWLockHard})
	if err != nil {
		t.Fatal(err)
	}
	defer sp.Close()
	storetest.RunPipelineWriteContention(t, sp, 6, 16, 40)
}
