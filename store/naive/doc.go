// Package naive is the bench's control store, "naive-postgres": the
// read-then-write that every reservation system starts as, on the same
// PostgreSQL server and table layout as the postgres adapter. It exists to
// prove that the bench's checker catches overselling.
//
// A capture reads the group's rows (no lock, no transaction), allocates in
// Go by the domain's rule, then writes each touched row's new absolute count
// in a separate statement. A release reads the row and writes count + n the
// same way. Two sessions that read the same counts both succeed and one
// update is lost: units are sold twice, or released units vanish.
//
// Its table lives in schema "naive" and has no CHECK (count >= 0): the
// postgres adapter's constraint would turn some oversells into errors and
// hide them from the checker.
//
// Invariants it does keep: input is checked in Go before a statement is
// sent; a single session alone behaves exactly like the postgres adapter.
// What it must never do: run in a comparison as if it were a real store, or
// share the postgres adapter's table.
package naive
