package admin

import (
	"context"
	"fmt"
	"time"

	"github.com/eventrelay/eventrelay/elastic"
	"github.com/eventrelay/eventrelay/relayctl/hook"
)

// The flags of the search read model, shared by Verifier and Reindexer.
const (
	flagElasticURL = "elastic-url"
	flagAlias      = "alias"
)

// elasticFlags select the Elasticsearch cluster and alias of the search
// read model.
func elasticFlags() []hook.Flag {
	return []hook.Flag{
		{Name: flagElasticURL, Env: "ELASTIC_URL", Redact: elastic.RedactURL,
			Usage: "Elasticsearch URL (credentials from ELASTIC_USERNAME / ELASTIC_PASSWORD); empty: skip Elasticsearch; shown with its password redacted"},
		{Name: flagAlias, Env: "ELASTIC_INDEX_ALIAS", Default: "videos", Usage: "alias of the search index"},
	}
}

// searchSettings are the Elasticsearch settings of one invocation.
type searchSettings struct {
	cfg     elastic.Config
	alias   string
	timeout time.Duration
}

func searchFrom(env hook.Env) searchSettings {
	return searchSettings{
		cfg: elastic.Config{
			URL: env.Flags[flagElasticURL], Username: env.Getenv("ELASTIC_USERNAME"), Password: env.Getenv("ELASTIC_PASSWORD"),
		},
		alias: env.Flags[flagAlias], timeout: env.ConnectTimeout,
	}
}

// check validates the settings for commands that need Elasticsearch.
func (e searchSettings) check() error {
	if e.cfg.URL == "" {
		return hook.Usagef("Elasticsearch is required here: set --elastic-url or ELASTIC_URL")
	}
	if err := e.cfg.Validate("elastic"); err != nil {
		return &hook.UsageError{Err: err}
	}
	if e.alias == "" {
		return hook.Usagef("--alias must not be empty")
	}
	return nil
}

// client opens the configured cluster and pings it within
// --connect-timeout, so an unreachable cluster is reported once, here.
func (e searchSettings) client(ctx context.Context) (*elastic.Client, error) {
	if err := e.check(); err != nil {
		return nil, err
	}
	client, err := elastic.New(e.cfg)
	if err != nil {
		return nil, err
	}
	pctx, cancel := context.WithTimeout(ctx, e.timeout)
	defer cancel()
	if err := client.Ping(pctx); err != nil {
		client.Close()
		return nil, fmt.Errorf("Elasticsearch at %s (--connect-timeout %s): %w", elastic.RedactURL(e.cfg.URL), e.timeout, err)
	}
	return client, nil
}
