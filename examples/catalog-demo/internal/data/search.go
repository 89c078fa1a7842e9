package data

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"time"

	"github.com/go-kratos/kratos/v2/errors"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/eventrelay/eventrelay/elastic"
	catalogv1 "github.com/eventrelay/eventrelay/examples/catalog-demo/api/catalog/v1"
	"github.com/eventrelay/eventrelay/examples/catalog-demo/catalogdb"
	"github.com/eventrelay/eventrelay/examples/catalog-demo/events"
	"github.com/eventrelay/eventrelay/examples/catalog-demo/internal/biz"
	"github.com/eventrelay/eventrelay/projection"
)

// videoSearch searches the projector's search index (the documents of
// the catalog's search projection) through alias.
type videoSearch struct {
	es    *elastic.Client
	alias string
}

// NewVideoSearch returns the Elasticsearch biz.VideoSearch.
func NewVideoSearch(es *elastic.Client, alias string) biz.VideoSearch {
	return &videoSearch{es: es, alias: alias}
}

// pageToken continues a search: the order it was made in and the last
// hit's sort values.
type pageToken struct {
	Order int32             `json:"o"`
	After []json.RawMessage `json:"a"`
}

func (s *videoSearch) Search(ctx context.Context, q biz.SearchQuery) ([]*catalogv1.Video, string, error) {
	order := q.Order
	if order == catalogv1.SearchOrder_SEARCH_ORDER_UNSPECIFIED {
		order = catalogv1.SearchOrder_SEARCH_ORDER_CREATED_DESC
		if q.Text != "" {
			order = catalogv1.SearchOrder_SEARCH_ORDER_RELEVANCE
		}
	}
	must := []any{}
	if q.Text != "" {
		must = append(must, map[string]any{"bool": map[string]any{
			"should": []any{
				map[string]any{"match": map[string]any{"title": q.Text}},
				map[string]any{"match": map[string]any{"description": q.Text}},
			},
			"minimum_should_match": 1,
		}})
	}
	filter := []any{}
	if q.Status != catalogv1.VideoStatus_VIDEO_STATUS_UNSPECIFIED {
		row, err := statusText(q.Status)
		if err != nil {
			return nil, "", err
		}
		filter = append(filter, map[string]any{"term": map[string]any{"status": row}})
	}
	if q.UploaderID != "" {
		filter = append(filter, map[string]any{"term": map[string]any{"uploader_id": q.UploaderID}})
	}
	body := map[string]any{
		"size":    q.Limit + 1,
		"version": true,
		"query": map[string]any{"bool": map[string]any{
			"must": must, "filter": filter,
			"must_not": []any{map[string]any{"term": map[string]any{elastic.FieldDeleted: true}}},
		}},
		"sort": sortOf(order),
	}
	if q.PageToken != "" {
		tok, err := decodeSearchToken(q.PageToken)
		if err != nil || tok.Order != int32(order) || len(tok.After) != 2 {
			return nil, "", errors.BadRequest(catalogv1.ErrorReason_ERROR_REASON_INVALID_ARGUMENT.String(),
				"page_token: malformed, or made for another order").WithMetadata(map[string]string{"field": "page_token"})
		}
		body["search_after"] = tok.After
	}
	hits, err := s.es.Search(ctx, s.alias, body)
	if err != nil {
		return nil, "", err
	}
	next := ""
	if len(hits) > q.Limit {
		hits = hits[:q.Limit]
		b, _ := json.Marshal(pageToken{Order: int32(order), After: hits[len(hits)-1].Sort})
		next = base64.RawURLEncoding.EncodeToString(b)
	}
	out := make([]*catalogv1.Video, 0, len(hits))
	for _, h := range hits {
		v, err := videoOfDocument(h.Source)
		if err != nil {
			return nil, "", fmt.Errorf("search hit %s: %w", h.ID, err)
		}
		out = append(out, v)
	}
	return out, next, nil
}

func (s *videoSearch) Settle(ctx context.Context) error { return s.es.Refresh(ctx, s.alias) }

// sortOf is the sort of an order, video_id breaking ties so that pages
// never overlap.
func sortOf(o catalogv1.SearchOrder) []any {
	tie := map[string]any{"video_id": "asc"}
	switch o {
	case catalogv1.SearchOrder_SEARCH_ORDER_CREATED_ASC:
		return []any{map[string]any{"created_at": "asc"}, tie}
	case catalogv1.SearchOrder_SEARCH_ORDER_TITLE_ASC:
		return []any{map[string]any{"title.keyword": "asc"}, tie}
	case catalogv1.SearchOrder_SEARCH_ORDER_RELEVANCE:
		return []any{map[string]any{"_score": "desc"}, tie}
	default:
		return []any{map[string]any{"created_at": "desc"}, tie}
	}
}

func decodeSearchToken(s string) (pageToken, error) {
	var tok pageToken
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return tok, err
	}
	err = json.Unmarshal(b, &tok)
	return tok, err
}

// document is the search projection's document of a live video.
type document struct {
	VideoID        uuid.UUID `json:"video_id"`
	UploaderID     uuid.UUID `json:"uploader_id"`
	Title          string    `json:"title"`
	Description    string    `json:"description"`
	DurationMicros int64     `json:"duration_micros"`
	Status         string    `json:"status"`
	MediaStatus    string    `json:"media_status"`
	AnalysisStatus string    `json:"analysis_status"`
	Version        int64     `json:"version"`
	CreatedAt      time.Time `json:"created_at"`
	UpdatedAt      time.Time `json:"updated_at"`
}

func videoOfDocument(src []byte) (*catalogv1.Video, error) {
	var d document
	if err := json.Unmarshal(src, &d); err != nil {
		return nil, projection.Permanent(projection.MappingError, err)
	}
	return fromRow(catalogdb.Video{
		ID: d.VideoID, UploaderID: d.UploaderID, Title: d.Title, Description: d.Description,
		DurationMicros: d.DurationMicros, Status: d.Status, MediaStatus: d.MediaStatus, AnalysisStatus: d.AnalysisStatus,
		Version: d.Version, CreatedAt: d.CreatedAt, UpdatedAt: d.UpdatedAt, DeletedAt: pgtype.Timestamptz{},
	})
}

func statusText(s catalogv1.VideoStatus) (string, error) { return events.VideoStatus.Text(s) }
