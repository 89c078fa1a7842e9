package elastic

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/elastic/go-elasticsearch/v8"
	"github.com/elastic/go-elasticsearch/v8/esapi"

	"github.com/eventrelay/eventrelay/internal/errclass"
)

// Client is the Elasticsearch adapter. It is safe for concurrent use.
// Every method bounds each HTTP request by Config.RequestTimeout and
// returns errors classified with errclass (see reasonFor and
// classifyTransport); no driver error escapes unclassified.
type Client struct {
	es        *elasticsearch.Client
	transport *http.Transport
	timeout   time.Duration
}

// New returns a client for cfg, after cfg.Validate. It does not contact
// the cluster (use Ping). The official client's own retries are disabled:
// retrying is the caller's decision (the projector nacks and Pub/Sub
// redelivers), so a failure is reported at once and classified.
func New(cfg Config) (*Client, error) {
	if err := cfg.Validate("elastic"); err != nil {
		return nil, err
	}
	if !cfg.Enabled() {
		return nil, errDisabled
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConnsPerHost = 32
	es, err := elasticsearch.NewClient(elasticsearch.Config{
		Addresses:    []string{cfg.URL},
		Username:     cfg.Username,
		Password:     cfg.Password,
		DisableRetry: true,
		Transport:    tr,
	})
	if err != nil {
		return nil, fmt.Errorf("elastic: creating client for %s: %w", RedactURL(cfg.URL), err)
	}
	return &Client{es: es, transport: tr, timeout: cfg.RequestTimeout}, nil
}

// Close releases idle connections.
func (c *Client) Close() { c.transport.CloseIdleConnections() }

// call performs one request bounded by the request timeout and returns the
// status and body. Only transport failures are errors here.
func (c *Client) call(ctx context.Context, req esapi.Request) (int, []byte, error) {
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	res, err := req.Do(ctx, c.es)
	if err != nil {
		return 0, nil, classifyTransport(err)
	}
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	if err != nil {
		return 0, nil, classifyTransport(err)
	}
	return res.StatusCode, body, nil
}

// callOK is call where any status outside 2xx is a classified error.
func (c *Client) callOK(ctx context.Context, req esapi.Request) ([]byte, error) {
	status, body, err := c.call(ctx, req)
	if err != nil {
		return nil, err
	}
	if status < 200 || status > 299 {
		return nil, classifyResponse(status, body)
	}
	return body, nil
}

// Ping checks that the cluster answers and is Elasticsearch.
func (c *Client) Ping(ctx context.Context) error {
	if _, err := c.callOK(ctx, esapi.InfoRequest{}); err != nil {
		return fmt.Errorf("pinging elasticsearch: %w", err)
	}
	return nil
}

// EnsureIndex creates the index "<alias>-000001" from body (a create-index
// body: mappings, settings) with alias pointing at it, unless alias already
// exists (whatever index it points to, e.g. after Reindex). It reports
// whether it created the index. Safe to call concurrently from several
// processes: the loser of a creation race sees the alias and returns false.
func (c *Client) EnsureIndex(ctx context.Context, alias string, body []byte) (bool, error) {
	targets, err := c.aliasTargets(ctx, alias)
	if err != nil {
		return false, fmt.Errorf("ensuring index for alias %s: %w", alias, err)
	}
	if len(targets) > 0 {
		return false, nil
	}
	withAlias, err := addAlias(body, alias)
	if err != nil {
		return false, fmt.Errorf("ensuring index for alias %s: %w", alias, err)
	}
	name := alias + "-000001"
	status, resp, err := c.call(ctx, esapi.IndicesCreateRequest{Index: name, Body: bytes.NewReader(withAlias)})
	if err != nil {
		return false, fmt.Errorf("creating index %s: %w", name, err)
	}
	if status >= 200 && status <= 299 {
		return true, nil
	}
	if re := parseResponseError(status, resp); re.Type == "resource_already_exists_exception" {
		if targets, err := c.aliasTargets(ctx, alias); err == nil && len(targets) > 0 {
			return false, nil // another process won the race
		}
		return false, fmt.Errorf("creating index %s: %w", name, errclass.Newf(errclass.MappingError,
			"index %s exists but alias %s does not point to it; add the alias or delete the index", name, alias))
	}
	return false, fmt.Errorf("creating index %s: %w", name, classifyResponse(status, resp))
}

// addAlias returns body (a JSON object, or empty) with "aliases"
// containing alias.
func addAlias(body []byte, alias string) ([]byte, error) {
	obj := map[string]json.RawMessage{}
	if len(bytes.TrimSpace(body)) > 0 {
		if err := json.Unmarshal(body, &obj); err != nil {
			return nil, errclass.Newf(errclass.MappingError, "index body is not a JSON object: %v", err)
		}
	}
	aliases := map[string]json.RawMessage{}
	if raw, ok := obj["aliases"]; ok {
		if err := json.Unmarshal(raw, &aliases); err != nil {
			return nil, errclass.Newf(errclass.MappingError, "index body: aliases is not an object: %v", err)
		}
	}
	aliases[alias] = json.RawMessage(`{}`)
	raw, err := json.Marshal(aliases)
	if err != nil {
		return nil, err
	}
	obj["aliases"] = raw
	return json.Marshal(obj)
}

// aliasTargets returns the indices alias points to; none if it does not
// exist.
func (c *Client) aliasTargets(ctx context.Context, alias string) ([]string, error) {
	status, body, err := c.call(ctx, esapi.IndicesGetAliasRequest{Name: []string{alias}})
	if err != nil {
		return nil, err
	}
	if status == http.StatusNotFound {
		return nil, nil
	}
	if status < 200 || status > 299 {
		return nil, classifyResponse(status, body)
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(body, &m); err != nil {
		return nil, errclass.Newf(errclass.ServerError, "decoding alias answer: %v", err)
	}
	out := make([]string, 0, len(m))
	for name := range m {
		out = append(out, name)
	}
	return out, nil
}

// Get reads one document by id (real time, no refresh needed).
func (c *Client) Get(ctx context.Context, alias, id string) (source []byte, version int64, found bool, err error) {
	status, body, err := c.call(ctx, esapi.GetRequest{Index: alias, DocumentID: id})
	if err != nil {
		return nil, 0, false, fmt.Errorf("getting %s/%s: %w", alias, id, err)
	}
	var doc struct {
		Found   *bool           `json:"found"`
		Version int64           `json:"_version"`
		Source  json.RawMessage `json:"_source"`
	}
	if status == http.StatusOK || status == http.StatusNotFound {
		if json.Unmarshal(body, &doc) == nil && doc.Found != nil {
			if !*doc.Found {
				return nil, 0, false, nil
			}
			return doc.Source, doc.Version, true, nil
		}
	}
	return nil, 0, false, fmt.Errorf("getting %s/%s: %w", alias, id, classifyResponse(status, body))
}

// Refresh makes everything written so far visible to search and Scan.
func (c *Client) Refresh(ctx context.Context, alias string) error {
	if _, err := c.callOK(ctx, esapi.IndicesRefreshRequest{Index: []string{alias}}); err != nil {
		return fmt.Errorf("refreshing %s: %w", alias, err)
	}
	return nil
}

// DeleteIndex deletes an index, or every index an alias points to. A
// missing name is not an error.
func (c *Client) DeleteIndex(ctx context.Context, nameOrAlias string) error {
	targets, err := c.aliasTargets(ctx, nameOrAlias)
	if err != nil {
		return fmt.Errorf("deleting %s: %w", nameOrAlias, err)
	}
	if len(targets) == 0 {
		targets = []string{nameOrAlias}
	}
	status, body, err := c.call(ctx, esapi.IndicesDeleteRequest{Index: targets})
	if err != nil {
		return fmt.Errorf("deleting %s: %w", strings.Join(targets, ","), err)
	}
	if status == http.StatusNotFound || (status >= 200 && status <= 299) {
		return nil
	}
	return fmt.Errorf("deleting %s: %w", strings.Join(targets, ","), classifyResponse(status, body))
}
