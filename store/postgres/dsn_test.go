package postgres

import "testing"

// The address replaces whatever host and port the base DSN names, and
// nothing else of it.
func TestWithAddr(t *testing.T) {
	for _, tt := range []struct{ base, addr, want string }{
		{"postgres://allot@127.0.0.1:15432/allot?sslmode=disable", "127.0.0.1:17432", "postgres://allot@127.0.0.1:17432/allot?sslmode=disable"},
		{"postgres://u:p@db.example:5432/x?sslmode=require", "10.0.0.1:6432", "postgres://u:p@10.0.0.1:6432/x?sslmode=require"},
		{"postgres://u@db.example/x", "[::1]:5433", "postgres://u@[::1]:5433/x"},
	} {
		if got := withAddr(tt.base, tt.addr); got != tt.want {
			t.Errorf("withAddr(%q, %q) = %q, want %q", tt.base, tt.addr, got, tt.want)
		}
	}
	if got := dsn("127.0.0.1:17432"); got != "postgres://allot@127.0.0.1:17432/allot?sslmode=disable" {
		t.Errorf("dsn = %q", got)
	}
}
