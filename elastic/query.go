package elastic

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"

	"github.com/elastic/go-elasticsearch/v8/esapi"

	"github.com/eventrelay/eventrelay/internal/errclass"
)

// Hit is one search result: the document, its version and its sort values
// (pass the last hit's to the next page's search_after).
type Hit struct {
	ID      string
	Version int64
	Source  json.RawMessage
	Sort    []json.RawMessage
}

// Search runs a search request body (the query DSL) on alias and returns
// its hits. It sees the index as of its last refresh.
func (c *Client) Search(ctx context.Context, alias string, body map[string]any) ([]Hit, error) {
	b, err := json.Marshal(body)
	if err != nil {
		return nil, fmt.Errorf("searching %s: %w", alias, errclass.New(errclass.PayloadInvalid, err))
	}
	out, err := c.callOK(ctx, esapi.SearchRequest{Index: []string{alias}, Body: bytes.NewReader(b)})
	if err != nil {
		return nil, fmt.Errorf("searching %s: %w", alias, err)
	}
	var page struct {
		Hits struct {
			Hits []struct {
				ID      string            `json:"_id"`
				Version int64             `json:"_version"`
				Source  json.RawMessage   `json:"_source"`
				Sort    []json.RawMessage `json:"sort"`
			} `json:"hits"`
		} `json:"hits"`
	}
	if err := json.Unmarshal(out, &page); err != nil {
		return nil, fmt.Errorf("searching %s: %w", alias, errclass.Newf(errclass.ServerError, "decoding the answer: %v", err))
	}
	hits := make([]Hit, len(page.Hits.Hits))
	for i, h := range page.Hits.Hits {
		hits[i] = Hit{ID: h.ID, Version: h.Version, Source: h.Source, Sort: h.Sort}
	}
	return hits, nil
}
