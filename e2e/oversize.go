package e2e

import (
	"context"
	"fmt"
	"strconv"

	"cloud.google.com/go/pubsub/v2"
	"google.golang.org/protobuf/encoding/protowire"

	"github.com/eventrelay/eventrelay/contract"
	"github.com/eventrelay/eventrelay/e2e/e2edb"
	"github.com/eventrelay/eventrelay/embedded"
)

// oversizeField is the field number of the padding: unknown to
// eventrelay.envelope.v1.Envelope, so the body still decodes (proto keeps unknown
// fields) and the event is a duplicate the inbox absorbs.
const oversizeField = 100000

// PublishOversize re-publishes n already published events, each padded to
// size bytes with an unknown protobuf field, straight to the main topic
// with the PoisonAttr marker "oversize" (the order checker skips them).
// Several such messages waiting on one subscription once made the
// projector's StreamingPull response exceed the client's 20 MiB receive
// limit and stop it; now each must be received and absorbed as a
// duplicate. It returns how many were published.
func (s *Stack) PublishOversize(ctx context.Context, n, size int) (int, error) {
	rows, err := e2edb.New(s.Stats.Pool).PublishedEnvelopes(ctx, int32(n))
	if err != nil {
		return 0, fmt.Errorf("reading published events: %w", err)
	}
	cl, err := embedded.NewPubSubClient(ctx, s.PubSubConfig())
	if err != nil {
		return 0, err
	}
	defer cl.Close()
	pub := cl.Publisher(Topic)
	pub.EnableMessageOrdering = true
	defer pub.Stop()
	for _, r := range rows {
		body := protowire.AppendTag(append([]byte(nil), r.Payload...), oversizeField, protowire.BytesType)
		body = protowire.AppendBytes(body, make([]byte, max(0, size-len(r.Payload)-16)))
		res := pub.Publish(ctx, &pubsub.Message{
			Data:        body,
			OrderingKey: r.OrderingKey,
			Attributes: map[string]string{
				PoisonAttr:                 "oversize",
				contract.AttrEventID:       r.EventID.String(),
				contract.AttrEventType:     r.EventType,
				contract.AttrAggregateType: r.AggregateType,
				contract.AttrAggregateID:   r.AggregateID,
				contract.AttrVersion:       strconv.FormatInt(r.AggregateVersion, 10),
				contract.AttrSchemaVersion: strconv.Itoa(int(r.SchemaVersion)),
			},
		})
		if _, err := res.Get(ctx); err != nil {
			return 0, fmt.Errorf("publishing a %d-byte message: %w", len(body), err)
		}
	}
	return len(rows), nil
}
