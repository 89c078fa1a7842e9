package server_test

import (
	"context"
	"log/slog"
	"net"
	"testing"

	"github.com/google/uuid"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	catalogv1 "github.com/eventrelay/eventrelay/api/catalog/v1"
	"github.com/eventrelay/eventrelay/internal/catalog/server"
	"github.com/eventrelay/eventrelay/relaytest"
)

func TestGRPCServesVideoServiceWithReasons(t *testing.T) {
	t.Parallel()
	svc, _ := newService(t, relaytest.NewDB(t).URL)
	srv := server.NewGRPCServer(serverConf, svc, slog.New(slog.DiscardHandler))
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(lis) //nolint:errcheck // returns when stopped
	t.Cleanup(srv.Server.Stop)
	conn, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	cl := catalogv1.NewVideoServiceClient(conn)
	ctx := context.Background()

	created, err := cl.CreateVideo(ctx, &catalogv1.CreateVideoRequest{UploaderId: uuid.NewString(), Title: "over grpc"})
	if err != nil {
		t.Fatal(err)
	}
	if created.GetVideo().GetVersion() != 1 || created.GetEvent().GetEventId() == "" {
		t.Errorf("created %v", created)
	}
	title := "renamed"
	stale := int64(5)
	_, err = cl.UpdateVideo(ctx, &catalogv1.UpdateVideoRequest{Id: created.GetVideo().GetId(), Title: &title, ExpectedVersion: &stale})
	wantStatus(t, err, codes.Aborted, "ERROR_REASON_VERSION_CONFLICT")
	_, err = cl.GetVideo(ctx, &catalogv1.GetVideoRequest{Id: uuid.NewString()})
	wantStatus(t, err, codes.NotFound, "ERROR_REASON_VIDEO_NOT_FOUND")
	_, err = cl.CreateVideo(ctx, &catalogv1.CreateVideoRequest{UploaderId: "x", Title: "t"})
	wantStatus(t, err, codes.InvalidArgument, "ERROR_REASON_INVALID_ARGUMENT")
	// A NUL in a text field is the caller's error, not a storage failure.
	_, err = cl.CreateVideo(ctx, &catalogv1.CreateVideoRequest{UploaderId: uuid.NewString(), Title: "nul\x00title"})
	wantStatus(t, err, codes.InvalidArgument, "ERROR_REASON_INVALID_ARGUMENT")
}

func wantStatus(t *testing.T, err error, code codes.Code, reason string) {
	t.Helper()
	st, ok := status.FromError(err)
	if !ok || st.Code() != code {
		t.Errorf("error %v, want code %v", err, code)
		return
	}
	for _, d := range st.Details() {
		if info, ok := d.(*errdetails.ErrorInfo); ok && info.GetReason() == reason {
			return
		}
	}
	t.Errorf("error %v has no ErrorInfo with reason %s", err, reason)
}
