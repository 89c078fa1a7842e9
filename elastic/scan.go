package elastic

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/elastic/go-elasticsearch/v8/esapi"

	"github.com/eventrelay/eventrelay/internal/errclass"
)

// scanPageSize is the number of hits per scroll page.
const scanPageSize = 1000

// scanKeepAlive is how long Elasticsearch keeps the scroll between pages.
const scanKeepAlive = time.Minute

type scrollPage struct {
	ScrollID string `json:"_scroll_id"`
	Hits     struct {
		Hits []struct {
			ID      string          `json:"_id"`
			Version int64           `json:"_version"`
			Source  json.RawMessage `json:"_source"`
		} `json:"hits"`
	} `json:"hits"`
}

// Scan calls fn for every document of alias (tombstones included) with its
// version, for verification. It reads a consistent snapshot through the
// scroll API sorted by _doc (Elasticsearch 8 refuses to sort on _id), so it
// sees what search sees: call Refresh first to include the latest writes.
// An error from fn stops the scan and is returned wrapped.
func (c *Client) Scan(ctx context.Context, alias string, fn func(id string, version int64, source []byte) error) error {
	query := strings.NewReader(fmt.Sprintf(`{"size":%d,"sort":["_doc"],"version":true,"query":{"match_all":{}}}`, scanPageSize))
	body, err := c.callOK(ctx, esapi.SearchRequest{Index: []string{alias}, Body: query, Scroll: scanKeepAlive})
	if err != nil {
		return fmt.Errorf("scanning %s: %w", alias, err)
	}
	var scrollID string
	defer func() {
		if scrollID != "" { // free the server-side context, even if ctx is done
			cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), c.timeout)
			defer cancel()
			_, _, _ = c.call(cctx, esapi.ClearScrollRequest{ScrollID: []string{scrollID}})
		}
	}()
	for {
		var page scrollPage
		if err := json.Unmarshal(body, &page); err != nil {
			return fmt.Errorf("scanning %s: %w", alias, errclass.Newf(errclass.ServerError, "decoding scroll page: %v", err))
		}
		scrollID = page.ScrollID
		if len(page.Hits.Hits) == 0 {
			return nil
		}
		for _, h := range page.Hits.Hits {
			if err := fn(h.ID, h.Version, h.Source); err != nil {
				return fmt.Errorf("scanning %s at %s: %w", alias, h.ID, err)
			}
		}
		if scrollID == "" {
			return fmt.Errorf("scanning %s: %w", alias, errclass.Newf(errclass.ServerError, "scroll answer without _scroll_id"))
		}
		body, err = c.callOK(ctx, esapi.ScrollRequest{ScrollID: scrollID, Scroll: scanKeepAlive})
		if err != nil {
			return fmt.Errorf("scanning %s: %w", alias, err)
		}
	}
}
