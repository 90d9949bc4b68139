package services

import (
	"context"
	"testing"
)

// TestAudit21AptSpeaksEnglishWhateverTheLocale: aptGet tells a lock held by
// another apt from any other failure by apt's English message ("Could not
// get lock"), and apt translates its messages by the locale it inherits. On
// a machine whose locale is German, say, the message was "Sperre konnte
// nicht erlangt werden", and a first `services up` failed at once on
// apt-daily's lock instead of waiting for it. runApt runs apt with the C
// locale whatever the caller's.
func TestAudit21AptSpeaksEnglishWhateverTheLocale(t *testing.T) {
	t.Setenv("LANG", "de_DE.UTF-8")
	t.Setenv("LC_ALL", "de_DE.UTF-8")
	t.Setenv("LC_MESSAGES", "de_DE.UTF-8")
	t.Setenv("LANGUAGE", "de")
	out, err := runApt(context.Background(), "sh", "-c", `printf '%s|%s|%s' "$LC_ALL" "$LANGUAGE" "$DEBIAN_FRONTEND"`)
	if err != nil {
		t.Fatalf("runApt: %v: %s", err, out)
	}
	if got, want := string(out), "C||noninteractive"; got != want {
		t.Fatalf("apt's environment: LC_ALL|LANGUAGE|DEBIAN_FRONTEND = %q, want %q", got, want)
	}
}
