package server_test

import (
	"context"
	"errors"
	"reflect"
	"testing"

	"github.com/redis/go-redis/v9"

	"allot/server"
	"allot/server/servertest"
)

// TestGoRedis drives the server with go-redis, a client written by others:
// its connection handshake (HELLO 3, refused, then RESP2), its pipelining
// and its reading of our replies must all work.
func TestGoRedis(t *testing.T) {
	for _, proto := range []int{0, 2} {
		t.Run("protocol"+map[int]string{0: "-default", 2: "2"}[proto], func(t *testing.T) {
			s := servertest.Start(t, servertest.Options{NoHTTP: true})
			rdb := redis.NewClient(&redis.Options{Addr: s.RESPAddr(), Protocol: proto})
			defer rdb.Close()
			ctx := context.Background()
			do := func(args ...any) (any, error) { return rdb.Do(ctx, args...).Result() }

			if v, err := do("STOCK.SET", "sku-1", "w2", "new", "retail", 5, 100); err != nil || v != "OK" {
				t.Fatalf("STOCK.SET: %v %v", v, err)
			}
			if _, err := do("STOCK.SET", "sku-1", "w1", "new", "retail", 1, 90); err != nil {
				t.Fatal(err)
			}
			v, err := do("CAPTURE", "sku-1", "new", "retail", 3)
			want := []any{[]any{"w1", int64(1)}, []any{"w2", int64(2)}}
			if err != nil || !reflect.DeepEqual(v, want) {
				t.Fatalf("CAPTURE: %#v %v, want %#v", v, err, want)
			}
			if _, err := do("CAPTURE", "sku-1", "new", "retail", 9); err == nil || err.Error() != "INSUFFICIENT available 3" {
				t.Fatalf("CAPTURE beyond stock: %v", err)
			}
			if v, err := do("RELEASE", "sku-1", "w1", "new", "retail", 2); err != nil || v != int64(2) {
				t.Fatalf("RELEASE: %v %v", v, err)
			}
			if _, err := do("RELEASE", "sku-1", "w9", "new", "retail", 2); err == nil || err.Error() != "NOTFOUND no such row" {
				t.Fatalf("RELEASE of an unknown row: %v", err)
			}
			if v, err := do("STOCK.GET", "sku-1", "w2", "new", "retail"); err != nil || !reflect.DeepEqual(v, []any{int64(3), int64(100)}) {
				t.Fatalf("STOCK.GET: %#v %v", v, err)
			}
			if _, err := do("STOCK.GET", "sku-1", "w9", "new", "retail"); !errors.Is(err, redis.Nil) {
				t.Fatalf("STOCK.GET of an unknown row: %v, want redis.Nil", err)
			}
			if v, err := do("AVAILABLE", "sku-1", "new", "retail"); err != nil || v != int64(5) {
				t.Fatalf("AVAILABLE: %v %v", v, err)
			}
			if _, err := do("CAPTURE", "sku-1", "new", "retail", "x"); err == nil || err.Error() != "ERR quantity must be an integer from 1 to 2147483647" {
				t.Fatalf("bad CAPTURE: %v", err)
			}

			// A pipeline: replies come back in order, errors in place.
			cmds, err := rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
				p.Do(ctx, "CAPTURE", "sku-1", "new", "retail", 1)
				p.Do(ctx, "CAPTURE", "sku-1", "new", "retail", 100)
				p.Do(ctx, "RELEASE", "sku-1", "w2", "new", "retail", 1)
				p.Do(ctx, "AVAILABLE", "sku-1", "new", "retail")
				return nil
			})
			if err == nil || len(cmds) != 4 {
				t.Fatalf("pipeline: %d replies, error %v (want the INSUFFICIENT)", len(cmds), err)
			}
			got := []string{}
			for _, c := range cmds {
				got = append(got, c.(*redis.Cmd).String())
			}
			wantPipe := []string{
				"CAPTURE sku-1 new retail 1: [[w1 1]]",
				"CAPTURE sku-1 new retail 100: INSUFFICIENT available 4",
				"RELEASE sku-1 w2 new retail 1: 4",
				"AVAILABLE sku-1 new retail: 5",
			}
			if !reflect.DeepEqual(got, wantPipe) {
				t.Fatalf("pipeline:\n got %q\nwant %q", got, wantPipe)
			}
			if err := rdb.Ping(ctx).Err(); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestGoRedisAuth(t *testing.T) {
	s := servertest.Start(t, servertest.Options{NoHTTP: true, Config: server.Config{Password: "s3cret"}})
	ctx := context.Background()
	bad := redis.NewClient(&redis.Options{Addr: s.RESPAddr(), Password: "wrong"})
	defer bad.Close()
	if err := bad.Ping(ctx).Err(); err == nil || err.Error() != "WRONGPASS invalid username-password pair or user is disabled." {
		t.Fatalf("wrong password: %v", err)
	}
	none := redis.NewClient(&redis.Options{Addr: s.RESPAddr()})
	defer none.Close()
	if err := none.Ping(ctx).Err(); err == nil || err.Error() != "NOAUTH Authentication required." {
		t.Fatalf("no password: %v", err)
	}
	good := redis.NewClient(&redis.Options{Addr: s.RESPAddr(), Password: "s3cret"})
	defer good.Close()
	if v, err := good.Do(ctx, "AVAILABLE", "sku-1", "new", "retail").Result(); err != nil || v != int64(0) {
		t.Fatalf("right password: %v %v", v, err)
	}
}
