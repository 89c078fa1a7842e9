package admin

import (
	"google.golang.org/protobuf/proto"

	"github.com/eventrelay/eventrelay/internal/catalog/events"
)

// Decoder decodes the catalog envelope (catalog.v1.Event).
type Decoder struct{}

// Decode implements hook.Decoder.
func (Decoder) Decode(body []byte, _ map[string]string) (proto.Message, error) {
	return events.Decode(body)
}
