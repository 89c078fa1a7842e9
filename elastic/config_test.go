package elastic

import (
	"strings"
	"testing"
	"time"
)

func TestConfigValidate(t *testing.T) {
	var empty Config
	if err := empty.Validate("elastic"); err != nil || empty.RequestTimeout != DefaultRequestTimeout || empty.Enabled() {
		t.Fatalf("empty config: %v %+v", err, empty)
	}
	if _, err := New(empty); err == nil {
		t.Fatal("New without URL must fail")
	}
	for _, c := range []struct {
		cfg  Config
		want string
	}{
		{Config{URL: "localhost:9200"}, "elastic.url"},
		{Config{URL: "ftp://x"}, "elastic.url"},
		{Config{URL: "http://x", RequestTimeout: -time.Second}, "elastic.request_timeout"},
		{Config{URL: "http://x", Password: "p"}, "elastic.username"},
	} {
		err := c.cfg.Validate("elastic")
		if err == nil || !strings.HasPrefix(err.Error(), c.want) {
			t.Errorf("%+v: %v, want an error naming %s", c.cfg, err, c.want)
		}
	}
	bad := Config{URL: "ftp://user:secret@x"}
	if err := bad.Validate(""); err == nil || strings.Contains(err.Error(), "secret") {
		t.Fatalf("password leaked or not rejected: %v", err)
	}
}
