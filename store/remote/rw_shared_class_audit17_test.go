package remote

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"allot/client"
)

// An allot-mux record pipeline whose op failed with a class of its own
// ("not sent", a refusal) after another op of it was applied is of unknown
// outcome as a whole: the first failing op's error was returned as it
// was, and read as "not applied, safe to resend".
func TestAudit17SharedPipelineErrorIsUnknownOnceAnOpApplied(t *testing.T) {
	notSent := fmt.Errorf("client: the context ended first: %w", client.ErrNotSent)
	refused := fmt.Errorf("not primary: %w", client.ErrUnavailable)
	for _, c := range []struct {
		name    string
		err     error
		applied bool
		want    bool
	}{
		{"not sent, nothing applied", notSent, false, false},
		{"refused, nothing applied", refused, false, false},
		{"not sent, another op applied", notSent, true, true},
		{"refused, another op applied", refused, true, true},
		{"lost, another op applied", errors.New("connection reset"), true, true},
		{"cancelled, nothing applied", context.Canceled, false, true},
	} {
		err := pipelineError(1, 3, c.err, c.applied)
		if got := client.MaybeApplied(err); got != c.want {
			t.Errorf("%s: MaybeApplied(%v) = %v, want %v", c.name, err, got, c.want)
		}
	}
}
