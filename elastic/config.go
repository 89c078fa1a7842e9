package elastic

import (
	"errors"
	"fmt"
	"net/url"
	"time"
)

// DefaultRequestTimeout bounds each HTTP request when Config.RequestTimeout
// is zero.
const DefaultRequestTimeout = 5 * time.Second

// Config connects to Elasticsearch. An empty URL means Elasticsearch is
// disabled; the caller decides what that means (New refuses it).
type Config struct {
	URL      string `yaml:"url" env:"ELASTIC_URL"`
	Username string `yaml:"username" env:"ELASTIC_USERNAME"`
	Password string `yaml:"password" env:"ELASTIC_PASSWORD"`
	// RequestTimeout bounds every request (one bulk, one scroll page, ...).
	RequestTimeout time.Duration `yaml:"request_timeout" env:"ELASTIC_REQUEST_TIMEOUT"`
}

// Enabled reports whether a URL is configured.
func (c *Config) Enabled() bool { return c.URL != "" }

// Validate fills defaults and checks the values. Errors name the key,
// prefixed with prefix (e.g. "elastic" gives "elastic.url").
func (c *Config) Validate(prefix string) error {
	key := func(k string) string {
		if prefix == "" {
			return k
		}
		return prefix + "." + k
	}
	if c.RequestTimeout == 0 {
		c.RequestTimeout = DefaultRequestTimeout
	}
	if c.RequestTimeout < 0 {
		return fmt.Errorf("%s (env ELASTIC_REQUEST_TIMEOUT): must be positive, got %s", key("request_timeout"), c.RequestTimeout)
	}
	if c.URL == "" {
		return nil
	}
	u, err := url.Parse(c.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("%s (env ELASTIC_URL): want http(s)://host:port, got %q", key("url"), RedactURL(c.URL))
	}
	if c.Password != "" && c.Username == "" && u.User == nil {
		return fmt.Errorf("%s (env ELASTIC_USERNAME): required when a password is set", key("username"))
	}
	return nil
}

// RedactURL returns the URL with any password replaced, for logs and
// error messages.
func RedactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "<unparseable url>"
	}
	return u.Redacted()
}

var errDisabled = errors.New("elastic: no url configured (Elasticsearch disabled)")
