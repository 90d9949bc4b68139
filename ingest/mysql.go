package ingest

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"hash/fnv"
	"strconv"
	"strings"
	"sync"
	"time"

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

	db      *sql.DB
	columns map[string]int // source column name -> ordinal (0-based), read at start

	// The layout of the last table map of the source table: column name ->
	// ordinal from the names the binlog carries (binlog_row_metadata=FULL),
	// else columns, checked against the map's column count.
	lastMap   *replication.TableMapEvent
	lastCols  map[string]int
	withNames bool // the source's table maps carry column names
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
	return &Ingester{cfg: cfg, src: src, sink: sink, Metrics: &Metrics{}, logf: logf}, nil
}

// Run takes the snapshot if there is no checkpoint, then follows the
// binlog until ctx ends (it then returns ctx's error) or a failure that
// retrying cannot mend.
func (in *Ingester) Run(ctx context.Context) error {
	db, err := sql.Open("mysql", in.cfg.DSN)
	if err != nil {
		return fmt.Errorf("ingest: %w", err)
	}
	defer db.Close()
	in.db = db
	if err := in.readColumns(ctx); err != nil {
		return err
	}
	var metadata string
	if err := db.QueryRowContext(ctx, "SELECT @@binlog_row_metadata").Scan(&metadata); err == nil && strings.EqualFold(metadata, "FULL") {
		in.withNames = true
	} else {
		in.logf("the source writes no column names in its binary log (binlog_row_metadata is %q, not FULL): rows are mapped by the column order read at start, and an ALTER TABLE of %s stops the ingester; set binlog_row_metadata=FULL to follow column changes", metadata, in.cfg.Table)
	}
	cp, ok, err := readCheckpoint(in.cfg.StateFile)
	if err != nil {
		return err
	}
	if !ok {
		if cp, err = in.snapshot(ctx); err != nil {
			return err
		}
		if err := writeCheckpoint(in.cfg.StateFile, cp); err != nil {
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
	rows, err := in.db.QueryContext(ctx, `SELECT COLUMN_NAME, ORDINAL_POSITION FROM information_schema.COLUMNS
		WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ? ORDER BY ORDINAL_POSITION`, in.src.database, in.cfg.Table)
	if err != nil {
		return fmt.Errorf("ingest: reading the columns of %s.%s: %w", in.src.database, in.cfg.Table, err)
	}
	defer rows.Close()
	in.columns = map[string]int{}
	for rows.Next() {
		var name string
		var pos int
		if err := rows.Scan(&name, &pos); err != nil {
			return fmt.Errorf("ingest: reading the columns: %w", err)
		}
		in.columns[strings.ToLower(name)] = pos - 1
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

// layout returns the column name -> ordinal map of rows that came with
// table map t. A source that writes column names in its table maps
// (binlog_row_metadata=FULL) is mapped by them, so that a column added,
// dropped or moved by ALTER TABLE maps right from the next row on; one that
// does not is mapped by the ordinals read at start, which must be as many
// as the table map's columns.
func (in *Ingester) layout(t *replication.TableMapEvent, file string, pos uint32) (map[string]int, error) {
	if in.cfg.BrokenIgnoreSchema {
		return in.columns, nil
	}
	if t == in.lastMap {
		return in.lastCols, nil
	}
	names := t.ColumnNameString()
	in.withNames = len(names) > 0
	cols := in.columns
	if in.withNames {
		cols = make(map[string]int, len(names))
		for i, n := range names {
			cols[strings.ToLower(n)] = i
		}
		for _, c := range in.configuredColumns() {
			if _, ok := cols[strings.ToLower(c)]; !ok {
				return nil, fmt.Errorf("ingest: at %s:%d table %s.%s has no column %q any more (its columns: %s): start the ingester with the columns as they are now",
					file, pos, in.src.database, in.cfg.Table, c, strings.Join(names, ", "))
			}
		}
	} else if int(t.ColumnCount) != len(in.columns) {
		return nil, fmt.Errorf("ingest: at %s:%d table %s.%s has %d columns in the binary log, %d when the ingester started: its columns changed, and the source writes no column names to map them by (set binlog_row_metadata=FULL on the source, or start from a new snapshot: remove the state file)",
			file, pos, in.src.database, in.cfg.Table, t.ColumnCount, len(in.columns))
	}
	in.lastMap, in.lastCols = t, cols
	return cols, nil
}

// configuredColumns are the source columns the ingester reads.
func (in *Ingester) configuredColumns() []string {
	return append([]string{in.cfg.SKUColumn, in.cfg.TitleColumn, in.cfg.BrandColumn}, in.cfg.Attributes...)
}

// tableChanged stops the ingester at a statement that changes the source
// table without row events, where going on would leave the catalog wrong:
// TRUNCATE and DROP (its rows are gone, the catalog still has them),
// RENAME (another table takes its name, or it follows a name no longer
// there), and ALTER when the binary log carries no column names (the
// columns may have moved under the ordinals read at start). An ALTER with
// column names is followed (layout).
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
// the snapshot stands at.
func (in *Ingester) snapshot(ctx context.Context) (Checkpoint, error) {
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
		if err := conn.QueryRowContext(ctx, "SHOW STATUS LIKE '"+v.name+"'").Scan(&name, v.dst); err != nil {
			return Checkpoint{}, fmt.Errorf("ingest: snapshot: reading %s (is the binary log on? log_bin, binlog_format=ROW): %w", v.name, err)
		}
	}
	if cp.File == "" || cp.Pos < 4 {
		return Checkpoint{}, fmt.Errorf("ingest: snapshot: the source's binary log is off (binlog_snapshot_file is empty): set log_bin and binlog_format=ROW")
	}
	rows, err := conn.QueryContext(ctx, "SELECT * FROM `"+strings.ReplaceAll(in.cfg.Table, "`", "``")+"`")
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
				if err := in.send(wctx, opSet, r, ""); err != nil {
					errs <- err
					cancel()
					return
				}
			}
		}()
	}
	// The result set's own column names: the table may have changed since
	// readColumns.
	names, err := rows.Columns()
	if err != nil {
		return Checkpoint{}, fmt.Errorf("ingest: snapshot: %w", err)
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
			if v != nil {
				row[i] = string(v)
			}
		}
		r, err := in.record(cols, row)
		if err != nil {
			readErr = err
			break
		}
		in.Metrics.Snapshot.Add(1)
		work <- r
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

type opKind uint8

const (
	opSet opKind = iota
	opDel
)

// send sends one op until allot acknowledges it, retrying errors with the
// same key. An op allot refuses as invalid is counted and skipped.
func (in *Ingester) send(ctx context.Context, kind opKind, r catalog.Record, key string) error {
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
			return nil
		}
		var se *client.ServerError
		if errors.As(err, &se) {
			switch {
			case strings.HasPrefix(se.Msg, "ERR "):
				in.Metrics.Rejected.Add(1)
				in.logf("skipping sku %q: allot refused it: %s", r.SKU, se.Msg)
				return nil
			case strings.HasPrefix(se.Msg, "MISMATCH"):
				return fmt.Errorf("%w: key %s: %s", ErrMismatch, key, se.Msg)
			}
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		in.Metrics.Retries.Add(1)
		in.logf("sending sku %q (key %q) again after: %v", r.SKU, key, err)
		select {
		case <-ctx.Done():
			return ctx.Err()
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
	syncer := replication.NewBinlogSyncer(replication.BinlogSyncerConfig{
		ServerID:        in.cfg.ServerID,
		Flavor:          flavor,
		Host:            in.src.host,
		Port:            in.src.port,
		User:            in.src.user,
		Password:        in.src.password,
		HeartbeatPeriod: time.Second,
		ReadTimeout:     10 * time.Second,
		Logger:          log.NewDefault(&log.NullHandler{}),
	})
	defer syncer.Close()
	// The binlog streamer also logs a failure to the library's global
	// logger ("[error] binlogstreamer.go:78 close sync with err"), beside
	// returning it to GetEvent, where the ingester reports it itself.
	quietLibrary.Do(func() { log.SetDefaultLogger(log.NewDefault(&log.NullHandler{})) })
	streamer, err := syncer.StartSync(mysql.Position{Name: cp.File, Pos: cp.Pos})
	if err != nil {
		return fmt.Errorf("ingest: starting the binlog stream at %s:%d: %w", cp.File, cp.Pos, err)
	}
	file := cp.File
	saved := cp
	lastSave := time.Now()
	pending := cp // the last transaction boundary whose rows are acknowledged
	in.Metrics.position(cp.File, cp.Pos)
	save := func(force bool) error {
		if pending == saved || (!force && time.Since(lastSave) < in.cfg.CheckpointEvery) {
			return nil
		}
		if err := writeCheckpoint(in.cfg.StateFile, pending); err != nil {
			return err
		}
		saved, lastSave = pending, time.Now()
		in.Metrics.Checkpoint.Add(1)
		return nil
	}
	defer func() { save(true) }()
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
			if errors.As(err, &me) && me.Code == mysql.ER_MASTER_FATAL_ERROR_READING_BINLOG {
				// The binlog at the checkpoint is gone (purged after
				// binlog_expire_logs_seconds, or RESET MASTER): what changed
				// since cannot be read any more.
				return fmt.Errorf("ingest: the source cannot send its binlog from the checkpoint %s:%d (%w): if that binlog was purged (binlog_expire_logs_seconds) or reset, the changes since are lost to the ingester; start from a new snapshot (remove the state file %s)",
					pending.File, pending.Pos, err, in.cfg.StateFile)
			}
			return fmt.Errorf("ingest: reading the binlog after %s:%d: %w", pending.File, pending.Pos, err)
		}
		switch e := ev.Event.(type) {
		case *replication.RotateEvent:
			file = string(e.NextLogName)
		case *replication.RowsEvent:
			if string(e.Table.Schema) != in.src.database || string(e.Table.Table) != in.cfg.Table {
				continue
			}
			if err := in.applyRows(ctx, ev.Header, e, file); err != nil {
				return err
			}
		case *replication.XIDEvent:
			pending = Checkpoint{File: file, Pos: ev.Header.LogPos}
			in.Metrics.position(file, ev.Header.LogPos)
		case *replication.QueryEvent:
			if err := in.tableChanged(e, file, ev.Header.LogPos); err != nil {
				return err
			}
			// A non-transactional table's statements end with COMMIT as a
			// query event; DDL is its own transaction.
			if q := strings.ToUpper(strings.TrimSpace(string(e.Query))); q != "BEGIN" {
				pending = Checkpoint{File: file, Pos: ev.Header.LogPos}
				in.Metrics.position(file, ev.Header.LogPos)
			}
		}
		if err := save(false); err != nil {
			return err
		}
	}
}

// applyRows sends one rows event's ops, in row order.
func (in *Ingester) applyRows(ctx context.Context, h *replication.EventHeader, e *replication.RowsEvent, file string) error {
	cols, err := in.layout(e.Table, file, h.LogPos)
	if err != nil {
		return err
	}
	switch h.EventType {
	case replication.WRITE_ROWS_EVENTv0, replication.WRITE_ROWS_EVENTv1, replication.WRITE_ROWS_EVENTv2:
		for i, row := range e.Rows {
			if err := in.apply(ctx, h, cols, opSet, row, eventKey(file, h.LogPos, i, "")); err != nil {
				return err
			}
		}
	case replication.DELETE_ROWS_EVENTv0, replication.DELETE_ROWS_EVENTv1, replication.DELETE_ROWS_EVENTv2:
		for i, row := range e.Rows {
			if err := in.apply(ctx, h, cols, opDel, row, eventKey(file, h.LogPos, i, "")); err != nil {
				return err
			}
		}
	case replication.UPDATE_ROWS_EVENTv0, replication.UPDATE_ROWS_EVENTv1, replication.UPDATE_ROWS_EVENTv2:
		// Rows alternate: the row before, the row after.
		for i := 0; i+1 < len(e.Rows); i += 2 {
			before, after := e.Rows[i], e.Rows[i+1]
			sku := cols[strings.ToLower(in.cfg.SKUColumn)]
			if sku < len(before) && sku < len(after) && text(before[sku]) != text(after[sku]) {
				if err := in.apply(ctx, h, cols, opDel, before, eventKey(file, h.LogPos, i/2, "d")); err != nil {
					return err
				}
			}
			if err := in.apply(ctx, h, cols, opSet, after, eventKey(file, h.LogPos, i/2, "")); err != nil {
				return err
			}
		}
	}
	return nil
}

func (in *Ingester) apply(ctx context.Context, h *replication.EventHeader, cols map[string]int, kind opKind, row []any, key string) error {
	r, err := in.record(cols, row)
	if err != nil {
		return fmt.Errorf("ingest: a row of the event ending at %d: %w", h.LogPos, err)
	}
	if err := in.send(ctx, kind, r, key); err != nil {
		return err
	}
	in.Metrics.lag(h.Timestamp, time.Now())
	return nil
}
