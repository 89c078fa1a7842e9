package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"

	catalogv1 "github.com/eventrelay/eventrelay/examples/catalog-demo/api/catalog/v1"
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

// Headers of the catalog's read-your-writes.
const (
	tokenHeader = "x-consistency-token"
	waitHeader  = "x-consistency-wait"
)

// readHeader asks a read to wait up to wait for token.
func readHeader(token string, wait time.Duration) http.Header {
	return http.Header{tokenHeader: {token}, waitHeader: {wait.String()}}
}

// GetAfter reads a video from the Postgres read model once it holds the
// write token names (waiting at most wait).
func (c *CatalogClient) GetAfter(ctx context.Context, id, token string, wait time.Duration) (*catalogv1.Video, error) {
	var resp catalogv1.GetVideoResponse
	err := c.callWith(ctx, http.MethodGet, "/v1/videos/"+id, readHeader(token, wait), nil, &resp)
	return resp.GetVideo(), err
}

// SearchUploaderAfter searches the videos of uploader in the search index
// once it holds the write token names (waiting at most wait).
func (c *CatalogClient) SearchUploaderAfter(ctx context.Context, uploader, token string, wait time.Duration) (*catalogv1.SearchVideosResponse, error) {
	var resp catalogv1.SearchVideosResponse
	q := url.Values{"uploader_id": {uploader}, "page_size": {"10"}}
	err := c.callWith(ctx, http.MethodGet, "/v1/videos:search?"+q.Encode(), readHeader(token, wait), nil, &resp)
	return &resp, err
}

// ReadCheck checks read-your-writes under the workload and its faults:
// right after every acknowledged write (all of them, not a sample; a
// write is skipped only when ReadCheckInFlight are already being read
// back) it reads the video back with the write's token, from the Postgres
// read model (GetVideo) and, when the search projection runs, from the
// search index (SearchVideos by the video's uploader). Each read waits up
// to ReadCheckWait; a read that times out (READ_MODEL_BEHIND, retryable)
// or fails (the catalog, Postgres or the index restarting) is retried, as
// a client would, until ReadCheckGiveUp after the write.
//
// A violation is an answer that does not reflect the write: a created or
// updated video missing or at an older version, a deleted one still
// found. A video missing because a later delete of it was already applied
// is no violation.
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

// The read-back's bounds.
const (
	// ReadCheckInFlight bounds the writes being read back at once.
	ReadCheckInFlight = 1024
	// ReadCheckWait is each read's wait (the catalog's maximum).
	ReadCheckWait = 10 * time.Second
	// ReadCheckGiveUp ends the retries of one write's read-back.
	ReadCheckGiveUp = time.Minute
)

// ReadStats are one read model's counts.
type ReadStats struct {
	// Answered reads were checked; Violations did not reflect their write.
	Answered, Violations atomic.Int64
	// Timeouts and Errors count read attempts (each is retried);
	// Unanswered counts writes given up on after ReadCheckGiveUp.
	Timeouts, Errors, Unanswered atomic.Int64
	// SearchDisabled counts searches answered as switched off.
	SearchDisabled atomic.Int64

	mu        sync.Mutex
	latencies []time.Duration // from the write's answer to the read's
	examples  []string
	lastErr   error
	errKinds  map[string]int // failed attempts by status and reason
}

// NewReadCheck returns a check reading the catalog at base; search adds
// the search index.
func NewReadCheck(base string, search bool) *ReadCheck {
	c := NewCatalogClient(base)
	if tr, ok := c.http.Transport.(*http.Transport); ok {
		tr.MaxIdleConnsPerHost = ReadCheckInFlight
	}
	return &ReadCheck{client: c, search: search, slots: make(chan struct{}, ReadCheckInFlight), deleting: map[string]bool{}}
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
	acked := time.Now()
	rc.wg.Add(1)
	go func() {
		defer rc.wg.Done()
		defer func() { <-rc.slots }()
		var wg sync.WaitGroup
		if rc.search {
			wg.Go(func() { rc.readES(ctx, acked, deleted, w) })
		}
		rc.readPG(ctx, acked, deleted, w)
		wg.Wait()
	}()
}

// Wait waits for the reads in flight.
func (rc *ReadCheck) Wait() { rc.wg.Wait() }

func (rc *ReadCheck) readPG(ctx context.Context, acked time.Time, deleted bool, w Written) {
	id, want := w.Video.GetId(), w.Video.GetVersion()
	var v *catalogv1.Video
	err := rc.PG.retry(ctx, acked, func() error {
		var err error
		v, err = rc.client.GetAfter(ctx, id, w.Token, ReadCheckWait)
		return err
	})
	if err != nil && !isNotFound(err) {
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

func (rc *ReadCheck) readES(ctx context.Context, acked time.Time, deleted bool, w Written) {
	id, want := w.Video.GetId(), w.Video.GetVersion()
	var resp *catalogv1.SearchVideosResponse
	err := rc.ES.retry(ctx, acked, func() error {
		var err error
		resp, err = rc.client.SearchUploaderAfter(ctx, w.Video.GetUploaderId(), w.Token, ReadCheckWait)
		return err
	})
	if err != nil {
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

// retry runs read until it answers (a not-found answer is an answer),
// counting timeouts and errors, or until ReadCheckGiveUp after acked; it
// returns the last error.
func (s *ReadStats) retry(ctx context.Context, acked time.Time, read func() error) error {
	for {
		err := read()
		var he *HTTPError
		switch {
		case err == nil || isNotFound(err):
			s.Answered.Add(1)
			s.mu.Lock()
			s.latencies = append(s.latencies, time.Since(acked))
			s.mu.Unlock()
			return err
		case errors.As(err, &he) && he.Status == http.StatusServiceUnavailable && strings.Contains(he.Body, "READ_MODEL_BEHIND"):
			s.Timeouts.Add(1)
		default:
			s.Errors.Add(1)
			s.mu.Lock()
			s.lastErr = err
			if s.errKinds == nil {
				s.errKinds = map[string]int{}
			}
			s.errKinds[errKind(err)]++
			s.mu.Unlock()
		}
		if ctx.Err() != nil || time.Since(acked) > ReadCheckGiveUp {
			s.Unanswered.Add(1)
			return err
		}
		select {
		case <-ctx.Done():
		case <-time.After(500 * time.Millisecond):
		}
	}
}

func (s *ReadStats) violation(format string, args ...any) {
	s.Violations.Add(1)
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.examples) < 5 {
		s.examples = append(s.examples, fmt.Sprintf(format, args...))
	}
}

// Summary is one line of the counts and the latency of the answers.
func (s *ReadStats) Summary() string {
	line := fmt.Sprintf("%d answered: %d violations; %d unanswered after %s; %d attempts timed out (%s wait), %d failed; %s",
		s.Answered.Load(), s.Violations.Load(), s.Unanswered.Load(), ReadCheckGiveUp, s.Timeouts.Load(), ReadCheckWait, s.Errors.Load(), s.latency())
	if n := s.SearchDisabled.Load(); n > 0 {
		line += fmt.Sprintf("; %d answered search_disabled", n)
	}
	return line + s.lastError()
}

func (s *ReadStats) latency() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return fmt.Sprintf("write to answer p50 %s, p99 %s, max %s", percentile(s.latencies, 50), percentile(s.latencies, 99), percentile(s.latencies, 100))
}

func (s *ReadStats) lastError() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.lastErr == nil {
		return ""
	}
	kinds := make([]string, 0, len(s.errKinds))
	for k, n := range s.errKinds {
		kinds = append(kinds, fmt.Sprintf("%s x%d", k, n))
	}
	sort.Strings(kinds)
	return fmt.Sprintf(" (failed attempts by kind: %s; last error: %.300s)", strings.Join(kinds, ", "), s.lastErr.Error())
}

// errKind is an error's HTTP status and catalog reason, or its Go type when
// no answer came (a connection refused while the catalog restarts).
func errKind(err error) string {
	var he *HTTPError
	if !errors.As(err, &he) {
		return fmt.Sprintf("%T", errors.Unwrap(err))
	}
	var body struct {
		Reason string `json:"reason"`
	}
	_ = json.Unmarshal([]byte(he.Body), &body)
	return fmt.Sprintf("HTTP %d %s", he.Status, body.Reason)
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
	t.Row("read-your-writes: writes read back with their token / skipped (read-backs in flight full)",
		fmt.Sprintf("all acknowledged / %d", rc.Skipped.Load()))
	for _, m := range models {
		st := m.st
		t.Check("read-your-writes violations at the "+m.name, fmt.Sprintf("%d of %d answered reads", st.Violations.Load(), st.Answered.Load()),
			st.Violations.Load() == 0 && st.Answered.Load() > 0)
		t.Row("read-your-writes at the "+m.name+": unanswered / timed out / failed",
			fmt.Sprintf("%d writes / %d / %d attempts (%s wait each, retried)", st.Unanswered.Load(), st.Timeouts.Load(), st.Errors.Load(), ReadCheckWait))
		t.Row("read-your-writes at the "+m.name+": write to answer", st.latency())
		for _, e := range st.Examples() {
			fmt.Fprintln(s.Cfg.Out, "read-your-writes violation:", e)
		}
		fmt.Fprintln(s.Cfg.Out, "read-your-writes at the "+m.name+":", st.Summary())
	}
}
