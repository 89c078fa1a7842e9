package main

import (
	"strings"
	"testing"
	"time"
)

func TestConfigDefaultsAndErrorsNameTheVariable(t *testing.T) {
	env := map[string]string{"DATABASE_URL": "postgres://localhost/orders", "PUBSUB_PROJECT_ID": "orders-local"}
	getenv := func(k string) string { return env[k] }
	c, err := loadConfig(getenv)
	if err != nil {
		t.Fatal(err)
	}
	if c.Schema != "orders" || c.HTTPAddr != ":8100" || c.Subscription != "orders.order-summaries" || c.EmbedRelay || c.Timeout != 10*time.Second {
		t.Errorf("defaults: %+v", c)
	}
	for key, bad := range map[string]string{
		"DATABASE_URL": "", "PUBSUB_PROJECT_ID": "", "ORDERS_EMBED_RELAY": "sometimes",
		"ORDERS_REQUEST_TIMEOUT": "10", "ORDERS_SHUTDOWN_TIMEOUT": "-1s",
	} {
		saved := env[key]
		env[key] = bad
		if _, err := loadConfig(getenv); err == nil || !strings.Contains(err.Error(), key) {
			t.Errorf("%s=%q: error %v, want one naming %s", key, bad, err, key)
		}
		env[key] = saved
	}
}
