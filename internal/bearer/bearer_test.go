package bearer

import "testing"

func TestToken(t *testing.T) {
	for _, c := range []struct {
		header, token string
		ok            bool
	}{
		{"Bearer s3cret", "s3cret", true},
		{"bearer s3cret", "s3cret", true},
		{"BEARER  s3cret", "s3cret", true},
		{"Bearer S3CRET", "S3CRET", true},
		{"Bearer", "", false},
		{"Basic s3cret", "", false},
		{"Bearer\ts3cret", "", false},
		{"", "", false},
		{"Bearers s3cret", "", false},
	} {
		token, ok := Token(c.header)
		if token != c.token || ok != c.ok {
			t.Errorf("Token(%q) = %q, %v; want %q, %v", c.header, token, ok, c.token, c.ok)
		}
	}
}
