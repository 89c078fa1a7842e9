package elastic

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/elastic/go-elasticsearch/v8/esapi"

	"github.com/eventrelay/eventrelay/internal/errclass"
)

// Reindex rebuilds the index behind alias:
//
//  1. creates "<alias>-<UTC timestamp>" from body (mappings, settings),
//  2. calls fill(ctx, target) to populate it, where target is a temporary
//     alias of the new index ("<new index>-fill"): write to it with
//     BulkIndex, which requires an alias (require_alias=true),
//  3. refreshes it and swaps alias in one atomic _aliases request (remove
//     from the old indices, add to the new one, drop the temporary alias),
//     so searches never see a missing or half-filled index,
//  4. deletes the old indices.
//
// It returns the new concrete index name. If fill fails the new index is
// deleted and alias is untouched. If deleting the old indices fails after
// the swap, the new name is returned with the error (alias already points
// to the new index; the old one is left to delete by hand).
//
// Writes that reach alias while fill runs go to the old index. To lose none
// of them, fill again against alias after Reindex returns: external
// versions make the second pass idempotent.
func (c *Client) Reindex(ctx context.Context, alias string, body []byte, fill func(ctx context.Context, index string) error) (string, error) {
	old, err := c.aliasTargets(ctx, alias)
	if err != nil {
		return "", fmt.Errorf("reindexing %s: %w", alias, err)
	}
	if len(old) == 0 {
		if exists, err := c.indexExists(ctx, alias); err != nil {
			return "", fmt.Errorf("reindexing %s: %w", alias, err)
		} else if exists {
			return "", fmt.Errorf("reindexing %s: %w", alias, errclass.Newf(errclass.MappingError,
				"%s is a concrete index, not an alias; delete it or pick another alias", alias))
		}
	}
	now := time.Now().UTC()
	name := fmt.Sprintf("%s-%s-%03d", alias, now.Format("20060102-150405"), now.Nanosecond()/int(time.Millisecond))
	fillAlias := name + "-fill"
	withAlias, err := addAlias(body, fillAlias)
	if err != nil {
		return "", fmt.Errorf("reindexing %s: %w", alias, err)
	}
	if _, err := c.callOK(ctx, esapi.IndicesCreateRequest{Index: name, Body: bytes.NewReader(withAlias)}); err != nil {
		return "", fmt.Errorf("reindexing %s: creating %s: %w", alias, name, err)
	}
	if err := fill(ctx, fillAlias); err != nil {
		_ = c.DeleteIndex(context.WithoutCancel(ctx), name)
		return "", fmt.Errorf("reindexing %s: filling %s: %w", alias, name, err)
	}
	if err := c.Refresh(ctx, name); err != nil {
		return "", fmt.Errorf("reindexing %s: %w", alias, err)
	}
	actions := []map[string]any{{"remove": map[string]any{"index": name, "alias": fillAlias}}}
	for _, o := range old {
		actions = append(actions, map[string]any{"remove": map[string]any{"index": o, "alias": alias}})
	}
	actions = append(actions, map[string]any{"add": map[string]any{"index": name, "alias": alias}})
	swap, _ := json.Marshal(map[string]any{"actions": actions})
	if _, err := c.callOK(ctx, esapi.IndicesUpdateAliasesRequest{Body: bytes.NewReader(swap)}); err != nil {
		return "", fmt.Errorf("reindexing %s: swapping alias to %s: %w", alias, name, err)
	}
	if len(old) > 0 {
		status, resp, err := c.call(ctx, esapi.IndicesDeleteRequest{Index: old})
		if err == nil && status != http.StatusNotFound && (status < 200 || status > 299) {
			err = classifyResponse(status, resp)
		}
		if err != nil {
			return name, fmt.Errorf("reindexing %s: alias now on %s, deleting old %s: %w", alias, name, strings.Join(old, ","), err)
		}
	}
	return name, nil
}

func (c *Client) indexExists(ctx context.Context, name string) (bool, error) {
	status, body, err := c.call(ctx, esapi.IndicesExistsRequest{Index: []string{name}})
	switch {
	case err != nil:
		return false, err
	case status == http.StatusOK:
		return true, nil
	case status == http.StatusNotFound:
		return false, nil
	}
	return false, classifyResponse(status, body)
}
