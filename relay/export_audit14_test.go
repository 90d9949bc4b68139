package relay

import "allot/changes"

// HistoryAt is the name of the history whose first relayed event is ev.
func HistoryAt(ev *changes.Event) string { return historyAt(ev) }

// Fingerprint is ev's fingerprint, as a checkpoint names its event.
func Fingerprint(ev *changes.Event) string { return fingerprint(ev) }
