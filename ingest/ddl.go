package ingest

import "strings"

// A statement in the binary log that changes a table without row events:
// its rows vanish (TRUNCATE, DROP), it becomes another table (RENAME), or
// its columns change (ALTER). The ingester must not go on as if nothing
// happened (mysql.go).
type ddlVerb string

const (
	ddlNone     ddlVerb = ""
	ddlAlter    ddlVerb = "ALTER TABLE"
	ddlDrop     ddlVerb = "DROP TABLE"
	ddlRename   ddlVerb = "RENAME TABLE"
	ddlTruncate ddlVerb = "TRUNCATE TABLE"
)

// tableName is a table a statement names: schema is "" when unqualified.
type tableName struct{ schema, table string }

// ddlTables recognises the statements above and returns the tables they
// name (for RENAME, both sides of every pair). Comments, quoted strings
// and backquoted identifiers are understood; anything else returns
// ddlNone.
func ddlTables(query string) (ddlVerb, []tableName) {
	toks := sqlTokens(query, 64)
	word := func(i int, w string) bool {
		return i < len(toks) && !toks[i].quoted && strings.EqualFold(toks[i].text, w)
	}
	i := 0
	var verb ddlVerb
	switch {
	case word(0, "ALTER"):
		i = 1
		for word(i, "ONLINE") || word(i, "IGNORE") {
			i++
		}
		if !word(i, "TABLE") {
			return ddlNone, nil
		}
		verb, i = ddlAlter, i+1
	case word(0, "DROP"):
		i = 1
		if word(i, "TEMPORARY") {
			i++
		}
		if !word(i, "TABLE") && !word(i, "TABLES") {
			return ddlNone, nil
		}
		verb, i = ddlDrop, i+1
		if word(i, "IF") && word(i+1, "EXISTS") {
			i += 2
		}
	case word(0, "RENAME"):
		if !word(1, "TABLE") && !word(1, "TABLES") {
			return ddlNone, nil
		}
		verb, i = ddlRename, 2
	case word(0, "TRUNCATE"):
		verb, i = ddlTruncate, 1
		if word(i, "TABLE") {
			i++
		}
	default:
		return ddlNone, nil
	}
	if word(i, "IF") && word(i+1, "EXISTS") { // ALTER TABLE IF EXISTS (MariaDB)
		i += 2
	}
	var names []tableName
	for i < len(toks) {
		if toks[i].text == "," && !toks[i].quoted {
			i++
			continue
		}
		if verb == ddlRename && word(i, "TO") {
			i++
			continue
		}
		if !toks[i].ident() {
			break
		}
		n := tableName{table: toks[i].text}
		if i+2 < len(toks) && toks[i+1].text == "." && !toks[i+1].quoted && toks[i+2].ident() {
			n = tableName{schema: toks[i].text, table: toks[i+2].text}
			i += 2
		}
		names = append(names, n)
		i++
		if verb == ddlAlter || verb == ddlTruncate {
			break
		}
		if verb == ddlRename && i < len(toks) && word(i, "TO") {
			continue
		}
		if i < len(toks) && (toks[i].text != "," || toks[i].quoted) {
			break // DROP TABLE t RESTRICT, a WAIT clause, a comment's remains
		}
	}
	return verb, names
}

// names reports whether n is the table schema.table, for a statement run
// with defaultSchema as its current database. Names compare without
// regard to case: a false match stops the ingester with an error, a
// missed one would let it corrupt the catalog.
func (n tableName) names(defaultSchema, schema, table string) bool {
	s := n.schema
	if s == "" {
		s = defaultSchema
	}
	return strings.EqualFold(s, schema) && strings.EqualFold(n.table, table)
}

type sqlToken struct {
	text   string
	quoted bool // a backquoted identifier (text without the quotes)
}

func (t sqlToken) ident() bool {
	if t.quoted {
		return t.text != ""
	}
	if t.text == "" {
		return false
	}
	for _, r := range t.text {
		if !identRune(r) {
			return false
		}
	}
	return true
}

func identRune(r rune) bool {
	return r == '_' || r == '$' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= 0x80
}

// sqlTokens splits the start of a statement into at most max tokens:
// words, backquoted identifiers and single punctuation characters;
// whitespace, comments and quoted strings (as one token "'") are skipped
// or collapsed.
func sqlTokens(q string, max int) []sqlToken {
	var toks []sqlToken
	for i := 0; i < len(q) && len(toks) < max; {
		c := q[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f':
			i++
		case c == '#' || c == '-' && i+2 < len(q) && q[i+1] == '-' && (q[i+2] == ' ' || q[i+2] == '\t'):
			for i < len(q) && q[i] != '\n' {
				i++
			}
		case c == '/' && i+1 < len(q) && q[i+1] == '*':
			end := strings.Index(q[i+2:], "*/")
			if end < 0 {
				return toks
			}
			i += 2 + end + 2
		case c == '`':
			var b strings.Builder
			j := i + 1
			for ; j < len(q); j++ {
				if q[j] == '`' {
					if j+1 < len(q) && q[j+1] == '`' {
						b.WriteByte('`')
						j++
						continue
					}
					break
				}
				b.WriteByte(q[j])
			}
			if j >= len(q) {
				return toks // unterminated
			}
			toks = append(toks, sqlToken{text: b.String(), quoted: true})
			i = j + 1
		case c == '\'' || c == '"':
			j := i + 1
			for ; j < len(q); j++ {
				if q[j] == '\\' {
					j++
					continue
				}
				if q[j] == c {
					if j+1 < len(q) && q[j+1] == c {
						j++
						continue
					}
					break
				}
			}
			toks = append(toks, sqlToken{text: "'"})
			i = j + 1
		case identRune(rune(c)):
			j := i
			for j < len(q) && identRune(rune(q[j])) {
				j++
			}
			toks = append(toks, sqlToken{text: q[i:j]})
			i = j
		default:
			toks = append(toks, sqlToken{text: q[i : i+1]})
			i++
		}
	}
	return toks
}
