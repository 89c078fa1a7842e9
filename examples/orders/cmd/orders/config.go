package main

import (
	"fmt"
	"os"
	"strconv"
	"time"
)

// Config is the orders service's configuration, read from the environment
// (the service's own names; eventrelay's engines take plain option
// structs and read no environment).
type Config struct {
	HTTPAddr        string        // ORDERS_HTTP_ADDR, default ":8100"
	GRPCAddr        string        // ORDERS_GRPC_ADDR, default ":9100"
	Timeout         time.Duration // ORDERS_REQUEST_TIMEOUT, default 10s
	ShutdownTimeout time.Duration // ORDERS_SHUTDOWN_TIMEOUT, default 15s

	DatabaseURL string // DATABASE_URL, required; never logged
	Schema      string // DATABASE_SCHEMA, default "orders": the orders and eventrelay tables

	ProjectID string // PUBSUB_PROJECT_ID, required (PUBSUB_EMULATOR_HOST selects an emulator)
	// Subscription the embedded projector receives order events from.
	Subscription string // ORDERS_SUBSCRIPTION, default "orders.order-summaries"
	// DeadLetterTopic receives the events the projection refuses.
	DeadLetterTopic string // ORDERS_DEAD_LETTER_TOPIC, default "orders.order.events.dlq-summaries"
	// EmbedRelay runs eventrelay's relay inside this app; off, the shipped
	// cmd/publisher daemon delivers the outbox (DATABASE_SCHEMA=orders).
	EmbedRelay bool // ORDERS_EMBED_RELAY, default false

	Instance string // ORDERS_INSTANCE, default the host name: envelope producer.instance
}

// loadConfig reads the environment; an invalid value fails naming its
// variable.
func loadConfig(getenv func(string) string) (Config, error) {
	host, _ := os.Hostname()
	c := Config{
		HTTPAddr:        or(getenv("ORDERS_HTTP_ADDR"), ":8100"),
		GRPCAddr:        or(getenv("ORDERS_GRPC_ADDR"), ":9100"),
		DatabaseURL:     getenv("DATABASE_URL"),
		Schema:          or(getenv("DATABASE_SCHEMA"), "orders"),
		ProjectID:       getenv("PUBSUB_PROJECT_ID"),
		Subscription:    or(getenv("ORDERS_SUBSCRIPTION"), "orders.order-summaries"),
		DeadLetterTopic: or(getenv("ORDERS_DEAD_LETTER_TOPIC"), "orders.order.events.dlq-summaries"),
		Instance:        or(getenv("ORDERS_INSTANCE"), host),
	}
	var err error
	if c.Timeout, err = duration(getenv, "ORDERS_REQUEST_TIMEOUT", 10*time.Second); err != nil {
		return c, err
	}
	if c.ShutdownTimeout, err = duration(getenv, "ORDERS_SHUTDOWN_TIMEOUT", 15*time.Second); err != nil {
		return c, err
	}
	if v := getenv("ORDERS_EMBED_RELAY"); v != "" {
		if c.EmbedRelay, err = strconv.ParseBool(v); err != nil {
			return c, fmt.Errorf("ORDERS_EMBED_RELAY %q is not a boolean", v)
		}
	}
	switch {
	case c.DatabaseURL == "":
		return c, fmt.Errorf("DATABASE_URL is required")
	case c.ProjectID == "":
		return c, fmt.Errorf("PUBSUB_PROJECT_ID is required")
	}
	return c, nil
}

func or(v, def string) string {
	if v == "" {
		return def
	}
	return v
}

func duration(getenv func(string) string, key string, def time.Duration) (time.Duration, error) {
	v := getenv(key)
	if v == "" {
		return def, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		return 0, fmt.Errorf("%s %q is not a positive duration (e.g. 10s)", key, v)
	}
	return d, nil
}
