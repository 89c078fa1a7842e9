package biz

import (
	"context"
	"errors"
	"fmt"
	"time"

	kerrors "github.com/go-kratos/kratos/v2/errors"
	"github.com/google/uuid"

	"github.com/eventrelay/eventrelay/consistency"
	catalogv1 "github.com/eventrelay/eventrelay/examples/catalog-demo/api/catalog/v1"
	"github.com/eventrelay/eventrelay/examples/catalog-demo/events"
)

// Read models, by the inbox consumer names the projector gives them.
const (
	ReadModelVideos = "video-projection"
	ReadModelSearch = "video-search"
)

// Read paths, the switches that choose them and the metric label of each.
const (
	// PathVideos is the Postgres read model (GetVideo, ListVideos). Off,
	// those read the source table (videos) without waiting: a rollout
	// fallback.
	PathVideos = "read_path.videos"
	// PathSearch is the search index (SearchVideos). Off, SearchVideos
	// answers at once with no videos and search_disabled set.
	PathSearch = "read_path.search"
)

// VideoReadModel is the Postgres read model (video_projection).
type VideoReadModel interface {
	// Get returns the live video; unknown and tombstoned ids yield an
	// error that Is ErrVideoNotFound.
	Get(ctx context.Context, id uuid.UUID) (*catalogv1.Video, error)
	// List returns up to limit live videos with ids greater than after,
	// ordered by id.
	List(ctx context.Context, after uuid.UUID, limit int) ([]*catalogv1.Video, error)
}

// SearchQuery is one page of a search.
type SearchQuery struct {
	Text       string
	Status     catalogv1.VideoStatus
	UploaderID string
	Order      catalogv1.SearchOrder
	Limit      int
	// PageToken continues a previous page of the same query.
	PageToken string
}

// VideoSearch is the search index.
type VideoSearch interface {
	// Search returns a page of live videos and the next page's token (""
	// on the last page). A malformed PageToken yields an
	// ErrInvalidArgument naming page_token.
	Search(ctx context.Context, q SearchQuery) ([]*catalogv1.Video, string, error)
	// Settle makes every document the index holds visible to Search (a
	// write is visible to a get at once, to a search after a refresh).
	Settle(ctx context.Context) error
}

// Waiter waits until a read model holds the tokens' versions
// (consistency.Waiter).
type Waiter interface {
	Wait(ctx context.Context, readModel string, tokens []consistency.Token, d time.Duration) error
}

// Switches tells whether a read path is on (PathVideos, PathSearch).
type Switches interface {
	On(ctx context.Context, path string) bool
}

// ReadUsecase answers the catalog's reads from its read models.
type ReadUsecase struct {
	source   VideoRepo
	model    VideoReadModel
	search   VideoSearch
	waiter   Waiter
	switches Switches
	observe  Observer
}

// Observer is told each read's path (videos, source, search,
// search_disabled), the time spent waiting for its tokens and its outcome
// (no_token, caught_up, behind, cancelled, error; direct on the
// fallbacks).
type Observer func(path string, waited time.Duration, outcome string)

// NewReadUsecase returns the reads over the source repo (the fallback of
// PathVideos), the Postgres read model, the search index (nil: none
// configured, searches answer as switched off), the waiter and the
// switches. observe (may be nil) is told each read's path, the time spent
// waiting for its tokens and its outcome.
func NewReadUsecase(source VideoRepo, model VideoReadModel, search VideoSearch, w Waiter, s Switches, observe Observer) *ReadUsecase {
	if observe == nil {
		observe = func(string, time.Duration, string) {}
	}
	return &ReadUsecase{source: source, model: model, search: search, waiter: w, switches: s, observe: observe}
}

// Consistency is what a read waits for: tokens of earlier writes and how
// long at most (0: the waiter's default).
type Consistency struct {
	Tokens []consistency.Token
	Wait   time.Duration
}

// ErrReadModelBehind: the read model has not applied the writes named by
// the request's tokens within the wait (503, retry).
var ErrReadModelBehind = kerrors.ServiceUnavailable(catalogv1.ErrorReason_ERROR_REASON_READ_MODEL_BEHIND.String(), "read model behind")

// TokenOf is the consistency token of a write's event.
func TokenOf(videoID string, version int64) consistency.Token {
	return consistency.Token{AggregateType: events.AggregateType, AggregateID: videoID, AggregateVersion: version}
}

// ParseTokens reads tokens sent by a client (field names where an error is
// reported). A token of another aggregate type is refused.
func ParseTokens(field string, raw []string) ([]consistency.Token, error) {
	ts, err := consistency.ParseAll(raw)
	if err != nil {
		return nil, invalid(field, "%v", err)
	}
	for _, t := range ts {
		if t.AggregateType != events.AggregateType {
			return nil, invalid(field, "token names a %s, not a %s", t.AggregateType, events.AggregateType)
		}
	}
	return ts, nil
}

// wait waits for c on readModel, reporting the time spent to the path's
// observation.
func (uc *ReadUsecase) wait(ctx context.Context, path, readModel string, c Consistency) error {
	if len(c.Tokens) == 0 {
		uc.observe(path, 0, "no_token")
		return nil
	}
	start := time.Now()
	err := uc.waiter.Wait(ctx, readModel, c.Tokens, c.Wait)
	outcome := "caught_up"
	switch {
	case err == nil:
	case errors.Is(err, consistency.ErrTimeout):
		outcome = "behind"
		err = kerrors.ServiceUnavailable(ErrReadModelBehind.Reason,
			fmt.Sprintf("read model %s has not applied the requested writes yet: %v", readModel, err)).
			WithMetadata(map[string]string{"read_model": readModel})
	case ctx.Err() != nil:
		outcome = "cancelled"
	default:
		outcome = "error"
		err = fmt.Errorf("waiting for read model %s: %w", readModel, err)
	}
	uc.observe(path, time.Since(start), outcome)
	return err
}

// Get returns the live video id from the Postgres read model, once it holds
// the versions of c (and minVersion of this video when set).
func (uc *ReadUsecase) Get(ctx context.Context, id string, minVersion *int64, c Consistency) (*catalogv1.Video, error) {
	vid, err := parseID("id", id)
	if err != nil {
		return nil, err
	}
	if minVersion != nil {
		if *minVersion < 1 {
			return nil, invalid("min_version", "must be >= 1, got %d", *minVersion)
		}
		c.Tokens = append(c.Tokens, TokenOf(vid.String(), *minVersion))
	}
	if !uc.switches.On(ctx, PathVideos) {
		uc.observe("source", 0, "direct")
		return uc.source.Get(ctx, vid)
	}
	if err := uc.wait(ctx, "videos", ReadModelVideos, c); err != nil {
		return nil, err
	}
	return uc.model.Get(ctx, vid)
}

// List returns a page of live videos ordered by id (see
// VideoUsecase.List for paging) from the Postgres read model.
func (uc *ReadUsecase) List(ctx context.Context, pageSize int32, pageToken string, c Consistency) ([]*catalogv1.Video, string, error) {
	limit, after, err := pageOf(pageSize, pageToken)
	if err != nil {
		return nil, "", err
	}
	list := uc.source.List
	if uc.switches.On(ctx, PathVideos) {
		if err := uc.wait(ctx, "videos", ReadModelVideos, c); err != nil {
			return nil, "", err
		}
		list = uc.model.List
	} else {
		uc.observe("source", 0, "direct")
	}
	videos, err := list(ctx, after, limit+1)
	if err != nil {
		return nil, "", err
	}
	return nextPage(videos, limit)
}

// Search answers q from the search index. disabled reports that the search
// path is switched off (or no index is configured): no videos, at once.
func (uc *ReadUsecase) Search(ctx context.Context, q SearchQuery, c Consistency) (videos []*catalogv1.Video, next string, disabled bool, err error) {
	if q.Limit < 0 {
		return nil, "", false, invalid("page_size", "must be >= 0, got %d", q.Limit)
	}
	if q.Limit == 0 {
		q.Limit = DefaultPageSize
	}
	q.Limit = min(q.Limit, MaxPageSize)
	if q.UploaderID != "" {
		if _, err := parseID("uploader_id", q.UploaderID); err != nil {
			return nil, "", false, err
		}
	}
	if err := checkVideoStatusFilter(q.Status); err != nil {
		return nil, "", false, err
	}
	if _, ok := catalogv1.SearchOrder_name[int32(q.Order)]; !ok {
		return nil, "", false, invalid("order", "unknown order %d", q.Order)
	}
	if uc.search == nil || !uc.switches.On(ctx, PathSearch) {
		uc.observe("search_disabled", 0, "direct")
		return nil, "", true, nil
	}
	if err := uc.wait(ctx, "search", ReadModelSearch, c); err != nil {
		return nil, "", false, err
	}
	if len(c.Tokens) > 0 {
		if err := uc.search.Settle(ctx); err != nil {
			return nil, "", false, err
		}
	}
	videos, next, err = uc.search.Search(ctx, q)
	return videos, next, false, err
}

func checkVideoStatusFilter(s catalogv1.VideoStatus) error {
	if s == catalogv1.VideoStatus_VIDEO_STATUS_UNSPECIFIED {
		return nil
	}
	return checkVideoStatus(s)
}
