package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"cloud.google.com/go/pubsub/v2"
	"cloud.google.com/go/pubsub/v2/pstest"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"google.golang.org/api/option"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/descriptorpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/eventrelay/eventrelay/relayctl"

	ordersv1 "github.com/eventrelay/eventrelay/examples/orders/api/orders/v1"
	"github.com/eventrelay/eventrelay/examples/orders/internal/events"
	"github.com/eventrelay/eventrelay/examples/orders/internal/ordersdb"
	"github.com/eventrelay/eventrelay/examples/orders/internal/ordertest"
	orderproj "github.com/eventrelay/eventrelay/examples/orders/internal/projection"
	"github.com/eventrelay/eventrelay/wire"
)

// The Pub/Sub resources of ../../configs/pubsub.yaml.
const (
	project      = "orders-test"
	subscription = "orders.order-summaries"
	deadLetters  = "orders.order.events.dlq-summaries"
	dlqReader    = "orders.order.events.dlq-summaries"
)

// TestOrdersEndToEnd runs the orders service as its team would: orders
// placed, paid and cancelled over the Kratos HTTP and gRPC APIs go through
// the outbox (public writer, same transaction), the relay and Pub/Sub
// (pstest, resources from configs/pubsub.yaml) into the projector embedded
// in the orders Kratos app, until the order_summaries read model equals
// the orders table. Then a redelivered event is absorbed by the inbox
// (duplicate counted, read model unchanged), a lost summary is reported by
// orders-relayctl verify and restored by rebuild, and bad messages are
// dead-lettered with their reason, one of them shown decoded by dlq show
// with the contract's descriptor set. The relay is, in turn, eventrelay's
// shipped cmd/publisher binary (unchanged, configured for the "orders"
// schema) and the relay package embedded in the app.
func TestOrdersEndToEnd(t *testing.T) {
	t.Run("cmd/publisher daemon", func(t *testing.T) { endToEnd(t, false) })
	t.Run("relay embedded in the app", func(t *testing.T) { endToEnd(t, true) })
}

func endToEnd(t *testing.T, embedRelay bool) {
	db := ordertest.NewDB(t)
	ps := newPubSub(t, db.URL)
	if !embedRelay {
		startPublisher(t, db.URL, ps.addr)
	}
	httpBase, grpcAddr := startApp(t, db.Pool, ps.client, embedRelay)
	ctx := context.Background()

	// Write over both transports.
	conn, err := grpc.NewClient(grpcAddr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	gc := ordersv1.NewOrderServiceClient(conn)

	var ids []string
	for i := range 24 {
		req := &ordersv1.PlaceOrderRequest{CustomerId: fmt.Sprintf("customer-%d", i%3), AmountCents: int64(100 + i), Currency: "EUR"}
		resp := &ordersv1.PlaceOrderResponse{}
		if i%2 == 0 {
			postJSON(t, httpBase+"/v1/orders", req, resp)
		} else if resp, err = gc.PlaceOrder(ctx, req); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, resp.GetOrder().GetId())
	}
	for i, id := range ids {
		switch i % 4 {
		case 1, 2: // paid (over gRPC); 2 is then cancelled (refund)
			if _, err := gc.PayOrder(ctx, &ordersv1.PayOrderRequest{Id: id, PaymentRef: "psp-" + id[:8]}); err != nil {
				t.Fatal(err)
			}
		}
		if i%4 == 2 || i%4 == 3 { // cancelled (over HTTP)
			postJSON(t, httpBase+"/v1/orders/"+id+"/cancel", &ordersv1.CancelOrderRequest{Reason: "test"}, &ordersv1.CancelOrderResponse{})
		}
	}

	// 24 placed + 12 paid + 12 cancelled events, all projected.
	waitConverged(t, db.Pool, 48)
	for c := range 3 {
		got := &ordersv1.GetCustomerSummaryResponse{}
		getJSON(t, fmt.Sprintf("%s/v1/customers/customer-%d/summary", httpBase, c), got)
		if s := got.GetSummary(); s.GetOrders() != 8 || s.GetPlaced() != 2 || s.GetPaid() != 2 || s.GetCancelled() != 4 {
			t.Errorf("summary of customer-%d: %v, want 8 orders: 2 placed, 2 paid, 4 cancelled", c, s)
		}
	}

	// A redelivery (Pub/Sub delivers at least once): the same event again,
	// as the relay published it.
	first := ordertest.OutboxEvents(t, db.Pool)[0]
	before := metric(t, httpBase, "projector_duplicate_total", orderproj.Consumer)
	publish(t, ctx, ps.client, &pubsub.Message{Data: first.Payload, Attributes: first.Attributes(), OrderingKey: first.OrderingKey})
	eventually(t, "the redelivered event to be counted as a duplicate", func() (bool, string) {
		n := metric(t, httpBase, "projector_duplicate_total", orderproj.Consumer)
		return n >= before+1, fmt.Sprintf("projector_duplicate_total %v (before %v)", n, before)
	})

	// Drift and repair with orders-relayctl: verify reports a lost
	// summary, a rebuild of that order restores it through the outbox.
	pg := []string{"--schema", ordertest.Schema, "--database-url", db.URL}
	if _, err := db.Pool.Exec(ctx, "DELETE FROM order_summaries WHERE order_id = $1", ids[5]); err != nil {
		t.Fatal(err)
	}
	if code, out := ordertest.Relayctl(t, append([]string{"verify"}, pg...)...); code != relayctl.ExitProblem || !strings.Contains(out, "missing") {
		t.Fatalf("verify with a lost summary: exit %d, want %d naming it missing:\n%s", code, relayctl.ExitProblem, out)
	}
	if code, out := ordertest.Relayctl(t, append([]string{"rebuild", "--ids", ids[5], "--by", "e2e", "--why", "lost summary"}, pg...)...); code != relayctl.ExitOK {
		t.Fatalf("rebuild --ids %s: exit %d:\n%s", ids[5], code, out)
	}
	waitConverged(t, db.Pool, 49)
	if code, out := ordertest.Relayctl(t, append([]string{"verify"}, pg...)...); code != relayctl.ExitOK {
		t.Fatalf("verify after the rebuild: exit %d:\n%s", code, out)
	}

	// Bad messages are dead-lettered with their reason, and acked: a body
	// that is not an OrderEvent, a message without attributes, and a
	// well-formed event of a schema version the projection does not read.
	publish(t, ctx, ps.client, &pubsub.Message{Data: []byte("not an OrderEvent"), Attributes: map[string]string{
		wire.AttrEventID: uuid.NewString(), wire.AttrEventType: events.TypeOrderPlaced,
		wire.AttrAggregateType: events.AggregateType, wire.AttrAggregateID: uuid.NewString(),
		wire.AttrVersion: "1", wire.AttrSchemaVersion: "1",
	}})
	publish(t, ctx, ps.client, &pubsub.Message{Data: []byte("no attributes")})
	future := first.Attributes()
	future[wire.AttrEventID], future[wire.AttrSchemaVersion] = uuid.NewString(), "2"
	publish(t, ctx, ps.client, &pubsub.Message{Data: first.Payload, Attributes: future, OrderingKey: first.OrderingKey})

	// Triage as an operator would: dlq show decodes the body with the
	// descriptor set of the orders contract and lists its attributes.
	show := []string{"dlq", "show", "--subscription", dlqReader, "--reason", "schema_unsupported",
		"--project", project, "--emulator-host", ps.addr,
		"--descriptor-set", descriptorSet(t), "--message-type", events.MessageType}
	eventually(t, "dlq show to decode the schema_unsupported dead letter", func() (bool, string) {
		code, out := ordertest.Relayctl(t, show...)
		return code == relayctl.ExitOK && strings.Contains(out, first.AggregateID) &&
			strings.Contains(out, `"orderPlaced"`) && strings.Contains(out, "error_reason = schema_unsupported"), out
	})
	reasons := deadLetterReasons(t, ps.client, 3)
	if reasons["payload_invalid"] != 1 || reasons["attributes_missing"] != 1 || reasons["schema_unsupported"] != 1 {
		t.Errorf("dead-letter reasons %v, want one each of payload_invalid, attributes_missing, schema_unsupported", reasons)
	}
	waitConverged(t, db.Pool, 49) // nothing changed the read model

	if code, body := get(t, httpBase+"/readyz"); code != http.StatusOK {
		t.Errorf("/readyz on the orders HTTP server: %d %s", code, body)
	}
}

type pubSub struct {
	addr   string
	client *pubsub.Client
}

// newPubSub starts pstest and creates the orders service's resources with
// orders-relayctl pubsub ensure -f configs/pubsub.yaml, as an operator
// would (audited in the orders schema). (Plain pstest: eventrelay's strict double is internal to its
// module.)
func newPubSub(t *testing.T, dbURL string) *pubSub {
	t.Helper()
	srv := pstest.NewServer()
	t.Cleanup(func() { srv.Close() })
	client, err := pubsub.NewClient(context.Background(), project,
		option.WithEndpoint(srv.Addr), option.WithoutAuthentication(),
		option.WithGRPCDialOption(grpc.WithTransportCredentials(insecure.NewCredentials())),
		option.WithTelemetryDisabled())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { client.Close() })
	if code, out := ordertest.Relayctl(t, "pubsub", "ensure", "-f", "../../configs/pubsub.yaml",
		"--project", project, "--emulator-host", srv.Addr, "--schema", ordertest.Schema, "--database-url", dbURL,
		"--by", "e2e", "--why", "test resources"); code != relayctl.ExitOK {
		t.Fatalf("pubsub ensure: exit %d:\n%s", code, out)
	}
	return &pubSub{addr: srv.Addr, client: client}
}

// startPublisher builds eventrelay's cmd/publisher from the module this
// one requires (the replace directive's directory) and runs it unchanged,
// configured by environment for the orders schema and topic. It must exit
// 0 on SIGTERM at the end of the test.
func startPublisher(t *testing.T, dbURL, pubsubAddr string) {
	t.Helper()
	root, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "github.com/eventrelay/eventrelay").Output()
	if err != nil {
		t.Fatalf("locating the eventrelay module: %v", err)
	}
	bin := filepath.Join(t.TempDir(), "publisher")
	build := exec.Command("go", "build", "-o", bin, "./cmd/publisher")
	build.Dir = strings.TrimSpace(string(root))
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building cmd/publisher: %v\n%s", err, out)
	}
	cmd := exec.Command(bin, "-conf", "")
	cmd.Env = append(os.Environ(),
		"DATABASE_URL="+dbURL,
		"DATABASE_SCHEMA="+ordertest.Schema,
		"PUBSUB_PROJECT_ID="+project,
		"PUBSUB_EMULATOR_HOST="+pubsubAddr,
		"OUTBOX_WORKER_ID=orders-e2e",
		"OUTBOX_HTTP_HOST=127.0.0.1",
		"OUTBOX_HTTP_PORT="+strconv.Itoa(freePort(t)),
		"OUTBOX_READY_TOPIC="+events.Topic,
		"OUTBOX_POLL_INTERVAL_SECONDS=0.2",
		"OUTBOX_GRACE_PERIOD_SECONDS=10",
	)
	out := &lockedBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("cmd/publisher on SIGTERM: %v, want exit 0", err)
			}
		case <-time.After(30 * time.Second):
			_ = cmd.Process.Kill()
			t.Errorf("cmd/publisher did not exit within 30s of SIGTERM")
		}
		if t.Failed() {
			t.Logf("cmd/publisher output:\n%s", out.String())
		}
	})
}

// startApp runs the orders Kratos app (HTTP, gRPC, embedded projector) on
// local ports and stops it at the end of the test: Run must return nil. It
// returns the HTTP base URL and the gRPC address.
func startApp(t *testing.T, pool *pgxpool.Pool, client *pubsub.Client, embedRelay bool) (string, string) {
	t.Helper()
	logs := &lockedBuffer{}
	app, err := newApp(Config{
		HTTPAddr: "127.0.0.1:0", GRPCAddr: "127.0.0.1:0", Timeout: 10 * time.Second, ShutdownTimeout: 15 * time.Second,
		Schema: ordertest.Schema, ProjectID: project, Subscription: subscription, DeadLetterTopic: deadLetters,
		EmbedRelay: embedRelay, Instance: "e2e",
	}, pool, client, slog.New(slog.NewTextHandler(logs, nil)))
	if err != nil {
		t.Fatal(err)
	}
	// The servers listen now: Endpoint racing with Run's Start would
	// listen twice and report the port nobody serves.
	base := endpoint(t, app.HTTP.Endpoint)
	grpcAddr := strings.TrimPrefix(endpoint(t, app.GRPC.Endpoint), "grpc://")
	done := make(chan error, 1)
	go func() { done <- app.Run() }()
	t.Cleanup(func() {
		if err := app.Stop(); err != nil {
			t.Errorf("stopping the app: %v", err)
		}
		if err := <-done; err != nil {
			t.Errorf("the orders app's Run: %v", err)
		}
		if t.Failed() {
			t.Logf("orders app log:\n%s", logs.String())
		}
	})
	eventually(t, "the orders app to be healthy", func() (bool, string) {
		select {
		case err := <-done:
			done <- err // for the cleanup
			t.Fatalf("the orders app stopped: %v", err)
		default:
		}
		code, body := get(t, base+"/healthz")
		return code == http.StatusOK, body
	})
	return base, grpcAddr
}

// waitConverged waits until every outbox event is published and the read
// model equals the source of truth, row for row.
func waitConverged(t *testing.T, pool *pgxpool.Pool, events int) {
	t.Helper()
	eventually(t, "the read model to equal the orders table", func() (bool, string) {
		var published, total int
		if err := pool.QueryRow(context.Background(),
			"SELECT count(*) FILTER (WHERE status = 'published'), count(*) FROM outbox_events").Scan(&published, &total); err != nil {
			t.Fatal(err)
		}
		if total != events || published != total {
			return false, fmt.Sprintf("%d of %d outbox events published, want %d", published, total, events)
		}
		diff := drift(t, pool)
		return diff == "", diff
	})
}

// drift lists how the read model differs from the source of truth (the
// query behind orders-relayctl verify).
func drift(t *testing.T, pool *pgxpool.Pool) string {
	t.Helper()
	rows, err := ordersdb.New(pool).VerifyOrderSummaries(context.Background(), 5)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, r := range rows {
		out = append(out, fmt.Sprintf("%s %s (%d of this kind): order v%d, summary v%d", r.Kind, r.ID, r.KindTotal, r.SourceVersion, r.SummaryVersion))
	}
	return strings.Join(out, "; ")
}

func publish(t *testing.T, ctx context.Context, client *pubsub.Client, m *pubsub.Message) {
	t.Helper()
	p := client.Publisher(events.Topic)
	p.EnableMessageOrdering = m.OrderingKey != ""
	defer p.Stop()
	if _, err := p.Publish(ctx, m).Get(ctx); err != nil {
		t.Fatalf("publishing to %s: %v", events.Topic, err)
	}
}

// deadLetterReasons receives n dead letters and counts their error_reason
// attribute (after checking they name the projection).
func deadLetterReasons(t *testing.T, client *pubsub.Client, n int) map[string]int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var mu sync.Mutex
	got := map[string]int{}
	seen := 0
	err := client.Subscriber(dlqReader).Receive(ctx, func(_ context.Context, m *pubsub.Message) {
		mu.Lock()
		defer mu.Unlock()
		m.Ack()
		if p := m.Attributes["projection"]; p != orderproj.Consumer {
			t.Errorf("dead letter %v names projection %q, want %q", m.Attributes, p, orderproj.Consumer)
		}
		got[m.Attributes["error_reason"]]++
		if seen++; seen == n {
			cancel()
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	if seen < n {
		t.Fatalf("%d dead letters within 60s, want %d (got reasons %v)", seen, n, got)
	}
	return got
}

// metric reads a counter of one projection from the app's /metrics.
func metric(t *testing.T, base, name, proj string) float64 {
	t.Helper()
	code, body := get(t, base+"/metrics")
	if code != http.StatusOK {
		t.Fatalf("/metrics: %d", code)
	}
	prefix := name + `{projection="` + proj + `"} `
	sc := bufio.NewScanner(strings.NewReader(body))
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), prefix); ok {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				t.Fatalf("%s: %v", sc.Text(), err)
			}
			return f
		}
	}
	return 0
}

func eventually(t *testing.T, what string, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(90 * time.Second)
	for {
		ok, state := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("waited 90s for %s: %s", what, state)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func endpoint(t *testing.T, f func() (*url.URL, error)) string {
	t.Helper()
	u, err := f()
	if err != nil {
		t.Fatal(err)
	}
	return u.String()
}

func get(t *testing.T, u string) (int, string) {
	t.Helper()
	resp, err := http.Get(u)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func getJSON(t *testing.T, u string, out proto.Message) {
	t.Helper()
	code, body := get(t, u)
	if code != http.StatusOK {
		t.Fatalf("GET %s: %d %s", u, code, body)
	}
	if err := protojson.Unmarshal([]byte(body), out); err != nil {
		t.Fatalf("GET %s: %v", u, err)
	}
}

func postJSON(t *testing.T, u string, in, out proto.Message) {
	t.Helper()
	b, err := protojson.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.Post(u, "application/json", bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("POST %s: %d %s", u, resp.StatusCode, body)
	}
	if err := protojson.Unmarshal(body, out); err != nil {
		t.Fatalf("POST %s: %v: %s", u, err, body)
	}
}

// freePort returns a port that was free a moment ago.
func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// descriptorSet writes what `buf build -o` makes of api/: the orders
// contract's files and their imports, taken from the generated code.
func descriptorSet(t *testing.T) string {
	t.Helper()
	set := &descriptorpb.FileDescriptorSet{}
	for _, fd := range []protoreflect.FileDescriptor{timestamppb.File_google_protobuf_timestamp_proto,
		ordersv1.File_orders_v1_orders_proto, ordersv1.File_orders_v1_events_proto} {
		set.File = append(set.File, protodesc.ToFileDescriptorProto(fd))
	}
	b, err := proto.Marshal(set)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "orders.binpb")
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
