package loopback

import "testing"

func TestHost(t *testing.T) {
	for host, want := range map[string]bool{
		"127.0.0.1:7380":       true,
		"127.0.0.1":            true,
		"127.1.2.3:80":         true,
		"[::1]:7380":           true,
		"::1":                  true,
		"localhost:7390":       true,
		"LOCALHOST":            true,
		"app.localhost:7390":   true,
		"localhost.:7390":      true,
		"[::ffff:127.0.0.1]:1": true,
		"evil.example:7390":    false,
		"evil.example":         false,
		"localhost.evil.com":   false,
		"10.0.0.1:7380":        false,
		"0.0.0.0:7380":         false,
		"":                     false,
		"127.0.0.1.evil.com":   false,
	} {
		if got := Host(host); got != want {
			t.Errorf("Host(%q) = %v, want %v", host, got, want)
		}
	}
}
