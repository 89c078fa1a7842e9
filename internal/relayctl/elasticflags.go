package relayctl

import (
	"flag"

	"github.com/eventrelay/eventrelay/internal/elastic"
)

// elasticFlags select the Elasticsearch cluster and alias of the search
// read model.
type elasticFlags struct {
	cfg   elastic.Config
	alias string
}

func addElasticFlags(c *cli, fs *flag.FlagSet) *elasticFlags {
	e := &elasticFlags{cfg: elastic.Config{
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

// client opens the configured cluster.
func (e *elasticFlags) client() (*elastic.Client, error) {
	if err := e.check(); err != nil {
		return nil, err
	}
	return elastic.New(e.cfg)
}
