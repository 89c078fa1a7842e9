package e2e

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"

	catalogv1 "github.com/eventrelay/eventrelay/api/catalog/v1"
)

// Written is what a write answered: the video as written and the
// consistency token naming the write.
type Written struct {
	Video *catalogv1.Video
	Token string
}

// CreateWritten creates a video and returns the answer with its token.
func (c *CatalogClient) CreateWritten(ctx context.Context, req *catalogv1.CreateVideoRequest) (Written, error) {
	var resp catalogv1.CreateVideoResponse
	err := c.call(ctx, http.MethodPost, "/v1/videos", req, &resp)
	return Written{resp.GetVideo(), resp.GetConsistencyToken()}, err
}

// UpdateWritten patches a video and returns the answer with its token.
func (c *CatalogClient) UpdateWritten(ctx context.Context, id uuid.UUID, req *catalogv1.UpdateVideoRequest) (Written, error) {
	req.Id = id.String()
	var resp catalogv1.UpdateVideoResponse
	err := c.call(ctx, http.MethodPatch, "/v1/videos/"+req.Id, req, &resp)
	return Written{resp.GetVideo(), resp.GetConsistencyToken()}, err
}

// DeleteWritten deletes a video and returns the answer with its token.
func (c *CatalogClient) DeleteWritten(ctx context.Context, id uuid.UUID) (Written, error) {
	var resp catalogv1.DeleteVideoResponse
	err := c.call(ctx, http.MethodDelete, "/v1/videos/"+id.String(), nil, &resp)
	return Written{resp.GetVideo(), resp.GetConsistencyToken()}, err
}

// tokenHeader is the catalog's consistency token request header.
const tokenHeader = "x-consistency-token"

// GetAfter reads a video from the Postgres read model once it holds the
// write token names (the catalog waits, its default bound).
func (c *CatalogClient) GetAfter(ctx context.Context, id, token string) (*catalogv1.Video, error) {
	var resp catalogv1.GetVideoResponse
	err := c.callWith(ctx, http.MethodGet, "/v1/videos/"+id, http.Header{tokenHeader: {token}}, nil, &resp)
	return resp.GetVideo(), err
}

// SearchUploaderAfter searches the videos of uploader in the search index
// once it holds the write token names.
func (c *CatalogClient) SearchUploaderAfter(ctx context.Context, uploader, token string) (*catalogv1.SearchVideosResponse, error) {
	var resp catalogv1.SearchVideosResponse
	q := url.Values{"uploader_id": {uploader}, "page_size": {"10"}}
	err := c.callWith(ctx, http.MethodGet, "/v1/videos:search?"+q.Encode(), http.Header{tokenHeader: {token}}, nil, &resp)
	return &resp, err
}

// ReadCheck checks read-your-writes under the workload: right after every
// acknowledged write (all of them, not a sample; a write is skipped only
// when ReadCheckInFlight reads are already waiting) it reads the video
// back with the write's token, from the Postgres read model (GetVideo) and,
// when search is on, from the search index (SearchVideos by the video's
// uploader). A read that answers without reflecting the write is a
// violation: a created or updated video missing or at an older version, a
// deleted one still found. A video missing because a later delete of it
// was already applied is no violation. Reads that time out (the catalog's
// READ_MODEL_BEHIND, after its default wait) and reads that fail otherwise
// (the catalog or Postgres restarting) are counted, not violations.
type ReadCheck struct {
	client *CatalogClient
	search bool
	slots  chan struct{}
	wg     sync.WaitGroup

	PG, ES  ReadStats
	Skipped atomic.Int64

	mu       sync.Mutex
	deleting map[string]bool // videos whose delete was sent
}

// ReadCheckInFlight bounds the reads waiting at once.
const ReadCheckInFlight = 256

// ReadStats are one read model's counts.
type ReadStats struct {
	Reads, Violations, Timeouts, Errors atomic.Int64
	// SearchDisabled counts searches answered as switched off.
	SearchDisabled atomic.Int64

	mu        sync.Mutex
	latencies []time.Duration
	examples  []string
	lastErr   error
}

// NewReadCheck returns a check reading through client; search adds the
// search index.
func NewReadCheck(client *CatalogClient, search bool) *ReadCheck {
	return &ReadCheck{client: client, search: search, slots: make(chan struct{}, ReadCheckInFlight), deleting: map[string]bool{}}
}

// Search reports whether the search index is checked too.
func (rc *ReadCheck) Search() bool { return rc.search }

// Deleting notes that a delete of id is about to be sent (call it before
// sending: a read that finds the video gone is then explained).
func (rc *ReadCheck) Deleting(id uuid.UUID) {
	rc.mu.Lock()
	rc.deleting[id.String()] = true
	rc.mu.Unlock()
}

func (rc *ReadCheck) deleteSent(id string) bool {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return rc.deleting[id]
}

// After reads back an acknowledged write in the background.
func (rc *ReadCheck) After(ctx context.Context, deleted bool, w Written) {
	if w.Token == "" || w.Video == nil {
		return
	}
	select {
	case rc.slots <- struct{}{}:
	default:
		rc.Skipped.Add(1)
		return
	}
	rc.wg.Add(1)
	go func() {
		defer rc.wg.Done()
		defer func() { <-rc.slots }()
		var wg sync.WaitGroup
		wg.Add(1)
		go func() { defer wg.Done(); rc.readPG(ctx, deleted, w) }()
		if rc.search {
			rc.readES(ctx, deleted, w)
		}
		wg.Wait()
	}()
}

// Wait waits for the reads in flight.
func (rc *ReadCheck) Wait() { rc.wg.Wait() }

func (rc *ReadCheck) readPG(ctx context.Context, deleted bool, w Written) {
	id, want := w.Video.GetId(), w.Video.GetVersion()
	start := time.Now()
	v, err := rc.client.GetAfter(ctx, id, w.Token)
	if rc.PG.failed(err, start) {
		return
	}
	gone := isNotFound(err)
	switch {
	case deleted && !gone:
		rc.PG.violation("GetVideo %s after its delete (v%d) answered the video at v%d", id, want, v.GetVersion())
	case !deleted && gone && !rc.deleteSent(id):
		rc.PG.violation("GetVideo %s after v%d: not found", id, want)
	case !deleted && !gone && v.GetVersion() < want:
		rc.PG.violation("GetVideo %s after v%d answered v%d", id, want, v.GetVersion())
	}
}

func (rc *ReadCheck) readES(ctx context.Context, deleted bool, w Written) {
	id, want := w.Video.GetId(), w.Video.GetVersion()
	start := time.Now()
	resp, err := rc.client.SearchUploaderAfter(ctx, w.Video.GetUploaderId(), w.Token)
	if rc.ES.failed(err, start) {
		return
	}
	if resp.GetSearchDisabled() {
		rc.ES.SearchDisabled.Add(1)
		return
	}
	var found *catalogv1.Video
	for _, v := range resp.GetVideos() {
		if v.GetId() == id {
			found = v
		}
	}
	switch {
	case deleted && found != nil:
		rc.ES.violation("SearchVideos of %s after its delete (v%d) found it at v%d", id, want, found.GetVersion())
	case !deleted && found == nil && !rc.deleteSent(id):
		rc.ES.violation("SearchVideos of %s after v%d: not found", id, want)
	case !deleted && found != nil && found.GetVersion() < want:
		rc.ES.violation("SearchVideos of %s after v%d found v%d", id, want, found.GetVersion())
	}
}

// failed counts the read and reports whether it ended without an answer
// to check (timeout or error); a not-found answer is an answer.
func (s *ReadStats) failed(err error, start time.Time) bool {
	s.Reads.Add(1)
	var he *HTTPError
	switch {
	case err == nil || isNotFound(err):
		s.mu.Lock()
		s.latencies = append(s.latencies, time.Since(start))
		s.mu.Unlock()
		return false
	case errors.As(err, &he) && he.Status == http.StatusServiceUnavailable && strings.Contains(he.Body, "READ_MODEL_BEHIND"):
		s.Timeouts.Add(1)
	default:
		s.Errors.Add(1)
		s.mu.Lock()
		s.lastErr = err
		s.mu.Unlock()
	}
	return true
}

func (s *ReadStats) violation(format string, args ...any) {
	s.Violations.Add(1)
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.examples) < 5 {
		s.examples = append(s.examples, fmt.Sprintf(format, args...))
	}
}

// Summary is one line: reads, violations, timeouts, errors and the
// answered reads' latency (the wait included).
func (s *ReadStats) Summary() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	line := fmt.Sprintf("%d reads: %d violations, %d timeouts, %d errors; answered in p50 %s p99 %s",
		s.Reads.Load(), s.Violations.Load(), s.Timeouts.Load(), s.Errors.Load(),
		percentile(s.latencies, 50), percentile(s.latencies, 99))
	if n := s.SearchDisabled.Load(); n > 0 {
		line += fmt.Sprintf("; %d answered search_disabled", n)
	}
	if s.lastErr != nil {
		line += fmt.Sprintf(" (last error: %v)", s.lastErr)
	}
	return line
}

func (s *ReadStats) latency() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return fmt.Sprintf("p50 %s, p99 %s", percentile(s.latencies, 50), percentile(s.latencies, 99))
}

func (s *ReadStats) lastError() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.lastErr == nil {
		return ""
	}
	return fmt.Sprintf(" (last: %.60s)", s.lastErr.Error())
}

// Examples are up to five violations.
func (s *ReadStats) Examples() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.examples...)
}

func isNotFound(err error) bool {
	var he *HTTPError
	return errors.As(err, &he) && he.Status == http.StatusNotFound
}

// percentile is the p-th percentile (nearest rank) of ds, "-" for none.
func percentile(ds []time.Duration, p float64) string {
	if len(ds) == 0 {
		return "-"
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	i := min(len(s)-1, max(0, int(math.Ceil(p/100*float64(len(s))))-1))
	return s[i].Round(time.Millisecond).String()
}

// checkReadYourWrites adds the read-your-writes rows to s.Table: any
// violation fails the suite; timeouts and errors are reported.
func (s *Suite) checkReadYourWrites() {
	rc := s.Work.ReadCheck
	if rc == nil {
		return
	}
	t := &s.Table
	type model struct {
		name string
		st   *ReadStats
	}
	models := []model{{"Postgres read model (GetVideo)", &rc.PG}}
	if rc.Search() {
		models = append(models, model{"search index (SearchVideos)", &rc.ES})
	}
	t.Row("read-your-writes: writes read back with their token / skipped (reads in flight full)",
		fmt.Sprintf("all acknowledged / %d", rc.Skipped.Load()))
	for _, m := range models {
		st := m.st
		t.Check("read-your-writes violations at the "+m.name, fmt.Sprintf("%d of %d reads", st.Violations.Load(), st.Reads.Load()),
			st.Violations.Load() == 0 && st.Reads.Load() > 0)
		t.Row("read-your-writes at the "+m.name+": timeouts / errors", fmt.Sprintf("%d / %d%s", st.Timeouts.Load(), st.Errors.Load(), st.lastError()))
		t.Row("read-your-writes at the "+m.name+": answered in (wait included)", st.latency())
		for _, e := range st.Examples() {
			fmt.Fprintln(s.Cfg.Out, "read-your-writes violation:", e)
		}
		fmt.Fprintln(s.Cfg.Out, "read-your-writes at the "+m.name+":", st.Summary())
	}
}
