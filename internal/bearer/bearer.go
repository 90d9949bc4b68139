// Package bearer reads the credentials of an "Authorization: Bearer
// <token>" header, for the server's HTTP API and the bench service.
package bearer

import "strings"

// Token returns the token of an Authorization header value in the Bearer
// scheme. The scheme is matched case-insensitively, with one or more
// spaces before the token (RFC 9110 §11.1 and §11.4: "bearer x" is the
// same credentials as "Bearer x"); the token is returned as sent, for
// the caller to compare exactly and in constant time.
func Token(header string) (string, bool) {
	scheme, token, ok := strings.Cut(header, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	return strings.TrimLeft(token, " "), true
}
