package relayctl

import (
	"net/url"
	"testing"
)

func port(t *testing.T, dsn string) string {
	t.Helper()
	u, err := url.Parse(dsn)
	if err != nil || u.Port() == "" {
		t.Fatalf("no port in test database url")
	}
	return u.Port()
}
