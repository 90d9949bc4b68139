package bench

import (
	"bytes"
	"context"
	"os"
	"strings"
	"testing"

	"allot/store"
)

// serverStore is a store whose server is another process and whose
// sessions cannot ping (postgres, mysql, dtm).
type serverStore struct{ pingStore }

func (*serverStore) ServerPID(context.Context) (int, error) { return 1, nil }

// inProcessStore runs in the bench's process (embedded, memory).
type inProcessStore struct{ pingStore }

func (*inProcessStore) ServerPID(context.Context) (int, error) { return os.Getpid(), nil }

// The bound line said "no round trip (in-process)" for server stores
// that have no PING: the round trip was not measured, the store is not
// in-process.
func TestAudit10bBoundLabelsARoundTripNotMeasured(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name      string
		st        store.Store
		want, not string
	}{
		{"postgres", &serverStore{pingStore{plain: true}}, "round trip not measured (the store has no PING)", "in-process"},
		{"embedded", &inProcessStore{pingStore{plain: true}}, "no round trip (in-process)", "not measured"},
	} {
		b, err := MeasureBound(ctx, tc.st, t.TempDir(), 2, 1)
		if err != nil {
			t.Fatal(err)
		}
		var out bytes.Buffer
		WriteBounds(&out, []Result{{Store: tc.name, Durability: "fsync", Workers: 2, Status: StatusOK, OpsPerSec: 100, Bound: b}})
		if s := out.String(); !strings.Contains(s, tc.want) || strings.Contains(s, tc.not) {
			t.Errorf("%s: bound line %q; want %q, not %q", tc.name, s, tc.want, tc.not)
		}
	}
}
