// Package loopback tells whether an HTTP request was addressed to this
// machine by a loopback name, for the servers that trust whoever can
// connect when no password or token is set.
package loopback

import (
	"net"
	"net/netip"
	"strings"
)

// Host reports whether host (a request's Host: a name or address, with or
// without a port) is a loopback name: "localhost" (or a name under it) or
// a loopback address (127.0.0.0/8, ::1). A password-less server bound to
// loopback trusts whoever can connect, and a browser on this machine can:
// a page whose name its owner rebinds to 127.0.0.1 (DNS rebinding) then
// makes same-origin requests that no cross-origin check refuses, but its
// Host is still its own name.
func Host(host string) bool {
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.TrimPrefix(strings.TrimSuffix(host, "]"), "["), ".")
	if strings.EqualFold(host, "localhost") || strings.HasSuffix(strings.ToLower(host), ".localhost") {
		return true
	}
	a, err := netip.ParseAddr(host)
	return err == nil && a.Unmap().IsLoopback()
}
