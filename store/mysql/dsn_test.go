package mysql

import (
	"testing"

	"github.com/go-sql-driver/mysql"
)

// The address replaces whatever address the base DSN names, and nothing
// else of it.
func TestWithAddr(t *testing.T) {
	for _, tt := range []struct{ base, addr string }{
		{"allot:allot@tcp(127.0.0.1:13306)/allot", "127.0.0.1:15306"},
		{"u:p@tcp(db.example:3306)/x?parseTime=true", "10.0.0.1:3307"},
	} {
		got, err := mysql.ParseDSN(withAddr(tt.base, tt.addr))
		if err != nil {
			t.Fatal(err)
		}
		base, _ := mysql.ParseDSN(tt.base)
		if got.Addr != tt.addr || got.User != base.User || got.Passwd != base.Passwd || got.DBName != base.DBName || got.ParseTime != base.ParseTime {
			t.Errorf("withAddr(%q, %q) = %+v", tt.base, tt.addr, got)
		}
	}
}
