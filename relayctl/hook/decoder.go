package hook

import "google.golang.org/protobuf/proto"

// Decoder decodes a dead-lettered message body into the service's
// envelope, for `relayctl dlq show` without --descriptor-set. attrs are
// the message's Pub/Sub attributes (event_type, schema_version, ...).
type Decoder interface {
	Decode(body []byte, attrs map[string]string) (proto.Message, error)
}
