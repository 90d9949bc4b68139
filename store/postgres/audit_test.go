package postgres_test

import (
	"testing"

	"allot/store"
	"allot/store/storetest"
)

func TestCancelPastDeadlineExpires(t *testing.T) {
	storetest.RunCancelPastDeadline(t, func(t *testing.T) store.Store { return open(t, store.DurabilityWrite) })
}
