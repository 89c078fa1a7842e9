package e2e

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"time"

	"github.com/google/uuid"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	catalogv1 "github.com/eventrelay/eventrelay/examples/catalog-demo/api/catalog/v1"
)

// CatalogClient speaks the catalog service's HTTP API (protojson bodies,
// as Kratos encodes them).
type CatalogClient struct {
	base string
	http *http.Client
}

// NewCatalogClient returns a client for base, e.g. "http://127.0.0.1:8000".
func NewCatalogClient(base string) *CatalogClient {
	tr := &http.Transport{
		DialContext:         (&net.Dialer{Timeout: 2 * time.Second}).DialContext,
		MaxIdleConnsPerHost: 64,
		IdleConnTimeout:     30 * time.Second,
	}
	return &CatalogClient{base: base, http: &http.Client{Transport: tr, Timeout: 15 * time.Second}}
}

// HTTPError is a non-2xx answer.
type HTTPError struct {
	Method, Path string
	Status       int
	Body         string
}

func (e *HTTPError) Error() string {
	return fmt.Sprintf("%s %s: HTTP %d: %s", e.Method, e.Path, e.Status, e.Body)
}

// Create creates a video and returns its id.
func (c *CatalogClient) Create(ctx context.Context, req *catalogv1.CreateVideoRequest) (uuid.UUID, error) {
	var resp catalogv1.CreateVideoResponse
	if err := c.call(ctx, http.MethodPost, "/v1/videos", req, &resp); err != nil {
		return uuid.Nil, err
	}
	id, err := uuid.Parse(resp.GetVideo().GetId())
	if err != nil {
		return uuid.Nil, fmt.Errorf("create answered video id %q: %w", resp.GetVideo().GetId(), err)
	}
	return id, nil
}

// Update patches a video.
func (c *CatalogClient) Update(ctx context.Context, id uuid.UUID, req *catalogv1.UpdateVideoRequest) error {
	req.Id = id.String()
	return c.call(ctx, http.MethodPatch, "/v1/videos/"+req.Id, req, &catalogv1.UpdateVideoResponse{})
}

// Delete deletes a video.
func (c *CatalogClient) Delete(ctx context.Context, id uuid.UUID) error {
	return c.call(ctx, http.MethodDelete, "/v1/videos/"+id.String(), nil, &catalogv1.DeleteVideoResponse{})
}

// Get reads a video.
func (c *CatalogClient) Get(ctx context.Context, id uuid.UUID) (*catalogv1.Video, error) {
	var resp catalogv1.GetVideoResponse
	if err := c.call(ctx, http.MethodGet, "/v1/videos/"+id.String(), nil, &resp); err != nil {
		return nil, err
	}
	return resp.GetVideo(), nil
}

func (c *CatalogClient) call(ctx context.Context, method, path string, in, out proto.Message) error {
	return c.callWith(ctx, method, path, nil, in, out)
}

// callWith is call with extra request headers.
func (c *CatalogClient) callWith(ctx context.Context, method, path string, header http.Header, in, out proto.Message) error {
	var body io.Reader
	if in != nil {
		b, err := protojson.Marshal(in)
		if err != nil {
			return fmt.Errorf("encoding %s %s: %w", method, path, err)
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, body)
	if err != nil {
		return fmt.Errorf("building %s %s: %w", method, path, err)
	}
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Accept", "application/json")
	for k, vs := range header {
		req.Header[k] = vs
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return fmt.Errorf("%s %s: %w", method, path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return fmt.Errorf("%s %s: reading answer: %w", method, path, err)
	}
	if resp.StatusCode/100 != 2 {
		return &HTTPError{Method: method, Path: path, Status: resp.StatusCode, Body: string(bytes.TrimSpace(b))}
	}
	if err := (protojson.UnmarshalOptions{DiscardUnknown: true}).Unmarshal(b, out); err != nil {
		return fmt.Errorf("%s %s: decoding answer %q: %w", method, path, b, err)
	}
	return nil
}

var titleWords = []string{"Sunset", "Harbour", "Lecture", "Trailer", "Cooking", "Review", "Live", "Highlights", "Tutorial", "Interview"}

func randomVideo(slot int) *catalogv1.CreateVideoRequest {
	return &catalogv1.CreateVideoRequest{
		UploaderId:     uuid.New().String(),
		Title:          fmt.Sprintf("%s #%d", titleWords[rand.IntN(len(titleWords))], slot),
		Description:    "e2e workload video",
		DurationMicros: rand.Int64N(3_600_000_000),
		Status:         catalogv1.VideoStatus_VIDEO_STATUS_DRAFT,
	}
}

// randomChange changes one to three fields.
func randomChange() *catalogv1.UpdateVideoRequest {
	req := &catalogv1.UpdateVideoRequest{}
	for n := 1 + rand.IntN(3); n > 0; n-- {
		switch rand.IntN(5) {
		case 0:
			req.Title = proto.String(fmt.Sprintf("%s %d", titleWords[rand.IntN(len(titleWords))], rand.IntN(100000)))
		case 1:
			req.Description = proto.String(fmt.Sprintf("revision %d", rand.IntN(1_000_000)))
		case 2:
			req.DurationMicros = proto.Int64(rand.Int64N(3_600_000_000))
		case 3:
			st := []catalogv1.VideoStatus{catalogv1.VideoStatus_VIDEO_STATUS_DRAFT, catalogv1.VideoStatus_VIDEO_STATUS_PUBLISHED, catalogv1.VideoStatus_VIDEO_STATUS_ARCHIVED}
			req.Status = st[rand.IntN(len(st))].Enum()
		default:
			ms := []catalogv1.MediaStatus{catalogv1.MediaStatus_MEDIA_STATUS_PROCESSING, catalogv1.MediaStatus_MEDIA_STATUS_READY, catalogv1.MediaStatus_MEDIA_STATUS_FAILED}
			req.MediaStatus = ms[rand.IntN(len(ms))].Enum()
		}
	}
	return req
}
