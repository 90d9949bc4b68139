// Package inventory is allot's domain and its pure state machine.
//
// A Row is keyed by (sku, warehouse, condition, source) and holds a count
// (never below zero) and a price. A Group is (sku, condition, source): the
// unit a buyer asks for. State.Apply takes an Op and returns a Result; that is
// the only way state changes.
//
// Invariants kept by State:
//   - no row's count is ever below zero or above CountMax;
//   - a group's total equals the sum of its rows' counts;
//   - a group's rows are ordered by warehouse id, ascending byte order, which
//     is the allocation order of Capture;
//   - an Op that is rejected (any Code other than CodeOK) changes nothing.
//
// What this package must never do: I/O, read a clock, start a goroutine, or
// keep a reference to a caller's buffer after Apply returns. Same ops in, same
// state out: that is what makes journal replay, snapshots and simulation
// testing possible. Business outcomes (insufficient stock, unknown row, bad
// input) are Result codes, not Go errors; panics are reserved for broken
// invariants.
package inventory
