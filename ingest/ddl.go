package ingest

import "strings"

// A statement in the binary log that changes a table without row events:
// its rows vanish (TRUNCATE, DROP, DROP DATABASE, CREATE OR REPLACE; an
// ALTER that truncates, drops, exchanges or converts a partition, or
// discards or imports a tablespace), it becomes another table (RENAME,
// ALTER … RENAME), or its columns change (ALTER). The ingester must not go
// on as if nothing happened (mysql.go).
type ddlVerb string

const (
	ddlNone         ddlVerb = ""
	ddlAlter        ddlVerb = "ALTER TABLE"
	ddlAlterRename  ddlVerb = "ALTER TABLE … RENAME"
	ddlCreate       ddlVerb = "CREATE OR REPLACE TABLE"
	ddlDrop         ddlVerb = "DROP TABLE"
	ddlDropDatabase ddlVerb = "DROP DATABASE"
	ddlRename       ddlVerb = "RENAME TABLE"
	ddlTruncate     ddlVerb = "TRUNCATE TABLE"
	// An ALTER that moves rows in or out of the table is "ALTER TABLE … "
	// and the clause that does (ddlAlterRows).
)

// ddlAlterRows is the verb of an ALTER whose clause op (TRUNCATE
// PARTITION, DISCARD TABLESPACE, ...) moves rows in or out without row
// events.
func ddlAlterRows(op string) ddlVerb { return ddlVerb("ALTER TABLE … " + op) }

// tableName is a table a statement names: schema is "" when unqualified;
// table is "" for a whole database (DROP DATABASE).
type tableName struct{ schema, table string }

// ddlTables recognises the statements above and returns the tables they
// name (for RENAME, both sides of every pair; for an ALTER, the table
// altered first, then the others its clauses name: the new name, the
// table a partition is exchanged with). Comments, executable comments
// (/*! ... */, run by the server), quoted strings, backquoted and (for
// sql_mode ANSI_QUOTES) double-quoted identifiers and a leading SET
// STATEMENT ... FOR are understood; anything else returns ddlNone.
func ddlTables(query string) (ddlVerb, []tableName) {
	switch first := sqlTokens(query, 1); {
	case len(first) == 0 || first[0].quoted:
		return ddlNone, nil
	default:
		switch strings.ToUpper(first[0].text) {
		case "ALTER", "CREATE", "DROP", "RENAME", "TRUNCATE", "SET":
		default:
			return ddlNone, nil
		}
	}
	p := ddlParser{toks: sqlTokens(query, -1)}
	if p.word(0, "SET") && p.word(1, "STATEMENT") {
		// SET STATEMENT var=value [, ...] FOR statement (MariaDB).
		for i := 2; i < len(p.toks); i++ {
			if p.word(i, "FOR") {
				p.toks = p.toks[i+1:]
				break
			}
		}
	}
	i := 0
	var verb ddlVerb
	switch {
	case p.word(0, "ALTER"):
		i = 1
		for p.word(i, "ONLINE") || p.word(i, "IGNORE") {
			i++
		}
		if !p.word(i, "TABLE") {
			return ddlNone, nil
		}
		return p.alter(i + 1)
	case p.word(0, "CREATE"):
		// CREATE OR REPLACE [TEMPORARY] {TABLE | SEQUENCE} name: the table
		// of that name is dropped. A plain CREATE TABLE of a name that
		// exists fails (or, IF NOT EXISTS, does nothing).
		if !p.word(1, "OR") || !p.word(2, "REPLACE") {
			return ddlNone, nil
		}
		i = 3
		if p.word(i, "TEMPORARY") {
			i++
		}
		if !p.word(i, "TABLE") && !p.word(i, "SEQUENCE") {
			return ddlNone, nil
		}
		verb, i = ddlCreate, i+1
	case p.word(0, "DROP") && (p.word(1, "DATABASE") || p.word(1, "SCHEMA")):
		i = 2
		if p.word(i, "IF") && p.word(i+1, "EXISTS") {
			i += 2
		}
		if i < len(p.toks) && p.toks[i].ident() {
			return ddlDropDatabase, []tableName{{schema: p.toks[i].text}}
		}
		return ddlDropDatabase, nil
	case p.word(0, "DROP"):
		i = 1
		if p.word(i, "TEMPORARY") {
			i++
		}
		if !p.word(i, "TABLE") && !p.word(i, "TABLES") {
			return ddlNone, nil
		}
		verb, i = ddlDrop, i+1
	case p.word(0, "RENAME"):
		if !p.word(1, "TABLE") && !p.word(1, "TABLES") {
			return ddlNone, nil
		}
		verb, i = ddlRename, 2
	case p.word(0, "TRUNCATE"):
		verb, i = ddlTruncate, 1
		if p.word(i, "TABLE") {
			i++
		}
	default:
		return ddlNone, nil
	}
	if p.word(i, "IF") && (p.word(i+1, "EXISTS") || p.word(i+1, "NOT") && p.word(i+2, "EXISTS")) {
		i += 2
		if p.word(i, "EXISTS") {
			i++
		}
	}
	var names []tableName
	for i < len(p.toks) {
		if p.punct(i, ",") {
			i++
			continue
		}
		if verb == ddlRename && p.word(i, "TO") {
			i++
			continue
		}
		n, next, ok := p.name(i)
		if !ok {
			break
		}
		names = append(names, n)
		i = p.skipWait(next)
		if verb == ddlTruncate || verb == ddlCreate {
			break
		}
		if verb == ddlRename && p.word(i, "TO") {
			continue
		}
		if !p.punct(i, ",") {
			break // DROP TABLE t RESTRICT, a WAIT clause, a comment's remains
		}
	}
	return verb, names
}

// alter reads an ALTER TABLE from its table name at i: the table and the
// clauses that rename it or move rows without row events.
func (p *ddlParser) alter(i int) (ddlVerb, []tableName) {
	if p.word(i, "IF") && p.word(i+1, "EXISTS") { // ALTER TABLE IF EXISTS (MariaDB)
		i += 2
	}
	target, next, ok := p.name(i)
	if !ok {
		return ddlAlter, nil
	}
	verb, names := ddlAlter, []tableName{target}
	i = p.skipWait(next)
	clauseStart, depth := true, 0
	for ; i < len(p.toks); i++ {
		switch {
		case p.punct(i, "("):
			depth++
		case p.punct(i, ")"):
			depth--
		case depth == 0 && p.punct(i, ","):
			clauseStart = true
			continue
		}
		atClause := clauseStart
		clauseStart = false
		if depth != 0 {
			continue
		}
		switch {
		case atClause && p.word(i, "RENAME") && !p.word(i+1, "COLUMN") && !p.word(i+1, "INDEX") && !p.word(i+1, "KEY") && !p.word(i+1, "CONSTRAINT"):
			// RENAME [TO | AS] new_name: the table itself.
			j := i + 1
			if p.word(j, "TO") || p.word(j, "AS") {
				j++
			}
			if n, next, ok := p.name(j); ok {
				names = append(names, n)
				i = next - 1
			}
			verb = ddlAlterRename
		case (p.word(i, "TRUNCATE") || p.word(i, "DROP") || p.word(i, "EXCHANGE") || p.word(i, "CONVERT")) && p.word(i+1, "PARTITION"):
			if verb != ddlAlterRename {
				verb = ddlAlterRows(strings.ToUpper(p.toks[i].text) + " PARTITION")
			}
		case (p.word(i, "DISCARD") || p.word(i, "IMPORT")) && (p.word(i+1, "TABLESPACE") || p.word(i+1, "PARTITION")):
			if verb != ddlAlterRename {
				verb = ddlAlterRows(strings.ToUpper(p.toks[i].text) + " TABLESPACE")
			}
		case p.word(i, "CONVERT") && p.word(i+1, "TABLE"),
			p.word(i, "WITH") && p.word(i+1, "TABLE"),
			p.word(i, "TO") && p.word(i+1, "TABLE"):
			// CONVERT TABLE t TO PARTITION (t's rows move in, t goes),
			// EXCHANGE PARTITION p WITH TABLE t (t's rows are swapped),
			// CONVERT PARTITION p TO TABLE t (t is made of p's rows).
			if p.word(i, "CONVERT") && verb != ddlAlterRename {
				verb = ddlAlterRows("CONVERT TABLE")
			}
			if n, next, ok := p.name(i + 2); ok {
				names = append(names, n)
				i = next - 1
			}
		}
	}
	return verb, names
}

type ddlParser struct{ toks []sqlToken }

// word reports whether token i is the keyword w (unquoted, any case).
func (p *ddlParser) word(i int, w string) bool {
	return i < len(p.toks) && !p.toks[i].quoted && strings.EqualFold(p.toks[i].text, w)
}

// punct reports whether token i is the punctuation c.
func (p *ddlParser) punct(i int, c string) bool {
	return i < len(p.toks) && !p.toks[i].quoted && p.toks[i].text == c
}

// name reads a table name, schema.table or table, at i and returns the
// index after it.
func (p *ddlParser) name(i int) (tableName, int, bool) {
	if i >= len(p.toks) || !p.toks[i].ident() {
		return tableName{}, i, false
	}
	if p.punct(i+1, ".") && i+2 < len(p.toks) && p.toks[i+2].ident() {
		return tableName{schema: p.toks[i].text, table: p.toks[i+2].text}, i + 3, true
	}
	return tableName{table: p.toks[i].text}, i + 1, true
}

// skipWait skips a WAIT n or NOWAIT clause at i (MariaDB).
func (p *ddlParser) skipWait(i int) int {
	switch {
	case p.word(i, "NOWAIT"):
		return i + 1
	case p.word(i, "WAIT") && i+1 < len(p.toks):
		return i + 2
	}
	return i
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
	if n.table == "" { // the whole database
		return s != "" && strings.EqualFold(s, schema)
	}
	return strings.EqualFold(s, schema) && strings.EqualFold(n.table, table)
}

type sqlToken struct {
	text   string
	quoted bool // a backquoted or double-quoted identifier (text without the quotes)
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

// sqlTokens splits the start of a statement into at most max tokens (max
// < 0: all of it): words, quoted identifiers and single punctuation
// characters; whitespace, comments and single-quoted strings (as one token
// "'") are skipped or collapsed. The text of an executable comment (/*!,
// /*!50100, /*M!100500) is read as the server runs it: as statement text.
// A double-quoted string is taken for an identifier: where a statement
// names a table the server accepts one only with sql_mode ANSI_QUOTES,
// where it is one.
func sqlTokens(q string, max int) []sqlToken {
	var toks []sqlToken
	inExec := false // inside an executable comment: its */ is skipped
	for i := 0; i < len(q) && (max < 0 || len(toks) < max); {
		c := q[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f':
			i++
		case c == '#' || c == '-' && i+2 < len(q) && q[i+1] == '-' && (q[i+2] == ' ' || q[i+2] == '\t'):
			for i < len(q) && q[i] != '\n' {
				i++
			}
		case inExec && c == '*' && i+1 < len(q) && q[i+1] == '/':
			inExec = false
			i += 2
		case !inExec && c == '/' && strings.HasPrefix(q[i:], "/*!"), !inExec && c == '/' && strings.HasPrefix(q[i:], "/*M!"):
			inExec = true
			i += strings.Index(q[i:], "!") + 1
			for i < len(q) && q[i] >= '0' && q[i] <= '9' {
				i++
			}
		case c == '/' && i+1 < len(q) && q[i+1] == '*':
			end := strings.Index(q[i+2:], "*/")
			if end < 0 {
				return toks
			}
			i += 2 + end + 2
		case c == '`' || c == '"':
			var b strings.Builder
			j := i + 1
			for ; j < len(q); j++ {
				if c == '"' && q[j] == '\\' && j+1 < len(q) {
					b.WriteByte(q[j+1]) // a string's escape (no ANSI_QUOTES)
					j++
					continue
				}
				if q[j] == c {
					if j+1 < len(q) && q[j+1] == c {
						b.WriteByte(c)
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
		case c == '\'':
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

// statementVerb returns the first word of query, after a leading SET
// STATEMENT var=value [, ...] FOR (MariaDB), in upper case, and the tokens
// from it on (at most max of the statement's, max < 0: all).
func statementVerb(query string, max int) (string, []sqlToken) {
	toks := sqlTokens(query, max)
	p := ddlParser{toks: toks}
	if p.word(0, "SET") && p.word(1, "STATEMENT") {
		for i := 2; i < len(toks); i++ {
			if p.word(i, "FOR") {
				toks = toks[i+1:]
				break
			}
		}
	}
	if len(toks) == 0 || toks[0].quoted {
		return "", nil
	}
	return strings.ToUpper(toks[0].text), toks
}

// changesRows tells whether query, the statement of a query event,
// changes rows: INSERT, UPDATE, DELETE, REPLACE, LOAD DATA or LOAD XML, or
// one led by WITH (a binary log holds no SELECT). Such a statement in the
// binary log is a change written as a statement (binlog_format STATEMENT
// or MIXED), not as rows.
func changesRows(query string) bool {
	switch verb, _ := statementVerb(query, 64); verb {
	case "INSERT", "UPDATE", "DELETE", "REPLACE", "LOAD", "WITH":
		return true
	}
	return false
}

// namesIdentifier tells whether query names the identifier name (a
// database or a table), quoted or not, in any case.
func namesIdentifier(query, name string) bool {
	for _, t := range sqlTokens(query, -1) {
		if t.ident() && strings.EqualFold(t.text, name) {
			return true
		}
	}
	return false
}

// A statement of a query event that marks the course of a transaction
// (an event group of the binary log).
const (
	txNone       = ""
	txBegin      = "BEGIN"       // BEGIN, START TRANSACTION, XA START
	txCommit     = "COMMIT"      // COMMIT, XA COMMIT
	txRollback   = "ROLLBACK"    // ROLLBACK, XA ROLLBACK
	txSavepoint  = "SAVEPOINT"   // SAVEPOINT name
	txRollbackTo = "ROLLBACK TO" // ROLLBACK [WORK] TO [SAVEPOINT] name
)

// transactionStatement recognises the statements above; name is the
// savepoint's, in lower case (savepoint names compare without regard to
// case).
func transactionStatement(query string) (verb, name string) {
	verb, toks := statementVerb(query, 8)
	p := ddlParser{toks: toks}
	switch {
	case verb == "BEGIN" || verb == "START" && p.word(1, "TRANSACTION"):
		return txBegin, ""
	case verb == "COMMIT":
		return txCommit, ""
	case verb == "SAVEPOINT" && len(toks) > 1:
		return txSavepoint, strings.ToLower(toks[1].text)
	case verb == "ROLLBACK":
		i := 1
		if p.word(i, "WORK") {
			i++
		}
		if !p.word(i, "TO") {
			return txRollback, ""
		}
		i++
		if p.word(i, "SAVEPOINT") {
			i++
		}
		if i < len(toks) {
			return txRollbackTo, strings.ToLower(toks[i].text)
		}
		return txRollbackTo, ""
	case verb == "XA" && (p.word(1, "START") || p.word(1, "BEGIN")):
		return txBegin, ""
	case verb == "XA" && p.word(1, "COMMIT"):
		return txCommit, ""
	case verb == "XA" && p.word(1, "ROLLBACK"):
		return txRollback, ""
	}
	return txNone, ""
}

// cascadingForeignKey is a foreign key whose rules change the rows of the
// table that has it (the child) when its parent's rows change.
type cascadingForeignKey struct {
	name   string // the constraint's
	parent string // the table it references
	rules  string // its ON DELETE and ON UPDATE clauses
}

// cascadingForeignKeys reads, from a table's SHOW CREATE TABLE, the
// foreign keys with an ON DELETE or ON UPDATE rule of CASCADE, SET NULL
// or SET DEFAULT (the server prints each as a line of its own:
// CONSTRAINT `name` FOREIGN KEY (...) REFERENCES `parent` (...) ON DELETE
// CASCADE).
func cascadingForeignKeys(createTable string) []cascadingForeignKey {
	var out []cascadingForeignKey
	for _, line := range strings.Split(createTable, "\n") {
		p := ddlParser{toks: sqlTokens(line, -1)}
		if !p.word(0, "CONSTRAINT") || !p.word(2, "FOREIGN") {
			continue
		}
		fk := cascadingForeignKey{name: p.toks[1].text}
		var rules []string
		cascading := false
		for i := 3; i < len(p.toks); i++ {
			switch {
			case p.word(i, "REFERENCES"):
				if n, _, ok := p.name(i + 1); ok {
					fk.parent = n.table
					if n.schema != "" {
						fk.parent = n.schema + "." + n.table
					}
				}
			case p.word(i, "ON") && (p.word(i+1, "DELETE") || p.word(i+1, "UPDATE")) && i+2 < len(p.toks):
				rule := strings.ToUpper(p.toks[i+2].text)
				if (rule == "SET" || rule == "NO") && i+3 < len(p.toks) {
					rule += " " + strings.ToUpper(p.toks[i+3].text)
				}
				rules = append(rules, "ON "+strings.ToUpper(p.toks[i+1].text)+" "+rule)
				cascading = cascading || rule == "CASCADE" || rule == "SET NULL" || rule == "SET DEFAULT"
			}
		}
		if cascading {
			fk.rules = strings.Join(rules, " ")
			out = append(out, fk)
		}
	}
	return out
}
