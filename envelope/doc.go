// Package envelope is the message body of a service's events, declared once:
//
//	codec, err := envelope.New(envelope.Aggregate("orders.order", "orders.order.events",
//		envelope.Type[*ordersv1.OrderPlaced]("orders.order.placed"),
//		envelope.Type[*ordersv1.OrderPaid]("orders.order.paid"),
//	))
//
// gives the outbox.Encoder (Codec.Encode), the outbox event of a write
// (Codec.Event: its event type, schema version, aggregate type and topic
// from the payload's declaration), the projection decoder (Codec.Decode,
// Codec.EventType), the names (Codec.Types, Codec.TypeOf,
// Codec.AggregateType, Codec.Topic, Codec.Topics) and typed handler
// registration (Handle). A codec that only reads another service's events
// may declare its types without an Aggregate.
//
// # The envelope
//
// Every body is one eventrelay.envelope.v1.Envelope (package
// api/eventrelay/envelope/v1, MessageType): the identity the outbox writer
// filled (event id and type, aggregate type, id and version, schema version,
// occurred_at), the producer, the W3C trace context, and the domain message
// in a google.protobuf.Any. The codec is a standard proto shipped here
// rather than a codec over each service's own oneof envelope because:
//
//   - a service writes no envelope proto and no code around it: its event
//     messages are plain messages, declared in Go next to their type names;
//   - the envelope is the same for every service, so tools (relayctl dlq
//     show, tests, the relay) read any body without the service's oneof;
//   - the Any's type URL names the payload message, so Decode checks that
//     event_type and payload agree without a per-service switch;
//   - adding an event type is one Type line, not a oneof field plus cases in
//     Encode, Decode and an accessor; its aggregate type and topic come
//     with the Aggregate it is declared in.
//
// The cost is the type URL in every body (about 40 bytes) and a payload
// that protobuf tooling sees as Any until it is unpacked; both are small
// next to not keeping four hand-written switches in step.
//
// Decode refuses, as projection.Permanent errors, a body that is not an
// Envelope, misses its identity, carries an event type the codec does not
// declare (event_type_unknown) or a payload of another message than the one
// declared for its event type (payload_invalid).
//
// # A service's former envelope
//
// A service that published its own envelope before moving onto this codec
// still has bodies of it in its outbox, subscriptions and dead-letter
// topics. Codec.WithLegacy(Legacy(read)) decodes them: read returns the
// identity and the payload of the former envelope message, and the codec
// checks the result as it checks an Envelope. A body is given to read only
// when it is not an Envelope (it does not parse as one or carries no
// payload); a body that is neither is payload_invalid, its error naming
// both formats. Encode never writes the former envelope.
package envelope
