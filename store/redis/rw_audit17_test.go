package redis

import (
	"context"
	"strings"
	"testing"

	goredis "github.com/redis/go-redis/v9"

	"allot/services/servicestest"
	"allot/store"
)

// restoreAOF puts the server's AOF settings back as they were when the
// test started.
func restoreAOF(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	c := goredis.NewClient(&goredis.Options{Addr: AddrDefault, MaxRetries: -1})
	conf, err := c.ConfigGet(ctx, "append*").Result()
	if err != nil {
		c.Close()
		t.Fatal(err)
	}
	t.Cleanup(func() {
		defer c.Close()
		for _, k := range []string{"appendfsync", "appendonly"} {
			if err := c.ConfigSet(ctx, k, conf[k]).Err(); err != nil {
				t.Errorf("putting %s %s back: %v", k, conf[k], err)
			}
		}
	})
}

// A record space that is not durable, on a store opened in durability
// none, runs without an AOF, as allot's engine (no journal) and Tarantool
// (wal_mode none) do in that mode. It turned the AOF on (appendfsync no),
// so Redis alone paid for writing a log in a "none" comparison.
func TestAudit17RecordsInDurabilityNoneHaveNoAOF(t *testing.T) {
	servicestest.Require(t, "redis")
	restoreAOF(t)
	ctx := context.Background()
	for _, tc := range []struct {
		d          store.Durability
		durable    bool
		appendonly string
		fsync      string
	}{
		{store.DurabilityNone, false, "no", "no"},
		{store.DurabilityWrite, false, "yes", "no"},
		{store.DurabilityNone, true, "yes", "always"},
	} {
		st, err := store.Open(ctx, "redis", store.Config{Durability: tc.d, Workers: 2})
		if err != nil {
			t.Fatal(err)
		}
		sp, err := st.(store.RWStore).RWOpen(ctx, store.RWOptions{Lock: store.RWLockSoft, Durable: tc.durable})
		if err != nil {
			st.Close()
			t.Fatal(err)
		}
		conf, err := st.(*Store).client.ConfigGet(ctx, "append*").Result()
		if err != nil {
			t.Fatal(err)
		}
		if conf["appendonly"] != tc.appendonly || conf["appendfsync"] != tc.fsync {
			t.Errorf("durability %s, durable %v: the server runs appendonly %s appendfsync %s, want %s %s",
				tc.d, tc.durable, conf["appendonly"], conf["appendfsync"], tc.appendonly, tc.fsync)
		}
		want := "appendonly " + tc.appendonly + ", appendfsync " + tc.fsync
		if s := sp.Info().Setting; !strings.HasPrefix(s, want) {
			t.Errorf("durability %s, durable %v: Info says %q, want it to start with %q", tc.d, tc.durable, s, want)
		}
		if err := sp.Close(); err != nil {
			t.Error(err)
		}
		st.Close()
	}
}
