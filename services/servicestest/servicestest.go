// Package servicestest brings up the shared peer servers for tests.
//
// Require starts (or finds running) one server with the default
// services.Config, so that `go test ./...` on a fresh machine brings up
// whatever its integration tests need. Many test packages may call it at
// once: services.Up serialises them with a file lock, one starts the
// server and the others find it running.
//
// A server that cannot be brought up fails the test when CI=true (an
// integration test must never be skipped in CI) and skips it otherwise,
// with the reason. Require never stops a server: the next package reuses it.
package servicestest

import (
	"context"
	"os"
	"testing"
	"time"

	"allot/services"
	"allot/store"
)

// upTimeout bounds Require: installing a package and a first start of
// MariaDB on a busy machine both take a while.
const upTimeout = 10 * time.Minute

// Require brings the named server up (see services.Names) and leaves its
// durability as it is; a server it starts runs in fsync mode.
func Require(t testing.TB, name string) {
	t.Helper()
	RequireDurability(t, name, "")
}

// RequireDurability is Require with a durability the server must run in
// (services.Config.Durability; empty keeps what runs).
func RequireDurability(t testing.TB, name string, d store.Durability) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), upTimeout)
	defer cancel()
	err := services.Up(ctx, services.Config{Durability: d}, name)
	if err == nil {
		return
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("servicestest: %s is needed and could not be brought up: %v", name, err)
	}
	t.Skipf("servicestest: %s is not available (CI=true makes this a failure): %v", name, err)
}
