package gpubsub

import (
	"context"
	"errors"
	"fmt"
	"regexp"

	"cloud.google.com/go/pubsub/v2"
	pb "cloud.google.com/go/pubsub/v2/apiv1/pubsubpb"
	"google.golang.org/api/iterator"
	"google.golang.org/api/option"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
)

// Config says which Pub/Sub to talk to.
type Config struct {
	// ProjectID is required.
	ProjectID string `yaml:"project_id" env:"PUBSUB_PROJECT_ID"`
	// EmulatorHost ("127.0.0.1:8085") selects the emulator or a pstest
	// server: plaintext, no credentials. Empty means Cloud Pub/Sub with
	// application default credentials.
	EmulatorHost string `yaml:"emulator_host" env:"PUBSUB_EMULATOR_HOST"`
}

var projectID = regexp.MustCompile(`^[a-z][a-z0-9\-]{4,28}[a-z0-9]$`)

// Validate checks the configuration; errors name the key under prefix.
func (c *Config) Validate(prefix string) error {
	if c.ProjectID == "" {
		return fmt.Errorf("%s.project_id (PUBSUB_PROJECT_ID) is required", prefix)
	}
	if !projectID.MatchString(c.ProjectID) {
		return fmt.Errorf("%s.project_id (PUBSUB_PROJECT_ID) %q is not a valid project id", prefix, c.ProjectID)
	}
	return nil
}

// NewClient connects to Cloud Pub/Sub or, when EmulatorHost is set, to the
// emulator. extra options are appended (tests pass grpc dial options).
func NewClient(ctx context.Context, c Config, extra ...option.ClientOption) (*pubsub.Client, error) {
	if err := c.Validate("pubsub"); err != nil {
		return nil, err
	}
	var opts []option.ClientOption
	if c.EmulatorHost != "" {
		opts = append(opts,
			option.WithEndpoint(c.EmulatorHost),
			option.WithoutAuthentication(),
			option.WithGRPCDialOption(grpc.WithTransportCredentials(insecure.NewCredentials())),
			option.WithTelemetryDisabled(),
		)
	}
	opts = append(opts, extra...)
	cl, err := pubsub.NewClient(ctx, c.ProjectID, opts...)
	if err != nil {
		return nil, fmt.Errorf("creating pubsub client: %w", Classify(err))
	}
	return cl, nil
}

// TopicName is the full resource name of a topic id.
func TopicName(project, topic string) string {
	return "projects/" + project + "/topics/" + topic
}

// SubscriptionName is the full resource name of a subscription id.
func SubscriptionName(project, sub string) string {
	return "projects/" + project + "/subscriptions/" + sub
}

// SnapshotName is the full resource name of a snapshot id.
func SnapshotName(project, snap string) string {
	return "projects/" + project + "/snapshots/" + snap
}

// ErrNotFound is wrapped by lookups of missing resources.
var ErrNotFound = errors.New("pubsub resource not found")

// Probe checks that Pub/Sub answers: GetTopic on topic when set (which
// also proves the topic exists), else one page of ListTopics. Errors are
// classified.
func Probe(ctx context.Context, client *pubsub.Client, project, topic string) error {
	if topic != "" {
		_, err := client.TopicAdminClient.GetTopic(ctx, &pb.GetTopicRequest{Topic: TopicName(project, topic)})
		if err != nil {
			return fmt.Errorf("getting topic %s: %w", topic, Classify(err))
		}
		return nil
	}
	it := client.TopicAdminClient.ListTopics(ctx, &pb.ListTopicsRequest{Project: "projects/" + project, PageSize: 1})
	if _, err := it.Next(); err != nil && err != iterator.Done {
		return fmt.Errorf("listing topics: %w", Classify(err))
	}
	return nil
}
