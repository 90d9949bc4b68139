package ingest

import (
	"context"
	"crypto/tls"
	"database/sql"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	binlogclient "github.com/go-mysql-org/go-mysql/client"
	"github.com/go-mysql-org/go-mysql/mysql"
	"github.com/go-mysql-org/go-mysql/replication"
	_ "github.com/go-sql-driver/mysql"
	"github.com/siddontang/go-log/log"

	"allot/catalog"
	"allot/client"
)

// Sink is where records go: allot's catalog over RESP (*client.Client).
type Sink interface {
	CatalogSet(ctx context.Context, r catalog.Record, key string) error
	CatalogDel(ctx context.Context, sku, key string) (bool, error)
}

// ErrMismatch is returned when allot says an idempotency key was used with
// other arguments: the source's binlog positions were reused (a reset
// binlog, another server behind the same address), so keys no longer name
// one event. Start from a new snapshot (delete the state file).
var ErrMismatch = errors.New("ingest: allot remembers this event's key with other arguments")

// retryPauseMax bounds the pause between two sends of one op.
const retryPauseMax = time.Second

// Ingester follows one table. Make it with New; Run runs it.
type Ingester struct {
	cfg     Config
	src     source
	sink    Sink
	Metrics *Metrics
	logf    func(format string, args ...any)

	db *sql.DB
	// The followed table as the source names it (information_schema),
	// which is how its binary log names it: with lower_case_table_names=1
	// a DSN's Shop and --table Products are shop.products there.
	// namesFold: the source compares table names without regard to case
	// (lower_case_table_names 1 or 2). transactional: the table's engine
	// undoes its rows at a rollback (InnoDB, not MyISAM).
	schemaName, tableName string
	namesFold             bool
	transactional         bool
	// transactionRowsMax bounds the rows of one transaction held back
	// until its end (transaction.go).
	transactionRowsMax int
	// streamTLS is the binary log connection's TLS configuration: the
	// DSN's, unless it is tls=preferred and the source offers none.
	streamTLS *tls.Config

	columns    map[string]int        // source column name -> ordinal (0-based), read at start
	startOrder []string              // the source's column names in ordinal order, read at start
	startTypes columnTypes           // the columns' ENUM members, character sets and signedness, read at start
	collations map[uint64]string     // the source's collation id -> character set
	byName     map[string]columnInfo // what was read at start, by lower-case column name
	// tz is the time zone the ingester's sessions print TIMESTAMPs in:
	// the binary log's (seconds since the epoch) are rendered in it.
	tz *time.Location

	// The layout of the last table map of the source table: column name ->
	// ordinal from the names the binlog carries (binlog_row_metadata=FULL),
	// else columns, checked against the map's column count.
	lastMap   *replication.TableMapEvent
	lastCols  map[string]int
	lastTypes columnTypes
	withNames bool // the source's table maps carry column names

	// identity names the source server (sourceIdentity), written into
	// every checkpoint. orderAt is the column order rows at the stream's
	// position were written with, as far as the ingester knows it (the
	// checkpoint's, the order read at start for a snapshot, the last table
	// map's names): written into every checkpoint, and checked against
	// startOrder before rows without column names are mapped by it.
	identity string
	orderAt  []string
}

// New checks cfg and returns an ingester writing to sink; logf receives
// one line per notable event (nil: none).
func New(cfg Config, sink Sink, logf func(string, ...any)) (*Ingester, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	src, err := cfg.source()
	if err != nil {
		return nil, err
	}
	if logf == nil {
		logf = func(string, ...any) {}
	}
	return &Ingester{cfg: cfg, src: src, sink: sink, Metrics: &Metrics{}, logf: logf, transactionRowsMax: transactionRowsMax}, nil
}

// Run takes the snapshot if there is no checkpoint, then follows the
// binlog until ctx ends (it then returns ctx's error) or a failure that
// retrying cannot mend.
func (in *Ingester) Run(ctx context.Context) error {
	connector, err := in.cfg.connector()
	if err != nil {
		return err
	}
	db := sql.OpenDB(connector)
	defer db.Close()
	in.db = db
	if err := in.checkBinlogFormat(ctx); err != nil {
		return err
	}
	if err := in.readColumns(ctx); err != nil {
		return err
	}
	if err := in.readTable(ctx); err != nil {
		return err
	}
	if err := in.readTLS(ctx); err != nil {
		return err
	}
	if err := in.readTimeZone(ctx); err != nil {
		return err
	}
	if err := in.readCollations(ctx); err != nil {
		return err
	}
	in.readCharsetTables(ctx)
	var metadata string
	if err := db.QueryRowContext(ctx, "SELECT @@binlog_row_metadata").Scan(&metadata); err == nil && strings.EqualFold(metadata, "FULL") {
		in.withNames = true
	} else {
		in.logf("the source writes no column names in its binary log (binlog_row_metadata is %q, not FULL): rows are mapped by the column order read at start, and an ALTER TABLE of %s stops the ingester; set binlog_row_metadata=FULL to follow column changes", metadata, in.cfg.Table)
	}
	if in.identity, err = in.sourceIdentity(ctx); err != nil {
		return err
	}
	cp, ok, err := readCheckpoint(in.cfg.StateFile)
	if err != nil {
		return err
	}
	in.orderAt = in.startOrder
	if ok {
		if err := in.resumable(&cp); err != nil {
			return err
		}
	}
	if !ok || cp.SnapshotIncomplete {
		interrupted := cp
		// Before the first record is set, the position the snapshot
		// stands at is written as an unfinished snapshot: a crash from
		// then on leaves records of rows that may be deleted, or whose SKU
		// may change, before the snapshot is taken again, and the new one
		// neither has those rows nor follows the binary log from before
		// their change. Following it from the interrupted snapshot's
		// position instead replays every change since: each event carries
		// whole rows, so the catalog converges to the table.
		started := func(at Checkpoint) error {
			if interrupted.SnapshotIncomplete {
				return nil
			}
			at.SnapshotIncomplete = true
			return in.writeCheckpoint(at)
		}
		if interrupted.SnapshotIncomplete {
			in.logf("the snapshot started at %s:%d was interrupted: taking it again, then following the binary log from %s:%d", interrupted.File, interrupted.Pos, interrupted.File, interrupted.Pos)
		}
		if cp, err = in.snapshot(ctx, started); err != nil {
			return err
		}
		if interrupted.SnapshotIncomplete {
			cp = Checkpoint{File: interrupted.File, Pos: interrupted.Pos}
		}
		if err := in.writeCheckpoint(cp); err != nil {
			return err
		}
		in.logf("snapshot done at %s:%d (%d rows)", cp.File, cp.Pos, in.Metrics.Snapshot.Load())
	} else {
		in.logf("resuming at %s:%d", cp.File, cp.Pos)
	}
	return in.follow(ctx, cp)
}

// readColumns maps the source table's column names to their ordinals,
// which is how row events carry values.
func (in *Ingester) readColumns(ctx context.Context) error {
	rows, err := in.db.QueryContext(ctx, `SELECT COLUMN_NAME, ORDINAL_POSITION, COLUMN_TYPE, DATA_TYPE, NUMERIC_SCALE, CHARACTER_SET_NAME FROM information_schema.COLUMNS
		WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ? ORDER BY ORDINAL_POSITION`, in.src.database, in.cfg.Table)
	if err != nil {
		return fmt.Errorf("ingest: reading the columns of %s.%s: %w", in.src.database, in.cfg.Table, err)
	}
	defer rows.Close()
	in.columns = map[string]int{}
	in.startOrder = nil
	in.startTypes = columnTypes{enums: map[int][]string{}, sets: map[int][]string{}, charsets: map[int]string{}, unsigned: map[int]bool{}, scales: map[int]int{}, fixed: map[int]string{}}
	in.byName = map[string]columnInfo{}
	for rows.Next() {
		var name, columnType, dataType string
		var pos int
		var scale sql.NullInt64
		var charset sql.NullString
		if err := rows.Scan(&name, &pos, &columnType, &dataType, &scale, &charset); err != nil {
			return fmt.Errorf("ingest: reading the columns: %w", err)
		}
		in.columns[strings.ToLower(name)] = pos - 1
		in.startOrder = append(in.startOrder, name)
		switch kind, members := parseMembers(columnType); kind {
		case "enum":
			in.startTypes.enums[pos-1] = members
		case "set":
			in.startTypes.sets[pos-1] = members
		}
		if charset.Valid {
			in.startTypes.charsets[pos-1] = charset.String
		}
		info := columnInfoOf(columnType, dataType, scale)
		in.byName[strings.ToLower(name)] = info
		if info.unsigned {
			in.startTypes.unsigned[pos-1] = true
		}
		if info.scale >= 0 {
			in.startTypes.scales[pos-1] = info.scale
		}
		if info.fixed != "" {
			in.startTypes.fixed[pos-1] = info.fixed
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("ingest: reading the columns: %w", err)
	}
	if len(in.columns) == 0 {
		return fmt.Errorf("ingest: table %s.%s does not exist (or the user cannot see it)", in.src.database, in.cfg.Table)
	}
	for _, c := range in.configuredColumns() {
		if _, ok := in.columns[strings.ToLower(c)]; !ok {
			return fmt.Errorf("ingest: table %s.%s has no column %q", in.src.database, in.cfg.Table, c)
		}
	}
	return nil
}

// checkBinlogFormat refuses a source that does not write its binary log
// in row format. With binlog_format MIXED or STATEMENT most changes are
// written as the statements that made them, which the ingester, reading
// rows, cannot apply: each would be lost without a word. (A session may
// still set STATEMENT for itself; follow stops at such a change.)
func (in *Ingester) checkBinlogFormat(ctx context.Context) error {
	var format string
	if err := in.db.QueryRowContext(ctx, "SELECT @@GLOBAL.binlog_format").Scan(&format); err != nil {
		return fmt.Errorf("ingest: reading the source's binlog_format: %w", err)
	}
	if !strings.EqualFold(format, "ROW") {
		return fmt.Errorf("ingest: the source's binlog_format is %s, not ROW: it writes changes as statements, which the ingester cannot apply; set binlog_format=ROW on the source (SET GLOBAL binlog_format = 'ROW', and in its configuration)", format)
	}
	return nil
}

// readTable reads the followed table's names as the source spells them,
// whether its engine rolls back, and warns of the foreign keys that
// change its rows without row events.
func (in *Ingester) readTable(ctx context.Context) error {
	var transactions string
	var lowerCase int
	err := in.db.QueryRowContext(ctx, `SELECT t.TABLE_SCHEMA, t.TABLE_NAME, COALESCE(e.TRANSACTIONS, ''), @@lower_case_table_names
		FROM information_schema.TABLES t LEFT JOIN information_schema.ENGINES e ON e.ENGINE = t.ENGINE
		WHERE t.TABLE_SCHEMA = ? AND t.TABLE_NAME = ?`, in.src.database, in.cfg.Table).Scan(&in.schemaName, &in.tableName, &transactions, &lowerCase)
	if err != nil {
		return fmt.Errorf("ingest: reading table %s.%s: %w", in.src.database, in.cfg.Table, err)
	}
	in.namesFold = lowerCase != 0
	in.transactional = !strings.EqualFold(transactions, "NO")
	// The source applies a foreign key's cascading rules to the child
	// table inside the storage engine, and writes no row events for them.
	// (information_schema.REFERENTIAL_CONSTRAINTS, which has the rules,
	// shows MariaDB's users with SELECT alone nothing: SHOW CREATE TABLE.)
	quote := func(name string) string { return "`" + strings.ReplaceAll(name, "`", "``") + "`" }
	rows, err := in.db.QueryContext(ctx, "SHOW CREATE TABLE "+quote(in.schemaName)+"."+quote(in.tableName))
	if err != nil {
		return fmt.Errorf("ingest: reading the definition of %s.%s: %w", in.schemaName, in.tableName, err)
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil || len(cols) < 2 || !rows.Next() {
		return fmt.Errorf("ingest: reading the definition of %s.%s: %v, %v", in.schemaName, in.tableName, err, rows.Err())
	}
	vals := make([]sql.NullString, len(cols)) // a view has four columns
	ptrs := make([]any, len(cols))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	if err := rows.Scan(ptrs...); err != nil {
		return fmt.Errorf("ingest: reading the definition of %s.%s: %w", in.schemaName, in.tableName, err)
	}
	for _, fk := range cascadingForeignKeys(vals[1].String) {
		in.logf("WARNING: %s.%s has foreign key %s referencing %s with %s: the source applies that to %s's rows without writing them to its binary log, so the catalog keeps the records of rows it deletes or changes that way (until the row changes again, or a new snapshot); delete or change the rows themselves instead (README)",
			in.schemaName, in.tableName, fk.name, fk.parent, fk.rules, in.tableName)
	}
	return nil
}

// follows tells whether a table map names the followed table.
func (in *Ingester) follows(t *replication.TableMapEvent) bool {
	if in.namesFold {
		return strings.EqualFold(string(t.Schema), in.schemaName) && strings.EqualFold(string(t.Table), in.tableName)
	}
	return string(t.Schema) == in.schemaName && string(t.Table) == in.tableName
}

// readTLS decides the binary log connection's TLS: the DSN's (the
// driver's own connections use it, go-mysql's would not), except with
// tls=preferred against a source whose connection to the ingester did not
// use TLS (it offers none), as the driver then falls back to plaintext.
func (in *Ingester) readTLS(ctx context.Context) error {
	in.streamTLS = in.src.tls
	if in.src.tls == nil || !in.src.tlsPreferred {
		return nil
	}
	var name, cipher string
	if err := in.db.QueryRowContext(ctx, "SHOW SESSION STATUS LIKE 'Ssl_cipher'").Scan(&name, &cipher); err != nil {
		return fmt.Errorf("ingest: reading whether the source's connection uses TLS: %w", err)
	}
	if cipher == "" {
		in.streamTLS = nil
		in.logf("the source offers no TLS: reading its binary log in plaintext, as tls=preferred allows")
	}
	return nil
}

// readTimeZone finds the time zone the ingester's sessions print
// TIMESTAMPs in (@@time_zone: the server's, or the DSN's time_zone
// parameter), for the binary log's TIMESTAMPs, which are seconds since the
// epoch. The zone is checked against the server's own rendering of two
// instants (winter and summer); one the ingester cannot reproduce (a
// SYSTEM zone named by an abbreviation Go does not know, a named zone
// missing from this machine's zoneinfo) is an error if a mapped column is
// a TIMESTAMP: its records would differ between the snapshot and the
// binary log.
func (in *Ingester) readTimeZone(ctx context.Context) error {
	var session, system string
	if err := in.db.QueryRowContext(ctx, "SELECT @@session.time_zone, @@system_time_zone").Scan(&session, &system); err != nil {
		return fmt.Errorf("ingest: reading the session's time zone: %w", err)
	}
	name := session
	if strings.EqualFold(session, "SYSTEM") {
		name = system
	}
	tz, err := zoneOf(name)
	if err == nil {
		probes := []int64{1705320000, 1721044800} // 2024-01-15 and 2024-07-15, 12:00 UTC
		var a, b string
		if err = in.db.QueryRowContext(ctx, "SELECT CAST(FROM_UNIXTIME(?) AS CHAR), CAST(FROM_UNIXTIME(?) AS CHAR)", probes[0], probes[1]).Scan(&a, &b); err == nil {
			const layout = "2006-01-02 15:04:05"
			if ga, gb := time.Unix(probes[0], 0).In(tz).Format(layout), time.Unix(probes[1], 0).In(tz).Format(layout); ga != a || gb != b {
				err = fmt.Errorf("the server prints %s and %s, the zone %s here %s and %s", a, b, tz, ga, gb)
			}
		}
	}
	if err != nil {
		for _, c := range in.configuredColumns() {
			if in.byName[strings.ToLower(c)].timestamp {
				return fmt.Errorf("ingest: column %q is a TIMESTAMP, which the snapshot reads in the session time zone %q (system %q), and the ingester cannot render the binary log's TIMESTAMPs in that zone (%v): give the session a zone in the DSN, e.g. ?time_zone=%%27%%2B00%%3A00%%27 (UTC) or a name known to both the server and this machine", c, session, system, err)
			}
		}
		tz = time.UTC // no TIMESTAMP is mapped
	}
	in.tz = tz
	return nil
}

// zoneOf returns the zone a MySQL time_zone value names: an offset
// ("+05:30") or a zone name.
func zoneOf(name string) (*time.Location, error) {
	if len(name) > 1 && (name[0] == '+' || name[0] == '-') {
		h, m, ok := strings.Cut(name[1:], ":")
		hours, err1 := strconv.Atoi(h)
		minutes, err2 := strconv.Atoi(m)
		if !ok || err1 != nil || err2 != nil || minutes < 0 || minutes > 59 {
			return nil, fmt.Errorf("time zone %q", name)
		}
		offset := hours*3600 + minutes*60
		if name[0] == '-' {
			offset = -offset
		}
		return time.FixedZone(name, offset), nil
	}
	return time.LoadLocation(name)
}

// readCollations maps the source's collation ids, which table maps name a
// column's character set by, to character sets.
func (in *Ingester) readCollations(ctx context.Context) error {
	rows, err := in.db.QueryContext(ctx, "SELECT ID, CHARACTER_SET_NAME FROM information_schema.COLLATIONS")
	if err != nil {
		return fmt.Errorf("ingest: reading the source's collations: %w", err)
	}
	defer rows.Close()
	in.collations = map[uint64]string{}
	for rows.Next() {
		var id sql.NullInt64
		var charset sql.NullString // MariaDB lists collations of no single character set too
		if err := rows.Scan(&id, &charset); err != nil {
			return fmt.Errorf("ingest: reading the source's collations: %w", err)
		}
		if id.Valid && charset.Valid {
			in.collations[uint64(id.Int64)] = charset.String
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("ingest: reading the source's collations: %w", err)
	}
	// MariaDB 10.10 and later list a collation that applies to several
	// character sets (uca1400_ai_ci) in COLLATIONS without an id, and
	// each of its full names (utf8mb4_uca1400_ai_ci, id 2304) with its id
	// here only; MySQL and older MariaDB have no ID column here.
	rows, err = in.db.QueryContext(ctx, "SELECT ID, CHARACTER_SET_NAME FROM information_schema.COLLATION_CHARACTER_SET_APPLICABILITY WHERE ID IS NOT NULL")
	if unknownColumn(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("ingest: reading the source's collations: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var id int64
		var charset string
		if err := rows.Scan(&id, &charset); err != nil {
			return fmt.Errorf("ingest: reading the source's collations: %w", err)
		}
		if _, ok := in.collations[uint64(id)]; !ok {
			in.collations[uint64(id)] = charset
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("ingest: reading the source's collations: %w", err)
	}
	return nil
}

// layout returns the column name -> ordinal map of rows that came with
// table map t. A source that writes column names in its table maps
// (binlog_row_metadata=FULL) is mapped by them, so that a column added,
// dropped or moved by ALTER TABLE maps right from the next row on; one that
// does not is mapped by the ordinals read at start, which must be as many
// as the table map's columns.
func (in *Ingester) layout(t *replication.TableMapEvent, file string, pos uint32) (map[string]int, columnTypes, error) {
	if in.cfg.BrokenIgnoreSchema {
		return in.columns, in.startTypes, nil
	}
	if t == in.lastMap {
		return in.lastCols, in.lastTypes, nil
	}
	names := t.ColumnNameString()
	in.withNames = len(names) > 0
	cols := in.columns
	if !in.withNames && !sameOrder(in.orderAt, in.startOrder) {
		// The rows here were written before an ALTER TABLE that moved
		// the columns (while the ingester was stopped), and carry no names:
		// mapped by the order read at start they would land in the wrong
		// fields, silently when the column count stayed.
		return nil, columnTypes{}, fmt.Errorf("ingest: at %s:%d the rows of %s.%s were written with the columns in the order (%s), the table has them now in the order (%s), and the source writes no column names in its binary log (binlog_row_metadata is not FULL) to map them by: start from a new snapshot (remove the state file %s); set binlog_row_metadata=FULL on the source to follow such changes",
			file, pos, in.src.database, in.cfg.Table, strings.Join(in.orderAt, ", "), strings.Join(in.startOrder, ", "), in.cfg.StateFile)
	}
	if in.withNames {
		cols = make(map[string]int, len(names))
		for i, n := range names {
			cols[strings.ToLower(n)] = i
		}
		for _, c := range in.configuredColumns() {
			if _, ok := cols[strings.ToLower(c)]; !ok {
				return nil, columnTypes{}, fmt.Errorf("ingest: at %s:%d table %s.%s has no column %q any more (its columns: %s): start the ingester with the columns as they are now",
					file, pos, in.src.database, in.cfg.Table, c, strings.Join(names, ", "))
			}
		}
	} else if int(t.ColumnCount) != len(in.columns) {
		return nil, columnTypes{}, fmt.Errorf("ingest: at %s:%d table %s.%s has %d columns in the binary log, %d when the ingester started: its columns changed, and the source writes no column names to map them by (set binlog_row_metadata=FULL on the source, or start from a new snapshot: remove the state file)",
			file, pos, in.src.database, in.cfg.Table, t.ColumnCount, len(in.columns))
	}
	types, err := in.typesOf(t)
	if err != nil {
		return nil, columnTypes{}, fmt.Errorf("ingest: at %s:%d table %s.%s: %w", file, pos, in.src.database, in.cfg.Table, err)
	}
	in.lastMap, in.lastCols, in.lastTypes = t, cols, types
	if in.withNames {
		in.orderAt = names
	}
	return cols, types, nil
}

// configuredColumns are the source columns the ingester reads.
func (in *Ingester) configuredColumns() []string {
	return append([]string{in.cfg.SKUColumn, in.cfg.TitleColumn, in.cfg.BrandColumn}, in.cfg.Attributes...)
}

// tableChanged stops the ingester at a statement that changes the source
// table without row events, where going on would leave the catalog wrong:
// TRUNCATE, DROP TABLE, DROP DATABASE and CREATE OR REPLACE TABLE (its rows
// are gone, the catalog still has them), RENAME TABLE and ALTER TABLE …
// RENAME (another table takes its name, or it follows a name no longer
// there), an ALTER that truncates, drops, exchanges or converts a
// partition or discards or imports a tablespace (rows leave or arrive
// without row events), and any other ALTER when the binary log carries no
// column names (the columns may have moved under the ordinals read at
// start). Another ALTER with column names is followed (layout).
func (in *Ingester) tableChanged(e *replication.QueryEvent, file string, pos uint32) error {
	verb, names := ddlTables(string(e.Query))
	if verb == ddlNone || in.cfg.BrokenIgnoreSchema {
		return nil
	}
	touched := false
	for _, n := range names {
		if n.names(string(e.Schema), in.src.database, in.cfg.Table) {
			touched = true
		}
	}
	if !touched {
		return nil
	}
	table := in.src.database + "." + in.cfg.Table
	switch {
	case verb == ddlAlter && in.withNames:
		in.logf("%s of %s at %s:%d: rows from here on are mapped by the column names the binary log carries", verb, table, file, pos)
		in.lastMap = nil
		return nil
	case verb == ddlAlter:
		return fmt.Errorf("ingest: %s of %s at %s:%d may have moved its columns, and the source writes no column names in its binary log (binlog_row_metadata is not FULL) to map its rows by: set binlog_row_metadata=FULL on the source and start the ingester again (it resumes just before this statement), or start from a new snapshot (remove the state file)",
			verb, table, file, pos)
	default:
		return fmt.Errorf("ingest: %s at %s:%d changes %s without row events (%q): the catalog still holds what the table held; delete those records and start from a new snapshot (remove the state file)",
			verb, file, pos, table, strings.TrimSpace(string(e.Query)))
	}
}

// record maps one row image to a record, by the column name -> ordinal
// map cols.
func (in *Ingester) record(cols map[string]int, row []any) (catalog.Record, error) {
	get := func(name string) (string, error) {
		i, ok := cols[strings.ToLower(name)]
		if !ok || i >= len(row) {
			return "", fmt.Errorf("the row has %d columns, column %q is number %d", len(row), name, i+1)
		}
		return text(row[i]), nil
	}
	var r catalog.Record
	var err error
	if r.SKU, err = get(in.cfg.SKUColumn); err != nil {
		return r, err
	}
	if r.Title, err = get(in.cfg.TitleColumn); err != nil {
		return r, err
	}
	if r.Brand, err = get(in.cfg.BrandColumn); err != nil {
		return r, err
	}
	for _, a := range in.cfg.Attributes {
		v, err := get(a)
		if err != nil {
			return r, err
		}
		r.Attributes = append(r.Attributes, catalog.Attribute{Name: a, Value: v})
	}
	return r, nil
}

// text renders a column value as the record's string.
func text(v any) string {
	switch x := v.(type) {
	case nil:
		return ""
	case string:
		return x
	case []byte:
		return string(x)
	case int64:
		return strconv.FormatInt(x, 10)
	case uint64:
		return strconv.FormatUint(x, 10)
	}
	return fmt.Sprint(v)
}

// snapshot reads the table in one consistent-snapshot transaction and sets
// every record, SnapshotWorkers at a time. It returns the binlog position
// the snapshot stands at, which it gives to started before it sets the
// first record.
func (in *Ingester) snapshot(ctx context.Context, started func(Checkpoint) error) (Checkpoint, error) {
	conn, err := in.db.Conn(ctx)
	if err != nil {
		return Checkpoint{}, fmt.Errorf("ingest: snapshot: %w", err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, "START TRANSACTION WITH CONSISTENT SNAPSHOT"); err != nil {
		return Checkpoint{}, fmt.Errorf("ingest: snapshot: %w", err)
	}
	defer conn.ExecContext(context.Background(), "ROLLBACK")
	var cp Checkpoint
	for _, v := range []struct {
		name string
		dst  any
	}{{"binlog_snapshot_file", &cp.File}, {"binlog_snapshot_position", &cp.Pos}} {
		var name string
		err := conn.QueryRowContext(ctx, "SHOW STATUS LIKE '"+v.name+"'").Scan(&name, v.dst)
		if errors.Is(err, sql.ErrNoRows) {
			// MySQL has no consistent snapshot that says where it stands
			// in the binary log (it needs FLUSH TABLES WITH READ LOCK).
			return Checkpoint{}, fmt.Errorf("ingest: snapshot: the source has no %s status (MariaDB has; MySQL's snapshot is not supported yet): start from a MariaDB source", v.name)
		}
		if err != nil {
			return Checkpoint{}, fmt.Errorf("ingest: snapshot: reading %s (is the binary log on? log_bin, binlog_format=ROW): %w", v.name, err)
		}
	}
	if cp.File == "" || cp.Pos < 4 {
		return Checkpoint{}, fmt.Errorf("ingest: snapshot: the source's binary log is off (binlog_snapshot_file is empty): set log_bin and binlog_format=ROW")
	}
	if err := started(cp); err != nil {
		return Checkpoint{}, err
	}
	rows, err := conn.QueryContext(ctx, in.snapshotQuery())
	if err != nil {
		return Checkpoint{}, fmt.Errorf("ingest: snapshot: %w", err)
	}
	defer rows.Close()
	work := make(chan catalog.Record, 4*in.cfg.SnapshotWorkers)
	errs := make(chan error, in.cfg.SnapshotWorkers)
	var wg sync.WaitGroup
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	for range in.cfg.SnapshotWorkers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for r := range work {
				if err := in.set(wctx, r, "", ""); err != nil {
					errs <- err
					cancel()
					return
				}
			}
		}()
	}
	// The result set's column names, mapped to its columns.
	names, err := rows.Columns()
	if err != nil {
		return Checkpoint{}, fmt.Errorf("ingest: snapshot: %w", err)
	}
	colTypes, err := rows.ColumnTypes()
	if err != nil {
		return Checkpoint{}, fmt.Errorf("ingest: snapshot: %w", err)
	}
	bits := map[int]bool{} // BIT columns: the server sends their bytes
	for i, ct := range colTypes {
		if ct.DatabaseTypeName() == "BIT" {
			bits[i] = true
		}
	}
	cols := make(map[string]int, len(names))
	for i, name := range names {
		cols[strings.ToLower(name)] = i
	}
	n := len(names)
	vals := make([]sql.RawBytes, n)
	ptrs := make([]any, n)
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	var readErr error
	for rows.Next() && wctx.Err() == nil {
		if readErr = rows.Scan(ptrs...); readErr != nil {
			break
		}
		row := make([]any, n)
		for i, v := range vals {
			switch {
			case v == nil:
			case bits[i]:
				row[i] = bitText(v)
			default:
				row[i] = string(v)
			}
		}
		r, err := in.record(cols, row)
		if err != nil {
			readErr = err
			break
		}
		in.Metrics.Snapshot.Add(1)
		// The workers stop at the end of wctx (the caller's, or the first
		// failure): a send that waited for them would wait for ever.
		select {
		case work <- r:
		case <-wctx.Done():
		}
	}
	close(work)
	wg.Wait()
	if readErr == nil {
		readErr = rows.Err()
	}
	select {
	case err := <-errs:
		return Checkpoint{}, err
	default:
	}
	if readErr != nil {
		return Checkpoint{}, fmt.Errorf("ingest: snapshot: %w", readErr)
	}
	return cp, ctx.Err()
}

// snapshotQuery selects the columns the ingester reads, a FLOAT or DOUBLE
// as CAST(... AS CHAR): the driver parses the text the server prints for
// one and the snapshot would read it printed back the driver's way
// ("1.67772e+07" for the server's "16777200", "2.5" for a DOUBLE(5,2)'s
// "2.50"), which is neither what the server shows nor what the binary
// log's values are rendered as (values.go).
func (in *Ingester) snapshotQuery() string {
	quote := func(name string) string { return "`" + strings.ReplaceAll(name, "`", "``") + "`" }
	var list []string
	seen := map[string]bool{}
	for _, c := range in.configuredColumns() {
		lower := strings.ToLower(c)
		if seen[lower] {
			continue
		}
		seen[lower] = true
		if in.byName[lower].float {
			list = append(list, "CAST("+quote(c)+" AS CHAR) AS "+quote(c))
		} else {
			list = append(list, quote(c))
		}
	}
	return "SELECT " + strings.Join(list, ", ") + " FROM " + quote(in.cfg.Table)
}

type opKind uint8

const (
	opSet opKind = iota
	opDel
)

// set sets r with key. A row allot's catalog cannot hold (an empty or
// overlong title, a control character, a NULL brand) is counted, logged
// and skipped, and the record its SKU had is deleted (with delKey): the
// row replaced what that record says, and a record left in place would go
// on showing a title the table no longer has.
func (in *Ingester) set(ctx context.Context, r catalog.Record, key, delKey string) error {
	refused, err := in.send(ctx, opSet, r, key)
	if err != nil || refused == "" {
		return err
	}
	in.Metrics.Rejected.Add(1)
	if catalog.CheckText(r.SKU, catalog.SKUBytesMax) != "" {
		in.logf("skipping sku %q: allot cannot hold the row: %s", r.SKU, refused)
		return nil
	}
	in.logf("skipping sku %q: allot cannot hold the row: %s; deleting the record it had", r.SKU, refused)
	_, err = in.send(ctx, opDel, catalog.Record{SKU: r.SKU}, delKey)
	return err
}

// send sends one op until allot acknowledges it, retrying errors with the
// same key. An op outside the catalog's contract (catalog.Record.Check, the
// rule allot applies) is not sent: refused says what is wrong with it. An
// -ERR reply to an op within the contract is no verdict on the row ("max
// number of clients reached") and is retried as any other error.
func (in *Ingester) send(ctx context.Context, kind opKind, r catalog.Record, key string) (refused string, err error) {
	if kind == opSet {
		c := r.Clone()
		c.Normalize()
		refused = c.Check()
	} else if d := catalog.CheckText(r.SKU, catalog.SKUBytesMax); d != "" {
		refused = "sku " + d // no record can have it: nothing to delete
	}
	if refused != "" {
		return refused, nil
	}
	pause := 10 * time.Millisecond
	for {
		var err error
		if kind == opSet {
			err = in.sink.CatalogSet(ctx, r, key)
		} else {
			_, err = in.sink.CatalogDel(ctx, r.SKU, key)
		}
		if err == nil {
			if kind == opSet {
				in.Metrics.Sets.Add(1)
			} else {
				in.Metrics.Dels.Add(1)
			}
			return "", nil
		}
		var se *client.ServerError
		if errors.As(err, &se) && strings.HasPrefix(se.Msg, "MISMATCH") {
			return "", fmt.Errorf("%w: key %s: %s", ErrMismatch, key, se.Msg)
		}
		if ctx.Err() != nil {
			return "", ctx.Err()
		}
		in.Metrics.Retries.Add(1)
		in.logf("sending sku %q (key %q) again after: %v", r.SKU, key, err)
		select {
		case <-ctx.Done():
			return "", ctx.Err()
		case <-time.After(pause):
		}
		pause = min(2*pause, retryPauseMax)
	}
}

// eventKey is the idempotency key of row i of the rows event ending at pos
// in file; suffix tells apart the two ops of an update that moves a SKU.
// A key longer than the identifier rule allows (a very long binlog file
// name) is replaced by a hash of it.
func eventKey(file string, pos uint32, i int, suffix string) string {
	k := "mysql:" + file + ":" + strconv.FormatUint(uint64(pos), 10) + ":" + strconv.Itoa(i) + suffix
	if len(k) <= 64 {
		return k
	}
	h := fnv.New64a()
	h.Write([]byte(k))
	return "mysql:h:" + strconv.FormatUint(h.Sum64(), 16)
}

var quietLibrary sync.Once

// follow streams the binlog from cp and applies the table's row events.
func (in *Ingester) follow(ctx context.Context, cp Checkpoint) error {
	flavor := mysql.MySQLFlavor
	var version string
	if err := in.db.QueryRowContext(ctx, "SELECT VERSION()").Scan(&version); err == nil && strings.Contains(strings.ToLower(version), "mariadb") {
		flavor = mysql.MariaDBFlavor
	}
	scfg := replication.BinlogSyncerConfig{
		ServerID:        in.cfg.ServerID,
		Flavor:          flavor,
		Host:            in.src.host,
		Port:            in.src.port,
		User:            in.src.user,
		Password:        in.src.password,
		HeartbeatPeriod: time.Second,
		// TIMESTAMPs in the zone the snapshot's session prints them in
		// (go-mysql's default is this process's local zone).
		TimestampStringLocation: in.tz,
		ReadTimeout:             10 * time.Second,
		TLSConfig:               in.streamTLS,
		Logger:                  log.NewDefault(&log.NullHandler{}),
		// go-mysql would reconnect by itself, silently, at the last event
		// it read, which may be inside a transaction: the ingester
		// reconnects itself (reconnect), from its last committed position.
		DisableRetrySync: true,
	}
	// The binlog streamer also logs a failure to the library's global
	// logger ("[error] binlogstreamer.go:78 close sync with err"), beside
	// returning it to GetEvent, where the ingester reports it itself.
	quietLibrary.Do(func() { log.SetDefaultLogger(log.NewDefault(&log.NullHandler{})) })
	// Every start of the stream, the first and each after a lost
	// connection, reads the identity of the server its own connection
	// reaches before asking it for the binary log: dialled again, the DSN
	// may reach another server than the one the checkpoint was taken on (a
	// failover behind one address, a proxy pointed elsewhere), where the
	// position names other events. (Reading it on database/sql's pool
	// instead would ask a connection to the server that was, or another
	// one than the stream's.) refused is the error of such a start, which
	// no retry mends.
	var startAt Checkpoint
	var refused error
	scfg.Option = func(c *binlogclient.Conn) error {
		found, err := streamIdentity(c)
		if err != nil {
			return err
		}
		if found != in.identity {
			refused = in.otherSource(startAt, in.identity, found)
			return refused
		}
		return nil
	}
	var syncer *replication.BinlogSyncer
	// closeSyncer closes the current syncer without the library's KILL:
	// its Close dials the DSN anew and sends KILL <the stream's
	// connection id> there, which after a lost connection may reach a
	// restarted server, or another one behind the address, where that id
	// is another client's thread (and ends it, if the DSN's user may end
	// others' threads). Each syncer dials through its own dialer, which
	// refuses once the syncer is being closed, so the KILL is never sent.
	// Nothing needs it: the stream's socket is closed all the same, the
	// server ends a dump thread whose client is gone at its next write (a
	// heartbeat a second), and a new registration with the same server id
	// ends an old one at once.
	var closeSyncer func()
	start := func(at Checkpoint) (*replication.BinlogStreamer, error) {
		if syncer != nil {
			closeSyncer()
		}
		startAt, refused = at, nil
		var closing atomic.Bool
		var dialer net.Dialer
		cfg := scfg
		cfg.Dialer = func(ctx context.Context, network, addr string) (net.Conn, error) {
			if closing.Load() {
				return nil, errors.New("ingest: the binlog stream is closing: no new connection")
			}
			return dialer.DialContext(ctx, network, addr)
		}
		s := replication.NewBinlogSyncer(cfg)
		syncer, closeSyncer = s, func() {
			closing.Store(true)
			s.Close()
		}
		streamer, err := syncer.StartSync(mysql.Position{Name: at.File, Pos: at.Pos})
		if refused != nil {
			return nil, refused
		}
		return streamer, err
	}
	defer func() { closeSyncer() }()
	in.logf("reading the binary log of %s:%d as replica server id %d", in.src.host, in.src.port, in.cfg.ServerID)
	streamer, err := start(cp)
	started := time.Now()
	var pause time.Duration
	if err != nil && !errors.Is(err, ErrOtherSource) && lostConnection(err) {
		// Lost as the stream starts: retried as one lost later is.
		if streamer, err = in.reconnect(ctx, start, cp, err, &started, &pause); err != nil {
			return err
		}
	}
	if errors.Is(err, ErrOtherSource) {
		return err
	}
	if err != nil {
		return fmt.Errorf("ingest: starting the binlog stream at %s:%d: %w", cp.File, cp.Pos, err)
	}
	in.Metrics.Connected.Store(true)
	defer in.Metrics.Connected.Store(false)
	file := cp.File
	saved := cp
	lastSave := time.Now()
	pending := cp // the last transaction boundary whose rows are acknowledged
	in.Metrics.position(cp.File, cp.Pos)
	save := func(force bool) error {
		if pending.samePosition(saved) || (!force && time.Since(lastSave) < in.cfg.CheckpointEvery) {
			return nil
		}
		if err := in.writeCheckpoint(pending); err != nil {
			return err
		}
		saved, lastSave = pending, time.Now()
		in.Metrics.Checkpoint.Add(1)
		return nil
	}
	defer func() { save(true) }()
	var tx transaction // the event group being read
	// created is when the source created file (0: its format description
	// event is still to come); expect, when the file a stream starts in
	// was created, as the checkpoint it starts from says (0: unknown).
	created, expect := uint32(0), cp.FileCreated
	for {
		gctx, cancel := context.WithTimeout(ctx, in.cfg.CheckpointEvery)
		ev, err := streamer.GetEvent(gctx)
		cancel()
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			if errors.Is(err, context.DeadlineExceeded) {
				if err := save(true); err != nil {
					return err
				}
				continue
			}
			var me *mysql.MyError
			if errors.As(err, &me) && (me.Code == erSlaveSameID || me.Code == mysql.ER_MASTER_FATAL_ERROR_READING_BINLOG && strings.Contains(me.Message, "same server_uuid/server_id")) {
				// MariaDB says 4052, MySQL 1236 with this text, to the
				// replica whose id another replica registered with.
				return fmt.Errorf("ingest: the source ended the binary log stream: another replica registered with this ingester's server id %d (--server-id): %w; give every ingester and replica of the source an id of its own (without --server-id one is derived from the source, database, table and state file, so only two ingesters with all four the same collide)",
					in.cfg.ServerID, err)
			}
			if errors.As(err, &me) && me.Code == mysql.ER_MASTER_FATAL_ERROR_READING_BINLOG {
				// The binlog at the checkpoint is gone (purged after
				// binlog_expire_logs_seconds, or RESET MASTER): what changed
				// since cannot be read any more.
				return fmt.Errorf("ingest: the source cannot send its binlog from the checkpoint %s:%d (%w): if that binlog was purged (binlog_expire_logs_seconds) or reset, the changes since are lost to the ingester; start from a new snapshot (remove the state file %s)",
					pending.File, pending.Pos, err, in.cfg.StateFile)
			}
			if !lostConnection(err) {
				return fmt.Errorf("ingest: reading the binlog after %s:%d: %w", pending.File, pending.Pos, err)
			}
			if err := save(true); err != nil { // the wait for the source may be long
				return err
			}
			if streamer, err = in.reconnect(ctx, start, pending, err, &started, &pause); err != nil {
				return err
			}
			file, created, expect = pending.File, 0, pending.FileCreated
			tx = transaction{} // read again from its start
			continue
		}
		// boundary: the event ends an event group (a transaction, or a
		// statement of its own), and its end is a checkpoint.
		boundary := false
		if ev.Header.EventType == replication.XA_PREPARE_LOG_EVENT {
			// An XA transaction's rows are sent when it is prepared: its
			// XA COMMIT or XA ROLLBACK comes later, as an event group of its
			// own.
			if err := in.release(ctx, &tx); err != nil {
				return err
			}
			boundary = true
		}
		switch e := ev.Event.(type) {
		case *replication.FormatDescriptionEvent:
			if expect != 0 && ev.Header.Timestamp != expect {
				return fmt.Errorf("ingest: the source's binlog file %s was created at %s, the one the checkpoint %s names at %s: the server was rebuilt or its binary log reset (RESET MASTER), or another server answers at its address, and the position names other events there; start from a new snapshot (remove the state file %s; records of rows deleted since stay until you delete them)",
					file, time.Unix(int64(ev.Header.Timestamp), 0).UTC().Format(time.RFC3339), in.cfg.StateFile, time.Unix(int64(expect), 0).UTC().Format(time.RFC3339), in.cfg.StateFile)
			}
			created, expect = ev.Header.Timestamp, 0
			if pending.File == file && pending.FileCreated == 0 {
				// A checkpoint that did not know when its file was
				// created (a snapshot's, or the start of a file the
				// source rotated to) learns it here, from the server
				// whose identity the stream's start checked, rather than
				// at the next transaction boundary: on a quiet source that
				// may be long, and the check above would meanwhile take
				// any file of the name.
				pending.FileCreated = created
			}
		case *replication.RotateEvent:
			if name := string(e.NextLogName); name != file {
				file, created, expect = name, 0, 0
			}
			if !tx.open && e.Position >= 4 {
				// A new binlog file, between two transactions: its start
				// is the checkpoint, so that a source with no commits
				// leaves none in a file it may purge (which would force a
				// new snapshot). (At a stream's start, the source's rotate
				// to the file it starts in comes before the file's format
				// description event, which is expected as before.)
				pending = Checkpoint{File: file, Pos: uint32(e.Position), FileCreated: max(created, expect)}
				in.Metrics.position(pending.File, pending.Pos)
				if err := save(true); err != nil {
					return err
				}
			}
		case *replication.MariadbGTIDEvent:
			if err := in.groupStarts(&tx, file, ev.Header.LogPos); err != nil {
				return err
			}
			tx.open = !e.IsStandalone() // a transaction, not DDL: XID, COMMIT or ROLLBACK ends it
		case *replication.GTIDEvent: // MySQL: BEGIN follows for a transaction
			if err := in.groupStarts(&tx, file, ev.Header.LogPos); err != nil {
				return err
			}
		case *replication.RowsEvent:
			if !in.follows(e.Table) {
				continue
			}
			if err := in.hold(ctx, &tx, ev.Header, e, file); err != nil {
				return err
			}
		case *replication.XIDEvent:
			if err := in.release(ctx, &tx); err != nil {
				return err
			}
			boundary = true
		case *replication.QueryEvent:
			if boundary, err = in.query(ctx, &tx, e, file, ev.Header.LogPos); err != nil {
				return err
			}
		case *replication.ExecuteLoadQueryEvent:
			if err := in.statementChange(in.loadQuery(ev), file, ev.Header.LogPos); err != nil {
				return err
			}
		case *replication.TransactionPayloadEvent:
			return fmt.Errorf("ingest: at %s:%d the source wrote a compressed transaction (binlog_transaction_compression=ON), which the ingester does not read: turn it off on the source, then start from a new snapshot (remove the state file %s)",
				file, ev.Header.LogPos, in.cfg.StateFile)
		}
		if boundary {
			tx = transaction{}
			pending = Checkpoint{File: file, Pos: ev.Header.LogPos, FileCreated: created}
			in.Metrics.position(file, ev.Header.LogPos)
		}
		if err := save(false); err != nil {
			return err
		}
	}
}

// erSlaveSameID is MariaDB's ER_SLAVE_SAME_ID: another replica registered
// with the server id of the one it is sent to.
const erSlaveSameID = 4052

// groupStarts checks, at the start of an event group, that the group
// before it ended in a way the ingester knows (XID, COMMIT, ROLLBACK, XA
// PREPARE): rows of the table it still holds, or sent, would otherwise be
// kept or dropped on a guess.
func (in *Ingester) groupStarts(tx *transaction, file string, pos uint32) error {
	if len(tx.held) > 0 || tx.sent > 0 {
		return fmt.Errorf("ingest: at %s:%d a transaction starts, and the one before it, with rows of %s.%s, ended in no commit or rollback the ingester knows: it cannot tell whether to apply them", file, pos, in.schemaName, in.tableName)
	}
	*tx = transaction{}
	return nil
}

// query handles a query event ending at file:pos: a statement of a
// transaction's course (transactionStatement), a change written as a
// statement (statementChange) and one that changes the table without row
// events (tableChanged). boundary: it ends an event group.
func (in *Ingester) query(ctx context.Context, tx *transaction, e *replication.QueryEvent, file string, pos uint32) (boundary bool, err error) {
	switch verb, name := transactionStatement(string(e.Query)); verb {
	case txBegin:
		if err := in.groupStarts(tx, file, pos); err != nil {
			return false, err
		}
		tx.open = true
		return false, nil
	case txCommit: // after a non-transactional table's changes
		return true, in.release(ctx, tx)
	case txRollback:
		if err := in.rollBack(tx, 0, file, pos); err != nil {
			return false, err
		}
		return true, in.release(ctx, tx) // what stands: a non-transactional table's rows
	case txSavepoint:
		tx.savepoint(name)
		return false, nil
	case txRollbackTo:
		return false, in.rollBackTo(tx, name, file, pos)
	}
	if err := in.statementChange(e, file, pos); err != nil {
		return false, err
	}
	if err := in.tableChanged(e, file, pos); err != nil {
		return false, err
	}
	return !tx.open, nil // DDL is an event group of its own
}

// statementChange stops the ingester at a change written as a statement
// (the session that made it had binlog_format STATEMENT or MIXED) in the
// followed table's database or naming it: the ingester applies rows, not
// statements, and one in the database may change the table through a
// trigger or a view. The checkpoint stays before it, so that a restart
// stops there again rather than go on without it.
func (in *Ingester) statementChange(e *replication.QueryEvent, file string, pos uint32) error {
	q := string(e.Query)
	if !changesRows(q) || !strings.EqualFold(string(e.Schema), in.schemaName) && !namesIdentifier(q, in.schemaName) {
		return nil
	}
	if len(q) > 200 {
		q = q[:200] + "…"
	}
	return fmt.Errorf("ingest: at %s:%d a change in database %s was written to the binary log as a statement (%q), not as rows (its session had binlog_format STATEMENT or MIXED): the ingester cannot apply it; set binlog_format=ROW on the source, globally and in no session, then start from a new snapshot (remove the state file %s; records of rows the statement deleted stay until you delete them)",
		file, pos, in.schemaName, q, in.cfg.StateFile)
}

// loadQuery reads the database and the statement of an execute-load event
// (LOAD DATA written as a statement), which go-mysql leaves undecoded:
// after the event header come 26 bytes, the database name's length at 8
// and the status variables' at 11, then the status variables, the
// database name, a NUL and the statement. One it cannot read is taken for
// a LOAD DATA in the followed table's database.
func (in *Ingester) loadQuery(ev *replication.BinlogEvent) *replication.QueryEvent {
	q := &replication.QueryEvent{Schema: []byte(in.schemaName), Query: []byte("LOAD DATA")}
	if len(ev.RawData) < replication.EventHeaderSize+26 {
		return q
	}
	body := ev.RawData[replication.EventHeaderSize:]
	schema := int(body[8])
	at := 26 + int(binary.LittleEndian.Uint16(body[11:13]))
	if at+schema+1 > len(body) {
		return q
	}
	return &replication.QueryEvent{Schema: body[at : at+schema], Query: body[at+schema+1:]}
}

// Pauses between two attempts to reconnect to the source: doubling from
// reconnectPauseMin up to reconnectPauseMax, the rate failed attempts are
// logged at.
const (
	reconnectPauseMin = 100 * time.Millisecond
	reconnectPauseMax = 5 * time.Second
)

// lostConnection tells whether err, from the binlog stream, is the
// connection to the source failing (closed, reset, timed out: go-mysql's
// ErrBadConn), or the source's server ending the stream as it stops or
// kills the connection; not an event the ingester cannot parse, nor
// another error the source sends.
func lostConnection(err error) bool {
	var me *mysql.MyError
	if errors.As(err, &me) {
		switch me.Code {
		case mysql.ER_SERVER_SHUTDOWN, mysql.ER_QUERY_INTERRUPTED, 1927: // 1927: MariaDB's ER_CONNECTION_KILLED
			return true
		}
		return false
	}
	var ne net.Error
	return errors.Is(err, mysql.ErrBadConn) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.As(err, &ne)
}

// reconnect starts the binlog stream again after the connection to the
// source was lost (cause), at the last transaction boundary whose rows
// allot acknowledged: never inside a transaction, whose later rows events
// would depend on table maps read on the lost connection. Rows it had sent
// since are sent again with the keys they had, which allot answers without
// applying them. It tries until the source takes the stream or ctx ends
// (README: retried forever), or another server than the checkpoint's
// answers the DSN (ErrOtherSource, from start), pausing between attempts
// as *pause says (reset when the last stream, started at *started, ran
// reconnectPauseMax or longer), and logs and counts each failed attempt.
func (in *Ingester) reconnect(ctx context.Context, start func(Checkpoint) (*replication.BinlogStreamer, error), at Checkpoint, cause error, started *time.Time, pause *time.Duration) (*replication.BinlogStreamer, error) {
	in.Metrics.Connected.Store(false)
	if time.Since(*started) >= reconnectPauseMax {
		*pause = 0
	}
	in.logf("the binlog stream from the source broke (%v): reconnecting, to read it again from the last committed transaction, %s:%d", cause, at.File, at.Pos)
	for attempt := 1; ; attempt++ {
		if *pause > 0 {
			select {
			case <-ctx.Done():
				return nil, ctx.Err()
			case <-time.After(*pause):
			}
		}
		*pause = min(max(2**pause, reconnectPauseMin), reconnectPauseMax)
		streamer, err := start(at)
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if errors.Is(err, ErrOtherSource) {
			return nil, err
		}
		if err == nil {
			in.Metrics.Reconnects.Add(1)
			in.Metrics.Connected.Store(true)
			*started = time.Now()
			if attempt > 1 {
				in.logf("reconnected to the source after %d attempts: reading the binlog from %s:%d", attempt, at.File, at.Pos)
			}
			return streamer, nil
		}
		in.Metrics.ReconnectFailures.Add(1)
		in.logf("reconnecting to the source failed (attempt %d): %v; trying again in %v, until it is back", attempt, err, *pause)
	}
}

// applyRows sends one rows event's ops, in row order.
func (in *Ingester) applyRows(ctx context.Context, h *replication.EventHeader, e *replication.RowsEvent, file string) error {
	cols, types, err := in.layout(e.Table, file, h.LogPos)
	if err != nil {
		return err
	}
	ev := rowsEvent{h: h, e: e, file: file, cols: cols, types: types}
	switch h.EventType {
	case replication.WRITE_ROWS_EVENTv0, replication.WRITE_ROWS_EVENTv1, replication.WRITE_ROWS_EVENTv2:
		for i := range e.Rows {
			if err := in.apply(ctx, &ev, opSet, i, i, ""); err != nil {
				return err
			}
		}
	case replication.DELETE_ROWS_EVENTv0, replication.DELETE_ROWS_EVENTv1, replication.DELETE_ROWS_EVENTv2:
		for i := range e.Rows {
			if err := in.apply(ctx, &ev, opDel, i, i, ""); err != nil {
				return err
			}
		}
	case replication.UPDATE_ROWS_EVENTv0, replication.UPDATE_ROWS_EVENTv1, replication.UPDATE_ROWS_EVENTv2:
		// Rows alternate: the row before, the row after.
		for i := 0; i+1 < len(e.Rows); i += 2 {
			sku := cols[strings.ToLower(in.cfg.SKUColumn)]
			if err := ev.whole(i, in.cfg.SKUColumn); err != nil {
				return err
			}
			if err := ev.whole(i+1, in.configuredColumns()...); err != nil {
				return err
			}
			before, after := e.Rows[i], e.Rows[i+1]
			if sku < len(before) && sku < len(after) && text(before[sku]) != text(after[sku]) {
				if err := in.apply(ctx, &ev, opDel, i, i/2, "d"); err != nil {
					return err
				}
			}
			if err := in.apply(ctx, &ev, opSet, i+1, i/2, ""); err != nil {
				return err
			}
		}
	default: // compressed (MariaDB's log_bin_compress) or partial JSON (MySQL's binlog_row_value_options) rows
		return fmt.Errorf("ingest: the event ending at %s:%d is a %s, which the ingester does not read: turn off log_bin_compress or binlog_row_value_options on the source, then start from a new snapshot (remove the state file %s)",
			file, h.LogPos, h.EventType, in.cfg.StateFile)
	}
	return nil
}

// rowsEvent is a rows event of the source table with the layout its rows
// are read by.
type rowsEvent struct {
	h     *replication.EventHeader
	e     *replication.RowsEvent
	file  string
	cols  map[string]int
	types columnTypes
}

// whole checks that row image i carries the columns named. A source that
// writes partial row images (binlog_row_image=MINIMAL or NOBLOB, which any
// session may set for itself) leaves out the columns a statement did not
// change, and the ingester has no other copy of them: going on would set
// records with empty fields or delete them.
func (ev *rowsEvent) whole(i int, names ...string) error {
	if i >= len(ev.e.SkippedColumns) || len(ev.e.SkippedColumns[i]) == 0 {
		return nil
	}
	skipped := map[int]bool{}
	for _, c := range ev.e.SkippedColumns[i] {
		skipped[c] = true
	}
	for _, n := range names {
		if c, ok := ev.cols[strings.ToLower(n)]; ok && skipped[c] {
			return fmt.Errorf("ingest: the event ending at %s:%d carries a partial row without column %q (binlog_row_image is not FULL for the session that wrote it): the ingester needs whole rows; set binlog_row_image=FULL on the source (globally, and in no session), then start from a new snapshot (remove the state file)",
				ev.file, ev.h.LogPos, n)
		}
	}
	return nil
}

// apply sends the op of row image i of ev, keyed as row keyRow of the
// event with suffix.
func (in *Ingester) apply(ctx context.Context, ev *rowsEvent, kind opKind, i, keyRow int, suffix string) error {
	needs := in.configuredColumns()
	if kind == opDel {
		needs = needs[:1]
	}
	if err := ev.whole(i, needs...); err != nil {
		return err
	}
	// Only the mapped columns are read: another column may be in a
	// character set the ingester does not convert, and is no part of the
	// record.
	row := make([]any, len(ev.e.Rows[i]))
	for _, name := range in.configuredColumns() {
		c, ok := ev.cols[strings.ToLower(name)]
		if !ok || c >= len(row) {
			continue // record says what is missing
		}
		var err error
		if row[c], err = ev.types.text(c, ev.e.Rows[i][c]); err != nil {
			return fmt.Errorf("ingest: a row of the event ending at %s:%d: %w", ev.file, ev.h.LogPos, err)
		}
	}
	r, err := in.record(ev.cols, row)
	if err != nil {
		return fmt.Errorf("ingest: a row of the event ending at %d: %w", ev.h.LogPos, err)
	}
	key := eventKey(ev.file, ev.h.LogPos, keyRow, suffix)
	if kind == opSet {
		err = in.set(ctx, r, key, eventKey(ev.file, ev.h.LogPos, keyRow, suffix+"r"))
	} else {
		_, err = in.send(ctx, kind, r, key)
	}
	if err != nil {
		return err
	}
	in.Metrics.lag(ev.h.Timestamp, time.Now())
	return nil
}
