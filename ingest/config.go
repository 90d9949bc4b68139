package ingest

import (
	"crypto/tls"
	"database/sql/driver"
	"errors"
	"fmt"
	"hash/fnv"
	"net"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/go-sql-driver/mysql"

	"allot/catalog"
)

// Config says what to follow and where to send it.
type Config struct {
	// DSN is the source server in go-sql-driver form
	// (user:password@tcp(host:port)/database). The user needs SELECT on
	// the table and REPLICATION SLAVE, REPLICATION CLIENT. Its tls= holds
	// for the binary log's connection too; its charset, collation and
	// character_set_* parameters are replaced with utf8mb4 (the ingester
	// reads text as UTF-8).
	DSN string
	// Table is the source table, in the DSN's database.
	Table string
	// Column mapping: the columns holding the SKU, the title and the
	// brand; Attributes are columns copied as attributes named after them.
	SKUColumn, TitleColumn, BrandColumn string
	Attributes                          []string
	// Addr is allot's RESP address.
	Addr string
	// Password for allot's AUTH, if any.
	Password string
	// StateFile holds the checkpoint (binlog file and position).
	StateFile string
	// ServerID is the replica id the ingester registers with; it must be
	// unique among the source's replicas (the source ends the binary log
	// stream of the one that had it before). 0: Validate derives one from
	// the source's address, database, table and state file
	// (DefaultServerID).
	ServerID uint32
	// CheckpointEvery bounds how often the checkpoint is written (default
	// 200 ms); the replay after a crash is at most that long.
	CheckpointEvery time.Duration
	// SnapshotWorkers is how many connections set the snapshot's records
	// at once (default 16).
	SnapshotWorkers int
	// BrokenIgnoreSchema breaks the ingester on purpose, for the test
	// that proves the column-change checks can fail: rows are mapped by
	// the column order read at start whatever the binary log says, and
	// statements that change the table are ignored, as an ingester without
	// schema tracking does. Never set it otherwise.
	BrokenIgnoreSchema bool
}

// Validate fills defaults and checks the fields.
func (c *Config) Validate() error {
	if c.DSN == "" {
		return errors.New("ingest: --dsn is required")
	}
	if _, err := mysql.ParseDSN(c.DSN); err != nil {
		return fmt.Errorf("ingest: --dsn: %w", err)
	}
	if c.Table == "" {
		return errors.New("ingest: --table is required")
	}
	if c.SKUColumn == "" || c.TitleColumn == "" || c.BrandColumn == "" {
		return errors.New("ingest: --sku, --title and --brand name the source columns; all are required")
	}
	// An attribute name outside the catalog's rule would make every row
	// one allot cannot hold, and each row's record would be deleted.
	if len(c.Attributes) > catalog.AttributesMax {
		return fmt.Errorf("ingest: %d attributes; a catalog record holds at most %d (every row would be refused, and its record deleted)", len(c.Attributes), catalog.AttributesMax)
	}
	seen := map[string]bool{}
	for _, a := range c.Attributes {
		if strings.EqualFold(a, "ID") {
			// CATALOG.SET reads a trailing ID pair as the request's
			// idempotency key: such an attribute would be taken for one.
			return fmt.Errorf("ingest: attribute %q: CATALOG.SET takes a trailing ID pair as the idempotency key; copy the column under another name (a view or a generated column)", a)
		}
		if d := catalog.CheckText(a, catalog.AttributeNameBytesMax); d != "" {
			return fmt.Errorf("ingest: attribute %q: the name %s", a, d)
		}
		if seen[a] {
			return fmt.Errorf("ingest: attribute %q is given twice", a)
		}
		seen[a] = true
	}
	if c.Addr == "" {
		return errors.New("ingest: --addr (allot's RESP address) is required")
	}
	if c.StateFile == "" {
		return errors.New("ingest: --state (the checkpoint file) is required")
	}
	if c.ServerID == 0 {
		id, err := DefaultServerID(c.DSN, c.Table, c.StateFile)
		if err != nil {
			return err
		}
		c.ServerID = id
	}
	if c.CheckpointEvery == 0 {
		c.CheckpointEvery = 200 * time.Millisecond
	}
	if c.CheckpointEvery < 0 {
		return errors.New("ingest: the checkpoint interval must be positive")
	}
	if c.SnapshotWorkers == 0 {
		c.SnapshotWorkers = 16
	}
	if c.SnapshotWorkers < 1 || c.SnapshotWorkers > 256 {
		return fmt.Errorf("ingest: snapshot workers must be from 1 to 256, got %d", c.SnapshotWorkers)
	}
	return nil
}

// DefaultServerID is the server id of an ingester of table from the
// source dsn with its checkpoint in stateFile, when none is given: a hash
// of the source's address, its database, the table and the state file's
// absolute path, from 2^31 to 2^32-2. Two ingesters of one source (one per
// table, the usual setup) then register as different replicas, where one
// fixed default made the second end the first one's binary log stream;
// and the upper half of the ids is where replicas numbered by hand (1, 2,
// 101, an address's last octets) do not go.
func DefaultServerID(dsn, table, stateFile string) (uint32, error) {
	src, err := (&Config{DSN: dsn}).source()
	if err != nil {
		return 0, err
	}
	state, err := filepath.Abs(stateFile)
	if err != nil {
		return 0, fmt.Errorf("ingest: --state %q: %w", stateFile, err)
	}
	h := fnv.New64a()
	for _, part := range []string{net.JoinHostPort(src.host, strconv.Itoa(int(src.port))), src.database, table, state} {
		h.Write([]byte(part))
		h.Write([]byte{0})
	}
	return 1<<31 + uint32(h.Sum64()%(1<<31-1)), nil
}

// source is the parsed DSN.
type source struct {
	host     string
	port     uint16
	user     string
	password string
	database string
	// tls is the DSN's TLS configuration (tls=true, skip-verify,
	// preferred), nil for none; tlsPreferred: tls=preferred, which falls
	// back to plaintext with a source that offers no TLS.
	tls          *tls.Config
	tlsPreferred bool
}

func (c *Config) source() (source, error) {
	m, err := mysql.ParseDSN(c.DSN)
	if err != nil {
		return source{}, err
	}
	host, port, err := net.SplitHostPort(m.Addr)
	if err != nil {
		return source{}, fmt.Errorf("ingest: --dsn address %q: %w", m.Addr, err)
	}
	p, err := strconv.ParseUint(port, 10, 16)
	if err != nil {
		return source{}, fmt.Errorf("ingest: --dsn port %q: %w", port, err)
	}
	if m.DBName == "" {
		return source{}, errors.New("ingest: --dsn names no database")
	}
	src := source{host: host, port: uint16(p), user: m.User, password: m.Passwd, database: m.DBName, tlsPreferred: m.AllowFallbackToPlaintext}
	if m.TLS != nil {
		src.tls = m.TLS.Clone()
	}
	return src, nil
}

// connector is the DSN's connector with the driver's time parsing off
// (parseTime=false, whatever the DSN says): the snapshot reads every value
// as the text the server prints, which is what the binary log's values are
// rendered as (values.go), not as a time.Time the driver renders its own
// way ("2024-03-05T06:07:08Z", DATE '0000-00-00' as year 1). Its sessions
// read text in utf8mb4, whatever the DSN says: the snapshot takes what the
// server sends for UTF-8, and with charset=latin1 every title beyond ASCII
// was invalid UTF-8, refused, and its record deleted.
func (c *Config) connector() (driver.Connector, error) {
	m, err := mysql.ParseDSN(c.DSN)
	if err != nil {
		return nil, fmt.Errorf("ingest: --dsn: %w", err)
	}
	m.ParseTime = false
	for k := range m.Params {
		// charset=, and any character_set_* or collation_* variable
		// (also as @@session.x) the driver would SET.
		v := strings.ToLower(strings.TrimPrefix(k, "@@"))
		v = strings.TrimPrefix(strings.TrimPrefix(v, "session."), "local.")
		if v == "charset" || strings.HasPrefix(v, "character_set_") || strings.HasPrefix(v, "collation_") {
			delete(m.Params, k)
		}
	}
	if !strings.HasPrefix(strings.ToLower(m.Collation), "utf8mb4_") {
		m.Collation = "utf8mb4_general_ci"
	}
	return mysql.NewConnector(m)
}

// unknownColumn tells whether err is the server's "Unknown column" (1054).
func unknownColumn(err error) bool {
	var me *mysql.MySQLError
	return errors.As(err, &me) && me.Number == 1054
}
