package inventory

import "math"

// Allocate applies the domain's allocation rule to stock, a group's
// warehouses with their counts in ascending byte order of their ids: take
// min(count, remaining) from each until n is covered. It returns CodeOK with
// the lines (appended to lines[:0]), or CodeInsufficient with the group's
// total, saturated at math.MaxInt64, when the warehouses hold less than n.
//
// It is the rule for stores that compute a capture outside allot's engine
// (the SQL adapters read the locked rows, then allocate in Go). State keeps
// its own loop over its row pointers on the hot path; a test holds the two
// to the same answers.
func Allocate(stock []Line, n int64, lines []Line) Result {
	lines = lines[:0]
	remaining, total := n, int64(0)
	for _, w := range stock {
		if w.Count <= 0 {
			continue
		}
		total = min(total, math.MaxInt64-w.Count) + w.Count
		if remaining > 0 {
			take := min(w.Count, remaining)
			remaining -= take
			lines = append(lines, Line{Warehouse: w.Warehouse, Count: take})
		}
	}
	if remaining > 0 {
		return Result{Code: CodeInsufficient, Available: total}
	}
	return Result{Code: CodeOK, Lines: lines}
}
