// Package workload generates the reservation workload the bench replays,
// writes it to and reads it from op files, and holds a reference model that
// proves every generated op succeeds when run in order.
//
// The "ims" generator has the shape of the original public inventory
// benchmark generator (generate_tests_1.rb of the "Datastore testing for
// IMS" runs that measured MySQL, PostgreSQL, Redis and Tarantool): X distinct
// rows drawn uniformly from SKUs x warehouses x conditions x sources, price
// uniform in 400..1500, initial count uniform in 0..10; then Y ops drawn
// single-threaded against a simulated state: with probability 0.5 a capture
// of 1..min(3, count) units of the group of a uniformly chosen row whose
// count is above zero, else a release of 1..3 units to a uniformly chosen
// row. As in the original, the simulation takes a capture's units from the
// row it picked; the group total, which is all that decides whether a
// capture succeeds, is the same under any allocation rule, so every capture
// succeeds when the ops run in order on any store.
//
// Invariants:
//   - a Workload is a pure function of its Params: the generator draws from
//     its own PCG source seeded from Params.Seed, never from a global one,
//     and its bounded draws are written here rather than taken from
//     math/rand/v2's helpers, so the output cannot change with a Go release;
//   - the op file is canonical: Read accepts exactly what Write produces
//     (decimal numbers without sign or leading zeros, one trailing newline),
//     so a file that parses writes back byte for byte;
//   - identifiers follow inventory.CheckID; warehouse ids are zero-padded
//     ("w1".."w9", or "w01".. for ten or more) so that byte order, the
//     allocation order, is the numeric order.
//
// What workload must never do: touch a store or the network, read a clock,
// or depend on inventory.State for its checks (the reference model is a
// separate, deliberately simple implementation, so it can catch a bug in the
// state machine).
package workload
