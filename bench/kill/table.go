package kill

import (
	"fmt"
	"io"
	"text/tabwriter"
)

// WriteTable prints one line per audit: the lost-acknowledged table.
func WriteTable(w io.Writer, results []*Result) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "store\tdurability\tkills\tacked ops\tin flight\tacked lost\tapplied unacked\thalf-applied\toversold\tcorrupt\trows missing\tverdict\t")
	for _, r := range results {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%s\t\n",
			r.Store, r.Durability, r.Kills, r.Acked, r.InFlight, r.LostAcked, r.AppliedUnacked,
			r.HalfApplied, r.Oversold, r.Corrupt, r.RowsMissing, r.Verdict())
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, r := range results {
		if r.Error != "" {
			fmt.Fprintf(w, "%s %s: %s\n", r.Store, r.Durability, r.Error)
		}
		if r.KilledEarly > 0 {
			fmt.Fprintf(w, "%s %s: in %d of %d rounds every op was sent before the kill (not under load): raise the ops per round\n", r.Store, r.Durability, r.KilledEarly, r.Kills)
		}
		for _, e := range r.Examples {
			fmt.Fprintf(w, "%s %s: %s\n", r.Store, r.Durability, e)
		}
		if r.Cleanup != "" {
			fmt.Fprintf(w, "%s %s: cleanup: %s\n", r.Store, r.Durability, r.Cleanup)
		}
	}
	return nil
}

// Verdict is one word or phrase for the table.
func (r *Result) Verdict() string {
	switch {
	case r.Error != "":
		return "ERROR"
	case r.NeverFine() > 0:
		return "FAILED"
	case r.BrokePromise() && r.LostAcked > 0 && r.Durability == "fsync":
		return "FAILED: fsync lost acked ops"
	case r.BrokePromise() && r.LostAcked > 0:
		return "FAILED: " + r.Durability + " lost acked ops on a process crash"
	case r.BrokePromise():
		return "FAILED: " + r.Durability + " lost loaded rows on a process crash"
	case r.NotUnderLoad():
		return "NOT UNDER LOAD: every kill came after the last op"
	case r.LostAcked > 0:
		return "loses acked ops (as the mode allows)"
	}
	return "ok"
}
