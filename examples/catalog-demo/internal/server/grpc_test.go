package server_test

import (
	"context"
	"log/slog"
	"net"
	"testing"

	"github.com/google/uuid"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	oteltrace "go.opentelemetry.io/otel/trace"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	catalogv1 "github.com/eventrelay/eventrelay/examples/catalog-demo/api/catalog/v1"
	"github.com/eventrelay/eventrelay/examples/catalog-demo/internal/server"
	"github.com/eventrelay/eventrelay/examples/catalog-demo/internal/service"
	catalogmigrations "github.com/eventrelay/eventrelay/examples/catalog-demo/migrations"
	"github.com/eventrelay/eventrelay/relaytest"
)

func TestGRPCServesVideoServiceWithReasons(t *testing.T) {
	t.Parallel()
	svc, _ := newService(t, relaytest.NewDB(t, relaytest.Options{Schema: catalogmigrations.Schema, Migrations: catalogmigrations.Sets}).URL)
	cl := newGRPCClient(t, svc)
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

// newGRPCClient serves svc on the real Kratos gRPC server on a local port
// and returns a client of it.
func newGRPCClient(t *testing.T, svc *service.VideoService) catalogv1.VideoServiceClient {
	t.Helper()
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
	return catalogv1.NewVideoServiceClient(conn)
}

// TestGRPCWriteRunsInAServerSpan: a gRPC write runs inside the catalog's
// server span, and the outbox row written in its transaction carries that
// span as its traceparent (the publisher continues the trace from it).
// Not parallel: it sets the global tracer provider, as the daemon does.
func TestGRPCWriteRunsInAServerSpan(t *testing.T) {
	rec := relaytest.RecordSpans(t)
	db := relaytest.NewDB(t, relaytest.Options{Schema: catalogmigrations.Schema, Migrations: catalogmigrations.Sets})
	svc, _ := newService(t, db.URL)
	created, err := newGRPCClient(t, svc).CreateVideo(context.Background(),
		&catalogv1.CreateVideoRequest{UploaderId: uuid.NewString(), Title: "traced over grpc"})
	if err != nil {
		t.Fatal(err)
	}
	var spans []sdktrace.ReadOnlySpan
	for _, s := range rec.Ended() {
		if s.Name() == catalogv1.VideoService_CreateVideo_FullMethodName && s.SpanKind() == oteltrace.SpanKindServer {
			spans = append(spans, s)
		}
	}
	if len(spans) != 1 {
		t.Fatalf("%d ended server spans of CreateVideo, want 1", len(spans))
	}
	var headers map[string]string
	if err := db.Pool.QueryRow(context.Background(), "SELECT headers FROM outbox_events WHERE event_id = $1",
		created.GetEvent().GetEventId()).Scan(&headers); err != nil {
		t.Fatal(err)
	}
	sc := spans[0].SpanContext()
	if want := "00-" + sc.TraceID().String() + "-" + sc.SpanID().String() + "-01"; headers["traceparent"] != want {
		t.Fatalf("outbox row traceparent %q, want the server span's %q", headers["traceparent"], want)
	}
}
