package server_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"

	catalogv1 "github.com/eventrelay/eventrelay/examples/catalog-demo/api/catalog/v1"
	"github.com/eventrelay/eventrelay/examples/catalog-demo/conf"
	"github.com/eventrelay/eventrelay/examples/catalog-demo/internal/biz"
	"github.com/eventrelay/eventrelay/examples/catalog-demo/internal/data"
	"github.com/eventrelay/eventrelay/examples/catalog-demo/internal/service"
	catalogmigrations "github.com/eventrelay/eventrelay/examples/catalog-demo/migrations"
	"github.com/eventrelay/eventrelay/relaytest"
)

// TestGRPCCarriesConsistencyTokensInMetadata: over gRPC a write answers its
// token in the response field and the header metadata; a read passes it
// in the request metadata (or the consistency_tokens field, or as
// min_version) and, with no projector filling the read model, fails after
// its x-consistency-wait with READ_MODEL_BEHIND (Unavailable). A
// malformed token is an invalid argument.
func TestGRPCCarriesConsistencyTokensInMetadata(t *testing.T) {
	t.Parallel()
	db := relaytest.NewDB(t, relaytest.Options{Schema: catalogmigrations.Schema, Migrations: catalogmigrations.Sets})
	d := newData(t, db.URL, catalogmigrations.Schema)
	svc := service.NewVideoService(biz.NewVideoUsecase(data.NewVideoRepo(d)), newReads(t, d, conf.ReadPath{Videos: true}))
	cl := newGRPCClient(t, svc)
	ctx := context.Background()

	var header metadata.MD
	created, err := cl.CreateVideo(ctx, &catalogv1.CreateVideoRequest{UploaderId: uuid.NewString(), Title: "tokened"}, grpc.Header(&header))
	if err != nil {
		t.Fatal(err)
	}
	tok := created.GetConsistencyToken()
	if got := header.Get(service.TokenHeader); tok == "" || len(got) != 1 || got[0] != tok {
		t.Fatalf("token field %q, header metadata %v; want the same token", tok, got)
	}
	id := created.GetVideo().GetId()

	start := time.Now()
	md := metadata.Pairs(service.TokenHeader, tok, service.WaitHeader, "300ms")
	_, err = cl.GetVideo(metadata.NewOutgoingContext(ctx, md), &catalogv1.GetVideoRequest{Id: id})
	wantStatus(t, err, codes.Unavailable, catalogv1.ErrorReason_ERROR_REASON_READ_MODEL_BEHIND.String())
	if d := time.Since(start); d < 300*time.Millisecond || d > 5*time.Second {
		t.Errorf("the read failed after %s, want about its 300ms wait", d)
	}
	one := int64(1)
	waitShort := metadata.NewOutgoingContext(ctx, metadata.Pairs(service.WaitHeader, "100ms"))
	_, err = cl.GetVideo(waitShort, &catalogv1.GetVideoRequest{Id: id, MinVersion: &one})
	wantStatus(t, err, codes.Unavailable, catalogv1.ErrorReason_ERROR_REASON_READ_MODEL_BEHIND.String())
	_, err = cl.ListVideos(waitShort, &catalogv1.ListVideosRequest{ConsistencyTokens: []string{tok}})
	wantStatus(t, err, codes.Unavailable, catalogv1.ErrorReason_ERROR_REASON_READ_MODEL_BEHIND.String())

	_, err = cl.GetVideo(ctx, &catalogv1.GetVideoRequest{Id: id, ConsistencyTokens: []string{"garbage"}})
	wantStatus(t, err, codes.InvalidArgument, catalogv1.ErrorReason_ERROR_REASON_INVALID_ARGUMENT.String())
	// Without tokens the read answers at once, stale: the read model has
	// not got the video.
	_, err = cl.GetVideo(ctx, &catalogv1.GetVideoRequest{Id: id})
	wantStatus(t, err, codes.NotFound, catalogv1.ErrorReason_ERROR_REASON_VIDEO_NOT_FOUND.String())
	// Search without Elasticsearch answers as switched off.
	res, err := cl.SearchVideos(ctx, &catalogv1.SearchVideosRequest{Query: "tokened"})
	if err != nil || !res.GetSearchDisabled() || len(res.GetVideos()) != 0 {
		t.Fatalf("SearchVideos without Elasticsearch: %v, %v; want empty and search_disabled", res, err)
	}
}
