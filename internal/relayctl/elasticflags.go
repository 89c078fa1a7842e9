package relayctl

import (
	"context"
	"flag"
	"fmt"

	"github.com/eventrelay/eventrelay/internal/elastic"
)

// elasticFlags select the Elasticsearch cluster and alias of the search
// read model.
type elasticFlags struct {
	cfg   elastic.Config
	alias string
	cli   *cli
}

func addElasticFlags(c *cli, fs *flag.FlagSet) *elasticFlags {
	e := &elasticFlags{cli: c, cfg: elastic.Config{
		Username: c.env("ELASTIC_USERNAME", ""),
		Password: c.env("ELASTIC_PASSWORD", ""),
	}}
	e.cfg.URL = c.env("ELASTIC_URL", "")
	fs.Var(&secretFlag{s: &e.cfg.URL, redact: elastic.RedactURL}, "elastic-url", "Elasticsearch URL (env ELASTIC_URL; credentials from ELASTIC_USERNAME / ELASTIC_PASSWORD); empty: skip Elasticsearch; shown with its password redacted")
	fs.StringVar(&e.alias, "alias", c.env("ELASTIC_INDEX_ALIAS", "videos"), "alias of the search index (env ELASTIC_INDEX_ALIAS)")
	return e
}

// check validates the configuration for commands that need Elasticsearch.
func (e *elasticFlags) check() error {
	if e.cfg.URL == "" {
		return usageErr("Elasticsearch is required here: set --elastic-url or ELASTIC_URL")
	}
	if err := e.cfg.Validate("elastic"); err != nil {
		return &exitError{code: ExitUsage, err: err}
	}
	if e.alias == "" {
		return usageErr("--alias must not be empty")
	}
	return nil
}

// client opens the configured cluster and pings it within
// --connect-timeout, so an unreachable cluster is reported once, here.
func (e *elasticFlags) client(ctx context.Context) (*elastic.Client, error) {
	if err := e.check(); err != nil {
		return nil, err
	}
	client, err := elastic.New(e.cfg)
	if err != nil {
		return nil, err
	}
	pctx, cancel := context.WithTimeout(ctx, e.cli.connectTimeout)
	defer cancel()
	if err := client.Ping(pctx); err != nil {
		client.Close()
		return nil, fmt.Errorf("Elasticsearch at %s (--connect-timeout %s): %w", elastic.RedactURL(e.cfg.URL), e.cli.connectTimeout, err)
	}
	return client, nil
}
