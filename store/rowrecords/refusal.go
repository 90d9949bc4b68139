package rowrecords

import (
	"strings"

	"allot/store"
)

// Refusal is the store.Registration.Refuses of the stores whose records
// are rows of allot (embedded, allot, allot-mux, allot-cluster): what
// Check would refuse when the record space is opened, said before the
// store is, with the engine taken to run in the durability the run asks.
func Refusal(u store.Use) string {
	if u.Workload != "rw" && u.Workload != "kv" {
		return ""
	}
	if _, err := Check(u.RW, u.Durability); err != nil {
		return "workload " + u.Workload + ": " + strings.TrimPrefix(err.Error(), store.ErrRWUnsupported.Error()+": ")
	}
	return ""
}
