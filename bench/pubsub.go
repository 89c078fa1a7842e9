package bench

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"cloud.google.com/go/pubsub/v2"
	pb "cloud.google.com/go/pubsub/v2/apiv1/pubsubpb"
	"cloud.google.com/go/pubsub/v2/pstest"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/eventrelay/eventrelay/embedded"
	"github.com/eventrelay/eventrelay/relaytest/strictpubsub"
	"github.com/eventrelay/eventrelay/settings"
)

// Project is the Pub/Sub project of the bench (pstest and emulator).
const Project = "eventrelay-bench"

// Backend is a Pub/Sub server the bench talks to, pstest in process or the
// real emulator, always through the strict double (relaytest/strictpubsub)
// with a round trip: it refuses what Cloud Pub/Sub refuses, and at 15 ms it
// makes the fakes answer as slowly as Cloud Pub/Sub answers a GKE pod.
type Backend struct {
	// Name is the server and the double's round trip: "pstest",
	// "pstest-rtt15ms", "emulator", "emulator-rtt15ms".
	Name string
	// Server is "pstest" or "emulator".
	Server string
	RTT    time.Duration
	Config settings.PubSub
	Client *pubsub.Client
	Double *strictpubsub.Double
	close  func()
}

// backendName names a server behind the double at rtt.
func backendName(server string, rtt time.Duration) string {
	if rtt == 0 {
		return server
	}
	return server + "-rtt" + rtt.String()
}

// newBackend puts the strict double with rtt in front of the server at
// upstream and connects a client to it; closeServer (may be nil) runs
// after the client and the double are closed.
func newBackend(ctx context.Context, server, upstream string, rtt time.Duration, closeServer func()) (*Backend, error) {
	double, err := strictpubsub.Start(strictpubsub.Options{Upstream: upstream, RTT: rtt})
	if err != nil {
		return nil, err
	}
	cfg := settings.PubSub{ProjectID: Project, EmulatorHost: double.Addr()}
	cl, err := embedded.NewPubSubClient(ctx, cfg)
	if err != nil {
		double.Close()
		return nil, err
	}
	b := &Backend{Name: backendName(server, rtt), Server: server, RTT: rtt, Config: cfg, Client: cl, Double: double}
	b.close = func() {
		cl.Close()
		double.Close()
		doubles.add(double.Stats())
		if closeServer != nil {
			closeServer()
		}
	}
	return b, nil
}

var resourceSeq atomic.Int64

// uniqueID returns a fresh topic/subscription id.
func uniqueID(prefix string) string {
	return fmt.Sprintf("%s-%d-%d", prefix, time.Now().Unix()%100000, resourceSeq.Add(1))
}

// newPstest starts a pstest server in process behind the double.
func newPstest(ctx context.Context, rtt time.Duration) (*Backend, error) {
	srv := pstest.NewServer()
	b, err := newBackend(ctx, "pstest", srv.Addr, rtt, func() { srv.Close() })
	if err != nil {
		srv.Close()
		return nil, err
	}
	return b, nil
}

// Close releases the client (and the pstest server).
func (b *Backend) Close() {
	if b != nil && b.close != nil {
		b.close()
	}
}

// CreateTopic creates a fresh topic and returns its id.
func (b *Backend) CreateTopic(ctx context.Context, prefix string) (string, error) {
	id := uniqueID(prefix)
	if _, err := b.Client.TopicAdminClient.CreateTopic(ctx, &pb.Topic{Name: topicName(id)}); err != nil {
		return "", fmt.Errorf("%s: creating topic %s: %w", b.Name, id, err)
	}
	return id, nil
}

// EnsureTopic creates the topic id if it does not exist yet (the outbox
// rows name catalog.video.events).
func (b *Backend) EnsureTopic(ctx context.Context, id string) error {
	_, err := b.Client.TopicAdminClient.CreateTopic(ctx, &pb.Topic{Name: topicName(id)})
	if err != nil && status.Code(err) != codes.AlreadyExists {
		return fmt.Errorf("%s: creating topic %s: %w", b.Name, id, err)
	}
	return nil
}

// CreateSubscription creates a fresh subscription to topic.
func (b *Backend) CreateSubscription(ctx context.Context, topic string, ordered bool) (string, error) {
	id := uniqueID(topic + "-sub")
	_, err := b.Client.SubscriptionAdminClient.CreateSubscription(ctx, &pb.Subscription{
		Name:                  subscriptionName(id),
		Topic:                 topicName(topic),
		EnableMessageOrdering: ordered,
		AckDeadlineSeconds:    60,
	})
	if err != nil {
		return "", fmt.Errorf("%s: creating subscription %s: %w", b.Name, id, err)
	}
	return id, nil
}

// DeleteTopic removes a topic (best effort: the emulator keeps messages of
// topics with subscriptions in memory).
func (b *Backend) DeleteTopic(ctx context.Context, id string) {
	_ = b.Client.TopicAdminClient.DeleteTopic(ctx, &pb.DeleteTopicRequest{Topic: topicName(id)})
}

// DeleteSubscription removes a subscription (best effort).
func (b *Backend) DeleteSubscription(ctx context.Context, id string) {
	_ = b.Client.SubscriptionAdminClient.DeleteSubscription(ctx, &pb.DeleteSubscriptionRequest{Subscription: subscriptionName(id)})
}

// topicName is the full resource name of the topic id in Project.
func topicName(id string) string { return "projects/" + Project + "/topics/" + id }

// subscriptionName is the full resource name of the subscription id in
// Project.
func subscriptionName(id string) string { return "projects/" + Project + "/subscriptions/" + id }

// Emulator is the bench's private Pub/Sub emulator, run through
// scripts/pubsub-emulator.sh with its own directory and port so it never
// collides with the demo's or the e2e suite's.
type Emulator struct {
	script string
	env    []string
	Host   string
	Dir    string
}

// emulatorAvailable reports why the emulator cannot run, or "".
func emulatorAvailable(repo string) string {
	if _, err := os.Stat(filepath.Join(repo, "scripts", "pubsub-emulator.sh")); err != nil {
		return "scripts/pubsub-emulator.sh is missing"
	}
	for _, bin := range []string{"gcloud", "java"} {
		if _, err := exec.LookPath(bin); err != nil {
			return bin + " is not installed"
		}
	}
	return ""
}

// startEmulator starts a fresh emulator in dir (stopping a previous one
// there).
func startEmulator(ctx context.Context, repo, dir string, port int) (*Emulator, error) {
	e := &Emulator{
		script: filepath.Join(repo, "scripts", "pubsub-emulator.sh"),
		env: append(os.Environ(), "EVENTRELAY_PUBSUB_DIR="+dir, "EVENTRELAY_PUBSUB_PORT="+strconv.Itoa(port),
			"PUBSUB_PROJECT_ID="+Project),
		Host: "127.0.0.1:" + strconv.Itoa(port),
		Dir:  dir,
	}
	if err := e.run(ctx, "fresh"); err != nil {
		return nil, err
	}
	return e, nil
}

// Restart replaces the emulator by a fresh JVM (it leaks a thread per
// ordering key per ordered subscription).
func (e *Emulator) Restart(ctx context.Context) error { return e.run(ctx, "fresh") }

// Stop stops the emulator's process group.
func (e *Emulator) Stop() error { return e.run(context.Background(), "stop") }

// PGID returns the emulator's process group (for CPU accounting).
func (e *Emulator) PGID() int {
	b, err := os.ReadFile(filepath.Join(e.Dir, "emulator.pid"))
	if err != nil {
		return 0
	}
	n, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	return n
}

func (e *Emulator) run(ctx context.Context, verb string) error {
	cmd := exec.CommandContext(ctx, e.script, verb)
	cmd.Env = e.env
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("pubsub-emulator.sh %s: %w: %s", verb, err, strings.TrimSpace(string(out)))
	}
	return nil
}

// Backend connects a client to the emulator through the double.
func (e *Emulator) Backend(ctx context.Context, rtt time.Duration) (*Backend, error) {
	return newBackend(ctx, "emulator", e.Host, rtt, nil)
}

// emulatorVersion asks gcloud for the installed component version.
func emulatorVersion(ctx context.Context) string {
	out, err := exec.CommandContext(ctx, "gcloud", "version").Output()
	if err != nil {
		return ""
	}
	for _, l := range strings.Split(string(out), "\n") {
		if strings.HasPrefix(l, "pubsub-emulator") {
			return strings.TrimSpace(strings.TrimPrefix(l, "pubsub-emulator"))
		}
	}
	return ""
}
