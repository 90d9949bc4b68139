package relay

import "net"

// SetDial makes r open its broker connections with dial, so that a test
// can put a faulty network between the relay and the broker.
func (r *Relay) SetDial(dial func(network, addr string) (net.Conn, error)) { r.dial = dial }
