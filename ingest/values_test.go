package ingest

import (
	"slices"
	"strings"
	"testing"
)

// columnTypeOf writes members as information_schema writes an ENUM or SET
// column's type: kind('a','b'), a quote in a member doubled.
func columnTypeOf(kind string, members []string) string {
	quoted := make([]string, len(members))
	for i, m := range members {
		quoted[i] = "'" + strings.ReplaceAll(m, "'", "''") + "'"
	}
	return kind + "(" + strings.Join(quoted, ",") + ")"
}

func TestParseMembers(t *testing.T) {
	for _, tc := range []struct {
		columnType, kind string
		members          []string
	}{
		{"enum('red','green','blue')", "enum", []string{"red", "green", "blue"}},
		{"SET('a','b,c','d''e')", "set", []string{"a", "b,c", "d'e"}},
		{"enum('')", "enum", []string{""}},
		{"enum('it''s','''')", "enum", []string{"it's", "'"}},
		{"varchar(64)", "", nil},
		{"int(11)", "", nil},
		{"enumeration", "", nil},
	} {
		kind, members := parseMembers(tc.columnType)
		if kind != tc.kind || !slices.Equal(members, tc.members) {
			t.Errorf("parseMembers(%q) = %q %q, want %q %q", tc.columnType, kind, members, tc.kind, tc.members)
		}
	}
}

// FuzzParseMembers: any column type parses without a panic, and members
// written as information_schema writes them come back as they were.
func FuzzParseMembers(f *testing.F) {
	f.Add("enum('red','green')", "a,b'c")
	f.Add("set('')", "")
	f.Add("enum('it''s'", "'")
	f.Fuzz(func(t *testing.T, columnType, joined string) {
		parseMembers(columnType)
		members := strings.Split(joined, ",")
		for _, kind := range []string{"enum", "set"} {
			got, back := parseMembers(columnTypeOf(kind, members))
			if got != kind || !slices.Equal(back, members) {
				t.Fatalf("%s members %q came back as %q %q", kind, members, got, back)
			}
		}
	})
}
