// Package storetest is the one conformance suite every bench store passes:
// allot's own (embedded, remote), the peers (postgres, mysql, redis,
// tarantool and their variants) and the baseline (memory). An adapter's test
// calls
//
//	storetest.Run(t, func(t *testing.T) store.Store { ... open a fresh store ... })
//
// and gets one subtest per rule of the domain: capture across warehouses in
// ascending byte order of their ids, all or nothing, insufficient stock
// reported with the available total, unknown rows, input limits, overflow,
// concurrent sessions never overselling, Load replacing what was there, Rows
// reading back what was loaded.
//
// Contract with the caller: open is called once per subtest and returns a
// store ready for Load (its server up, its schema in place); Run calls Load
// itself, closes every session it opens and closes the store when the
// subtest ends. Stores may share a server: each subtest Loads its own rows,
// which replaces whatever an earlier one left.
//
// What the suite must never do: depend on an adapter's internals, or
// accept an outcome the domain forbids because one datastore finds it hard
// (the naive control store is expected to fail it).
package storetest
