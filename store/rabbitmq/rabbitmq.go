package rabbitmq

import (
	"context"
	"errors"
	"fmt"
	"net"
	neturl "net/url"
	"strconv"
	"strings"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"allot/inventory"
	"allot/store"
)

// URLDefault is the node `allot services up rabbitmq` starts.
const URLDefault = store.RabbitMQURL

// Bounds of a session.
const (
	// prefetch is how many unacknowledged messages a consumer may hold.
	prefetch = 64
	// readWait is how long Read waits for a message before it reports
	// that none came (found=false).
	readWait = 500 * time.Millisecond
)

// drainWait is how long Records waits for a next message before it asks
// the broker whether the queue is empty. A variable for tests.
var drainWait = 200 * time.Millisecond

func init() {
	store.Register(store.Registration{
		Name:   "rabbitmq",
		About:  "RabbitMQ (workload rw only): WRITE publishes (tx channel, publisher confirms or fire-and-forget), READ consumes with an ack",
		Server: store.ServerRabbitMQ,
		Open: func(ctx context.Context, cfg store.Config) (store.Store, error) {
			return Open(ctx, cfg)
		},
		// A queue holds messages, not rows or records to modify in place.
		Workloads: []string{"rw"},
		Refuses: func(u store.Use) string {
			if u.RWModifies() {
				return "no " + u.RWRequest + " in workload rw: a queue publishes (WRITE) and consumes (READ); it has no record to modify"
			}
			return ""
		},
	})
}

// Store is a RabbitMQ node.
type Store struct {
	cfg  store.Config
	url  string
	conn *amqp.Connection // Describe and the record space's admin work
}

// Open connects to cfg.Addr (host:port, or a full amqp:// URL; default
// URLDefault).
func Open(ctx context.Context, cfg store.Config) (*Store, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	s := &Store{cfg: cfg, url: amqpURL(cfg.Addr)}
	conn, err := s.dial()
	if err != nil {
		return nil, err
	}
	s.conn = conn
	return s, nil
}

// amqpURL is the URL for cfg.Addr: URLDefault, a whole URL as given, or
// URLDefault with its host and port set to a host:port.
func amqpURL(addr string) string {
	switch {
	case addr == "":
		return URLDefault
	case strings.Contains(addr, "://"):
		return addr
	}
	// Parsed, not a text replacement of one literal address, which breaks
	// silently the day URLDefault names another.
	u, err := neturl.Parse(URLDefault)
	if err != nil {
		panic("rabbitmq: bad built-in URL " + URLDefault + ": " + err.Error())
	}
	u.Host = addr
	return u.String()
}

func (s *Store) dial() (*amqp.Connection, error) {
	// A URL that does not parse is bad input, not a server down (a
	// url.Error passes for a net.Error), and its text quotes the URL.
	if _, err := amqp.ParseURI(s.url); err != nil {
		var ue *neturl.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		if strings.Contains(s.url, "@") {
			// Credentials in an address that does not parse (a '/' in
			// the password, say) are where redacted cannot find them,
			// and the parser's message may quote them: neither is shown.
			return nil, fmt.Errorf("rabbitmq: the address (it holds credentials, not shown) does not parse as amqp://user:password@host:port/vhost (a reserved character in the password must be percent-encoded)")
		}
		return nil, fmt.Errorf("rabbitmq: address %s: %v", s.url, err)
	}
	conn, err := amqp.DialConfig(s.url, amqp.Config{Dial: amqp.DefaultDial(s.cfg.Timeout)})
	if err != nil {
		var ne net.Error
		var oe *net.OpError
		if errors.As(err, &oe) || errors.As(err, &ne) {
			return nil, fmt.Errorf("%w: rabbitmq at %s: %v", store.ErrServerDown, redacted(s.url), err)
		}
		return nil, fmt.Errorf("rabbitmq: connecting to %s: %w", redacted(s.url), err)
	}
	return conn, nil
}

// redacted is url with its password, if any, replaced by "xxxxx": errors
// end up in the results file and the report.
func redacted(url string) string {
	scheme := strings.Index(url, "://")
	if scheme < 0 {
		return url
	}
	head, rest := url[:scheme+3], url[scheme+3:]
	authority := rest
	if i := strings.Index(rest, "/"); i >= 0 {
		authority = rest[:i]
	}
	at := strings.LastIndex(authority, "@")
	if at < 0 {
		return url
	}
	user := authority[:at]
	if i := strings.Index(user, ":"); i >= 0 {
		user = user[:i] + ":xxxxx"
	}
	return head + user + rest[at:]
}

var errNoInventory = errors.New("rabbitmq: a queue holds messages, not inventory rows: run it with --workload rw")

// Load refuses: RabbitMQ runs workload rw only.
func (s *Store) Load(context.Context, []inventory.Row) error { return errNoInventory }

// Session refuses: RabbitMQ runs workload rw only.
func (s *Store) Session(context.Context) (store.Session, error) { return nil, errNoInventory }

// Rows has nothing to read.
func (s *Store) Rows(context.Context) ([]inventory.Row, error) { return nil, errNoInventory }

// Describe names the broker and its version.
func (s *Store) Describe(context.Context) (string, error) {
	product, _ := s.conn.Properties["product"].(string)
	version, _ := s.conn.Properties["version"].(string)
	return fmt.Sprintf("%s %s at %s", product, version, strings.TrimPrefix(s.url[strings.LastIndex(s.url, "@")+1:], "")), nil
}

// Close closes the connection.
func (s *Store) Close() error {
	if s.conn == nil {
		return nil
	}
	err := s.conn.Close()
	s.conn = nil
	if errors.Is(err, amqp.ErrClosed) {
		return nil
	}
	return err
}

// body encodes a record's value; the key travels as the message id.
func body(v int64) []byte { return strconv.AppendInt(nil, v, 10) }

func record(d *amqp.Delivery) (store.RWRecord, error) {
	v, err := strconv.ParseInt(string(d.Body), 10, 64)
	if err != nil {
		return store.RWRecord{}, fmt.Errorf("rabbitmq: message %q has body %q, not a value", d.MessageId, d.Body)
	}
	return store.RWRecord{Key: d.MessageId, Value: v}, nil
}
