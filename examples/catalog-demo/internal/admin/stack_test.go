package admin_test

import (
	"context"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"cloud.google.com/go/pubsub/v2/pstest"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/eventrelay/eventrelay/elastic"
	"github.com/eventrelay/eventrelay/elastic/elastictest"
	"github.com/eventrelay/eventrelay/envelope"
	catalogv1 "github.com/eventrelay/eventrelay/examples/catalog-demo/api/catalog/v1"
	"github.com/eventrelay/eventrelay/examples/catalog-demo/catalogdb"
	"github.com/eventrelay/eventrelay/examples/catalog-demo/events"
	catalogmigrations "github.com/eventrelay/eventrelay/examples/catalog-demo/migrations"
	catproj "github.com/eventrelay/eventrelay/examples/catalog-demo/projection"
	"github.com/eventrelay/eventrelay/health"
	"github.com/eventrelay/eventrelay/outbox"
	"github.com/eventrelay/eventrelay/projection"
	"github.com/eventrelay/eventrelay/projector"
	"github.com/eventrelay/eventrelay/relaytest"
)

// stack is the reference pipeline in process: Postgres, pstest with the
// resources of configs/pubsub.yaml, one publisher relay and the Postgres
// projection (with a dead-letterer to catalog.video.events.dlq-pg). Faults
// are switchable: failPublish makes every Publish answer InvalidArgument
// (a deterministic publisher failure), brokenAggregates makes the
// projection fail those aggregates with mapping_error (a handler bug).
type stack struct {
	t  *testing.T
	ps *relaytest.PubSub
	db *testDB
	// projectorPool is the projector's own role (catalogmigrations.ProjectorNeeds);
	// db.Pool, the owner's, sets up and asserts.
	projectorPool *pgxpool.Pool
	env           map[string]string
	w             *outbox.Writer

	mu          sync.Mutex
	failPublish bool
	broken      map[string]bool
}

// React implements pstest.Reactor for Publish.
func (s *stack) React(any) (bool, any, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.failPublish {
		return true, nil, status.Error(codes.InvalidArgument, "injected: message rejected")
	}
	return false, nil, nil
}

func (s *stack) setFailPublish(v bool) { s.mu.Lock(); s.failPublish = v; s.mu.Unlock() }

func (s *stack) setBroken(agg string, v bool) { s.mu.Lock(); s.broken[agg] = v; s.mu.Unlock() }

func (s *stack) isBroken(agg string) bool { s.mu.Lock(); defer s.mu.Unlock(); return s.broken[agg] }

// newStack starts the pipeline; with an Elasticsearch test server it also
// runs the search projection (alias "videos") and points relayctl at it.
func newStack(t *testing.T, es ...*elastictest.Server) *stack {
	t.Helper()
	s := &stack{t: t, broken: map[string]bool{}}
	s.ps = relaytest.NewPubSub(t, relaytest.PubSubOptions{Reactors: []pstest.ServerReactorOption{{FuncName: "Publish", Reactor: s}}})
	s.db, s.env = ensure(t, s.ps)
	w, err := outbox.NewWriter(outbox.Config{Encoder: events.Codec.Encode, DefaultTopic: events.Topic, Notify: true})
	if err != nil {
		t.Fatal(err)
	}
	s.w = w
	s.projectorPool, _ = s.db.Role(t, "projector", catalogmigrations.ProjectorNeeds)
	relaytest.StartRelay(t, s.db, s.ps.Addr, "relay-1")
	s.startProjection()
	if len(es) > 0 {
		s.startSearch(es[0])
	}
	return s
}

func (s *stack) startSearch(es *elastictest.Server) {
	t := s.t
	client, err := elastic.New(elastic.Config{URL: es.URL})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(client.Close)
	search, err := catproj.NewSearch(client, "videos")
	if err != nil {
		t.Fatal(err)
	}
	reg := projection.NewRegistry[projection.BatchHandler]()
	if err := envelope.RegisterAll[projection.BatchHandler](reg, events.Codec, search); err != nil {
		t.Fatal(err)
	}
	s.receive(projector.Projection{Name: "search", Consumer: catproj.SearchConsumer,
		Subscription: "catalog.video.projection-es", DeadLetterTopic: "catalog.video.events.dlq-es", Batch: reg})
	s.env["ELASTIC_URL"] = es.URL
}

func (s *stack) startProjection() {
	t := s.t
	reg := projection.NewRegistry[projection.TxHandler]()
	videos := catproj.NewVideos()
	h := projection.TxHandlerFunc(func(ctx context.Context, tx pgx.Tx, ev *projection.Event) (projection.Outcome, error) {
		if s.isBroken(ev.AggregateID) {
			return 0, projection.Permanent(projection.MappingError, errString("injected: column mapping bug"))
		}
		return videos.HandleTx(ctx, tx, ev)
	})
	if err := envelope.RegisterAll[projection.TxHandler](reg, events.Codec, h); err != nil {
		t.Fatal(err)
	}
	s.receive(projector.Projection{Name: "videos", Consumer: catproj.VideosConsumer,
		Subscription: "catalog.video.projection-pg", DeadLetterTopic: "catalog.video.events.dlq-pg", Tx: reg})
}

// receive runs one projection until the test ends.
func (s *stack) receive(pr projector.Projection) {
	t := s.t
	p, err := projector.New(s.projectorPool, s.ps.Client, projector.Options{
		Logger:  slog.New(slog.NewJSONHandler(io.Discard, nil)),
		Receive: projector.ReceiveOptions{NumGoroutines: 4, MaxOutstandingMessages: 200},
		Health:  health.NewHealth(time.Second),
	})
	if err != nil {
		t.Fatal(err)
	}
	pr.Batching = projector.BatchOptions{Size: 50, Linger: 10 * time.Millisecond,
		RetryBackoffMin: 20 * time.Millisecond, RetryBackoffMax: 200 * time.Millisecond}
	if err := p.Register(pr); err != nil {
		t.Fatal(err)
	}
	errc := make(chan error, 1)
	go func() { errc <- p.Start(context.Background()) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := p.Stop(ctx); err != nil {
			t.Errorf("stopping the projection on %s: %v", pr.Subscription, err)
		}
		if err := <-errc; err != nil {
			t.Errorf("projection receiver on %s: %v", pr.Subscription, err)
		}
	})
}

type errString string

func (e errString) Error() string { return string(e) }

// write changes a video and records its event in one transaction, the way
// the catalog service does.
func (s *stack) write(fn func(q *catalogdb.Queries) (catalogdb.Video, error), payload func(*catalogv1.Video) proto.Message) catalogdb.Video {
	s.t.Helper()
	var row catalogdb.Video
	err := pgx.BeginFunc(context.Background(), s.db.Pool, func(tx pgx.Tx) error {
		var err error
		if row, err = fn(catalogdb.New(tx)); err != nil {
			return err
		}
		v, err := events.VideoFromRow(row)
		if err != nil {
			return err
		}
		p := payload(v)
		typ, err := events.Codec.TypeOf(p)
		if err != nil {
			return err
		}
		_, err = s.w.InsertTx(context.Background(), tx, outbox.Event{
			AggregateType: events.AggregateType, AggregateID: row.ID.String(), AggregateVersion: row.Version,
			EventType: typ, Payload: p,
		})
		return err
	})
	if err != nil {
		s.t.Fatalf("writing a video: %v", err)
	}
	return row
}

func (s *stack) createVideo(title string) catalogdb.Video {
	return s.write(func(q *catalogdb.Queries) (catalogdb.Video, error) {
		return q.InsertVideo(context.Background(), catalogdb.InsertVideoParams{
			ID: uuid.New(), UploaderID: uuid.New(), Title: title, Status: "draft", MediaStatus: "pending", AnalysisStatus: "pending",
		})
	}, func(v *catalogv1.Video) proto.Message { return &catalogv1.VideoCreated{Video: v} })
}

func (s *stack) updateVideo(v catalogdb.Video, title string) catalogdb.Video {
	return s.write(func(q *catalogdb.Queries) (catalogdb.Video, error) {
		return q.UpdateVideo(context.Background(), catalogdb.UpdateVideoParams{
			ID: v.ID, Title: title, Description: v.Description, DurationMicros: v.DurationMicros,
			Status: "published", MediaStatus: v.MediaStatus, AnalysisStatus: v.AnalysisStatus,
		})
	}, func(v *catalogv1.Video) proto.Message { return &catalogv1.VideoUpdated{Video: v} })
}

func (s *stack) deleteVideo(v catalogdb.Video) catalogdb.Video {
	return s.write(func(q *catalogdb.Queries) (catalogdb.Video, error) {
		return q.DeleteVideo(context.Background(), v.ID)
	}, func(v *catalogv1.Video) proto.Message { return &catalogv1.VideoDeleted{Video: v} })
}

// eventually runs relayctl until it exits with want (or fails after timeout).
func (s *stack) eventually(timeout time.Duration, want int, args ...string) result {
	s.t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		r := relayctlQuiet(s.t, s.env, args...)
		if r.code == want {
			return r
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("relayctl %v: exit %d after %s, want %d\nstdout:\n%s\nstderr:\n%s", args, r.code, timeout, want, r.stdout, r.stderr)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
