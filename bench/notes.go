package bench

import (
	"encoding/json"
	"fmt"
	"strings"
)

// ExtraNotes returns a line for each figure of r.Extra that a reader of
// "check: OK" must not miss: updates lost, acknowledged inserts, units or
// published messages missing, carts of unknown outcome (each when not
// zero), the share of carts refused as insufficient, and the expiry lag of
// abandoned holds. Each names its field. Whether such a figure fails the
// check is its kind's decision (rw counts MODIFY's lost updates without
// failing it); the notes only make it visible, under the table
// (WriteTable) and in the report's checks. Values are int64 or float64 as
// a kind stores them, float64 once read back from JSON.
func ExtraNotes(r *Result) []string {
	x := r.Extra
	if len(x) == 0 {
		return nil
	}
	num := func(key string) float64 {
		switch v := x[key].(type) {
		case int:
			return float64(v)
		case int64:
			return float64(v)
		case float64:
			return v
		case json.Number:
			f, _ := v.Float64()
			return f
		}
		return 0
	}
	var notes []string
	add := func(key, format string, args ...any) {
		notes = append(notes, fmt.Sprintf(format, args...)+" (extra."+key+")")
	}
	if n := num("lost_updates"); n > 0 {
		s := fmt.Sprintf("%.0f of %.0f acknowledged updates lost", n, num("updates_acknowledged"))
		if k := num("records_with_lost_updates"); k > 0 {
			s += fmt.Sprintf(", on %.0f records", k)
		}
		add("lost_updates", "%s", s)
	}
	if n := num("inserts_missing"); n > 0 {
		add("inserts_missing", "%.0f of %.0f acknowledged inserts missing", n, num("inserts_acknowledged"))
	}
	if n := num("unconfirmed_missing"); n > 0 {
		add("unconfirmed_missing", "%.0f of %.0f published messages missing (published without a confirm: nothing promised them)", n, num("published"))
	}
	if n := num("units_missing"); n > 0 {
		add("units_missing", "%.0f units taken and not accounted for", n)
	}
	unit := "carts"
	if strings.HasPrefix(r.Workload.Name, "order/") {
		unit = "orders"
	}
	if n := num("unknown_outcome"); n > 0 {
		add("unknown_outcome", "%.0f of %d %s of unknown outcome (every try failed: each may or may not have been applied)", n, r.Ops, unit)
	}
	if n := num("insufficient"); n > 0 && r.Ops > 0 {
		add("insufficient", "%.0f of %d %s refused as insufficient (%.1f%%)", n, r.Ops, unit, 100*n/float64(r.Ops))
	}
	if n := num("expiry_lag_samples"); n > 0 {
		add("expiry_lag_*", "expiry lag p50 %s ms, p99 %s ms, max %s ms over %.0f abandoned holds timed",
			ms(num("expiry_lag_p50_ms")), ms(num("expiry_lag_p99_ms")), ms(num("expiry_lag_max_ms")), n)
	}
	return notes
}
