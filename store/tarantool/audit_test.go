package tarantool

import (
	"testing"

	"allot/store/storetest"
)

func TestCancelPastDeadlineExpires(t *testing.T) {
	for _, name := range stores {
		t.Run(name, func(t *testing.T) { storetest.RunCancelPastDeadline(t, openCheckout(name)) })
	}
}
