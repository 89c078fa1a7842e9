package elastic

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/elastic/go-elasticsearch/v8/esapi"

	"github.com/eventrelay/eventrelay/internal/errclass"
)

// Doc is one document to index: its id, the aggregate version (used as the
// external version) and its source, a JSON object.
type Doc struct {
	ID      string
	Version int64
	Source  []byte
}

// ItemResult is the outcome for one Doc of BulkIndex.
//
//   - Err == nil, Stale == false: indexed at Version.
//   - Err == nil, Stale == true: Elasticsearch already holds an equal or
//     newer version (409 version conflict). That is success for an
//     idempotent projection.
//   - Err != nil: classified with errclass. Transient (429, 5xx, missing
//     index): retry later. mapping_error (400: the document does not fit the
//     mapping) and payload_invalid (empty id, negative version, source not a
//     JSON object): retrying cannot help.
type ItemResult struct {
	ID    string
	Stale bool
	Err   error
}

var nl = []byte{'\n'}

// BulkIndex indexes docs into alias in one _bulk request, each with
// version_type=external and version = Doc.Version, so an older version never
// overwrites a newer one. It returns one ItemResult per doc, in order.
//
// The request is sent with require_alias=true: if alias does not exist the
// items fail (unavailable) instead of Elasticsearch auto-creating an index
// with a guessed mapping.
//
// A failure of the whole request (connection refused, timeout, 429, 5xx)
// returns a nil slice and a classified error; no item may be assumed
// applied (some may have been: retrying is safe, external versions make it
// idempotent). Docs that are invalid locally get their ItemResult.Err
// without being sent. An empty docs is a no-op.
func (c *Client) BulkIndex(ctx context.Context, alias string, docs []Doc) ([]ItemResult, error) {
	results := make([]ItemResult, len(docs))
	var buf bytes.Buffer
	sent := make([]int, 0, len(docs))
	for i, d := range docs {
		results[i].ID = d.ID
		if err := appendIndexOp(&buf, d); err != nil {
			results[i].Err = err
			continue
		}
		sent = append(sent, i)
	}
	if len(sent) == 0 {
		return results, nil
	}
	requireAlias := true
	body, err := c.callOK(ctx, esapi.BulkRequest{Index: alias, Body: &buf, RequireAlias: &requireAlias})
	if err != nil {
		return nil, fmt.Errorf("bulk indexing %d docs into %s: %w", len(sent), alias, err)
	}
	var resp struct {
		Items []map[string]struct {
			ID     string     `json:"_id"`
			Status int        `json:"status"`
			Error  *wireError `json:"error"`
		} `json:"items"`
	}
	if err := json.Unmarshal(body, &resp); err != nil || len(resp.Items) != len(sent) {
		return nil, fmt.Errorf("bulk indexing into %s: %w", alias, errclass.Newf(errclass.ServerError,
			"unexpected bulk answer: %d items for %d docs (decode error: %v)", len(resp.Items), len(sent), err))
	}
	for k, item := range resp.Items {
		r := &results[sent[k]]
		for _, it := range item { // one key: "index"
			switch {
			case it.Status == http.StatusConflict:
				r.Stale = true
			case it.Status < 200 || it.Status > 299:
				re := it.Error.toResponse(it.Status)
				r.Err = fmt.Errorf("indexing %s/%s version %d: %w", alias, r.ID, docs[sent[k]].Version,
					errclass.New(reasonFor(it.Status, re.Type), re))
			}
		}
	}
	return results, nil
}

// appendIndexOp writes the action and source lines of d, or returns a
// payload_invalid error and writes nothing.
func appendIndexOp(buf *bytes.Buffer, d Doc) error {
	switch {
	case d.ID == "":
		return errclass.Newf(errclass.PayloadInvalid, "document has an empty id")
	case d.Version < 0:
		return errclass.Newf(errclass.PayloadInvalid, "document %s: negative version %d", d.ID, d.Version)
	}
	src := bytes.TrimSpace(d.Source)
	if len(src) == 0 || src[0] != '{' {
		return errclass.Newf(errclass.PayloadInvalid, "document %s: source is not a JSON object", d.ID)
	}
	meta, err := json.Marshal(map[string]any{"index": map[string]any{
		"_id": d.ID, "version": d.Version, "version_type": "external",
	}})
	if err != nil {
		return errclass.New(errclass.PayloadInvalid, err)
	}
	start := buf.Len()
	buf.Write(meta)
	buf.Write(nl)
	if err := json.Compact(buf, src); err != nil { // NDJSON: one line per source
		buf.Truncate(start)
		return errclass.Newf(errclass.PayloadInvalid, "document %s: source is not valid JSON: %v", d.ID, err)
	}
	buf.Write(nl)
	return nil
}
