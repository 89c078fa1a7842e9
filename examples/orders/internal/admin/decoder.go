package admin

import (
	"google.golang.org/protobuf/proto"

	"github.com/eventrelay/eventrelay/relayctl/hook"

	"github.com/eventrelay/eventrelay/examples/orders/internal/events"
	"github.com/eventrelay/eventrelay/examples/orders/migrations"
)

// Decoder decodes the orders envelope (orders.v1.OrderEvent) for `dlq
// show` without --descriptor-set.
type Decoder struct{}

var _ hook.Decoder = Decoder{}

// Decode implements hook.Decoder.
func (Decoder) Decode(body []byte, _ map[string]string) (proto.Message, error) {
	return events.Decode(body)
}

// Hooks are the orders service's relayctl hooks, with its migration sets
// (eventrelay's, then the orders service's) for `migrate` and its schema,
// the default of --schema.
func Hooks() hook.Hooks {
	return hook.Hooks{Rebuilder: Rebuilder{}, Verifier: Verifier{}, Decoder: Decoder{}, Migrations: migrations.Sets, Schema: "orders"}
}
