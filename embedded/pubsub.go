package embedded

import (
	"context"

	"cloud.google.com/go/pubsub/v2"
	"google.golang.org/api/option"

	"github.com/eventrelay/eventrelay/internal/gpubsub"
)

// PubSub says which Pub/Sub a process talks to.
type PubSub struct {
	// ProjectID is the project (required; a valid project id).
	ProjectID string
	// EmulatorHost ("127.0.0.1:8085") is an emulator or a test double:
	// plaintext, no credentials. Empty: Cloud Pub/Sub with application
	// default credentials, or PUBSUB_EMULATOR_HOST when set, as
	// pubsub.NewClient does.
	EmulatorHost string
}

// NewPubSubClient connects to the Pub/Sub p names; extra options are
// appended (e.g. gRPC dial options). An invalid project id is an error
// naming it; a failure to connect is classified (projection.Classify
// reads its reason).
func NewPubSubClient(ctx context.Context, p PubSub, extra ...option.ClientOption) (*pubsub.Client, error) {
	return gpubsub.NewClient(ctx, gpubsub.Config{ProjectID: p.ProjectID, EmulatorHost: p.EmulatorHost}, extra...)
}
