package embedded

import (
	"context"

	"cloud.google.com/go/pubsub/v2"
	"google.golang.org/api/option"

	"github.com/eventrelay/eventrelay/internal/gpubsub"
	"github.com/eventrelay/eventrelay/settings"
)

// NewPubSubClient connects to the Pub/Sub p names (empty EmulatorHost:
// Cloud Pub/Sub with application default credentials, or
// PUBSUB_EMULATOR_HOST when set, as pubsub.NewClient does); extra options are
// appended (e.g. gRPC dial options). An invalid project id is an error
// naming it; a failure to connect is classified (projection.Classify
// reads its reason).
func NewPubSubClient(ctx context.Context, p settings.PubSub, extra ...option.ClientOption) (*pubsub.Client, error) {
	return gpubsub.NewClient(ctx, p, extra...)
}
