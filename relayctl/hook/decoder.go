package hook

import "google.golang.org/protobuf/proto"

// Decoder decodes a dead-lettered message body into the service's
// envelope, for `relayctl dlq show` without --descriptor-set. attrs are
// the message's Pub/Sub attributes (event_type, schema_version, ...).
type Decoder interface {
	Decode(body []byte, attrs map[string]string) (proto.Message, error)
}

// DecoderFunc adapts a function to Decoder, e.g.
// hook.DecoderFunc(codec.DecodeEnvelope) for an envelope.Codec.
type DecoderFunc func(body []byte, attrs map[string]string) (proto.Message, error)

// Decode implements Decoder.
func (f DecoderFunc) Decode(body []byte, attrs map[string]string) (proto.Message, error) {
	return f(body, attrs)
}
