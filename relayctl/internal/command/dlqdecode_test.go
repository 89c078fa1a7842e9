package command

import (
	"encoding/base64"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"cloud.google.com/go/pubsub/v2"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/descriptorpb"
	"google.golang.org/protobuf/types/dynamicpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/eventrelay/eventrelay/internal/gpubsub/gpubsubtest"
	"github.com/eventrelay/eventrelay/relayctl/hook"
)

// ordersDescriptorSet writes what `buf build -o` makes of a contract that
// is not the tests' service's, orders/v1/events.proto with orders.v1.OrderPlaced
// (importing google/protobuf/timestamp.proto, which buf includes), and
// returns the file and an OrderPlaced body built from those descriptors
// alone, as a producer in another module would send it.
func ordersDescriptorSet(t *testing.T) (string, []byte) {
	t.Helper()
	field := func(name, jsonName string, n int32, typ descriptorpb.FieldDescriptorProto_Type) *descriptorpb.FieldDescriptorProto {
		return &descriptorpb.FieldDescriptorProto{
			Name: proto.String(name), JsonName: proto.String(jsonName), Number: proto.Int32(n),
			Label: descriptorpb.FieldDescriptorProto_LABEL_OPTIONAL.Enum(), Type: typ.Enum(),
		}
	}
	placedAt := field("placed_at", "placedAt", 3, descriptorpb.FieldDescriptorProto_TYPE_MESSAGE)
	placedAt.TypeName = proto.String(".google.protobuf.Timestamp")
	set := &descriptorpb.FileDescriptorSet{File: []*descriptorpb.FileDescriptorProto{
		protodesc.ToFileDescriptorProto(timestamppb.File_google_protobuf_timestamp_proto),
		{
			Name: proto.String("orders/v1/events.proto"), Package: proto.String("orders.v1"), Syntax: proto.String("proto3"),
			Dependency: []string{"google/protobuf/timestamp.proto"},
			MessageType: []*descriptorpb.DescriptorProto{{
				Name: proto.String("OrderPlaced"),
				Field: []*descriptorpb.FieldDescriptorProto{
					field("order_id", "orderId", 1, descriptorpb.FieldDescriptorProto_TYPE_STRING),
					field("amount_cents", "amountCents", 2, descriptorpb.FieldDescriptorProto_TYPE_INT64),
					placedAt,
				},
			}},
		},
	}}
	b, err := proto.Marshal(set)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "orders.binpb")
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	files, err := protodesc.NewFiles(set)
	if err != nil {
		t.Fatal(err)
	}
	d, err := files.FindDescriptorByName("orders.v1.OrderPlaced")
	if err != nil {
		t.Fatal(err)
	}
	msg := dynamicpb.NewMessage(d.(protoreflect.MessageDescriptor))
	fields := msg.Descriptor().Fields()
	msg.Set(fields.ByName("order_id"), protoreflect.ValueOfString("o-1"))
	msg.Set(fields.ByName("amount_cents"), protoreflect.ValueOfInt64(1250))
	ts := msg.Mutable(fields.ByName("placed_at")).Message()
	ts.Set(ts.Descriptor().Fields().ByName("seconds"), protoreflect.ValueOfInt64(time.Date(2026, 11, 23, 9, 30, 0, 0, time.UTC).Unix()))
	body, err := proto.Marshal(msg)
	if err != nil {
		t.Fatal(err)
	}
	return path, body
}

// A dead letter of a service that is not this binary's, on pstest: shown
// decoded with its descriptor set (whichever hooks the binary has), its
// attributes listed; a body that does not parse and a type the set lacks
// are reported per message while the listing goes on; without a
// descriptor set and without a decoder hook the raw body is shown,
// labelled undecoded.
func TestDLQShowDecodesAnyEnvelopeWithADescriptorSet(t *testing.T) {
	t.Parallel()
	ps := gpubsubtest.New(t)
	ps.Topic(t, "orders.events")
	ps.Topic(t, "orders.events.dlq")
	// The projection's subscription dead-letters into orders.events.dlq:
	// what makes orders.events.dlq-sub a dead-letter subscription.
	ps.Subscription(t, "orders.summaries", "orders.events", gpubsubtest.SubscriptionOptions{DeadLetterTopic: "orders.events.dlq", MaxDeliveryAttempts: 5})
	ps.Subscription(t, "orders.events.dlq-sub", "orders.events.dlq", gpubsubtest.SubscriptionOptions{})
	descriptors, body := ordersDescriptorSet(t)
	garbage := []byte("\xff\x00 not a protobuf")
	attrs := func(eventID string) map[string]string {
		return map[string]string{"event_id": eventID, "event_type": "orders.order.placed", "aggregate_type": "order", "aggregate_id": "o-1",
			"version": "1", "error_reason": "mapping_error", "projection": "order_summaries"}
	}
	publish(t, ps, "orders.events.dlq",
		&pubsub.Message{Data: body, Attributes: attrs("e-good")},
		&pubsub.Message{Data: garbage, Attributes: attrs("e-garbage")})
	env := psEnv(ps, nil)
	sub := []string{"dlq", "show", "--subscription", "orders.events.dlq-sub"}
	withSet := append(append([]string{}, sub...), "--descriptor-set", descriptors, "--message-type", "orders.v1.OrderPlaced")

	for name, hooks := range map[string]hook.Hooks{"no hooks": {}, "another service's hooks": itemHooks()} {
		r := relayctlWith(t, hooks, env, withSet...)
		t.Logf("%s:\n%s%s", name, r.stdout, r.stderr)
		for _, want := range []string{`"orderId": "o-1"`, `"amountCents": "1250"`, `"placedAt": "2026-11-23T09:30:00Z"`,
			"event_type = orders.order.placed", "error_reason = mapping_error",
			"body does not decode: not a orders.v1.OrderPlaced"} {
			if r.code != ExitOK || !strings.Contains(r.stdout, want) {
				t.Fatalf("%s: dlq show with the orders descriptor set: exit %d, output lacks %q", name, r.code, want)
			}
		}
	}

	// JSON: the decoded body per message, the decode error of the other.
	r := relayctlWith(t, hook.Hooks{}, env, append(withSet, "--json")...)
	var shown []struct {
		EventID     string          `json:"event_id"`
		Envelope    json.RawMessage `json:"envelope"`
		DecodeError string          `json:"decode_error"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &shown); err != nil || len(shown) != 2 {
		t.Fatalf("dlq show --json: %d messages, err %v", len(shown), err)
	}
	for _, s := range shown {
		switch s.EventID {
		case "e-good":
			var body map[string]any
			if err := json.Unmarshal(s.Envelope, &body); err != nil || body["orderId"] != "o-1" || body["amountCents"] != "1250" || s.DecodeError != "" {
				t.Errorf("good body in JSON: envelope %s, error %q", s.Envelope, s.DecodeError)
			}
		case "e-garbage":
			if s.Envelope != nil || !strings.Contains(s.DecodeError, "not a orders.v1.OrderPlaced") {
				t.Errorf("garbage body in JSON: envelope %s, error %q", s.Envelope, s.DecodeError)
			}
		}
	}

	// A type the set lacks: named for each message, the listing continues.
	r = relayctlWith(t, hook.Hooks{}, env, append(append([]string{}, sub...), "--descriptor-set", descriptors, "--message-type", "orders.v1.Nope")...)
	if r.code != ExitOK || strings.Count(r.stdout, "body does not decode: --message-type orders.v1.Nope is not a message of descriptor set") != 2 ||
		!strings.Contains(r.stdout, "it has google.protobuf.Timestamp, orders.v1.OrderPlaced") {
		t.Fatalf("dlq show with a type the set lacks: exit %d, want both messages listed with the error", r.code)
	}

	// No descriptor set, no decoder hook: attributes and the raw bytes.
	r = relayctlWith(t, hook.Hooks{}, env, sub...)
	if r.code != ExitOK || strings.Count(r.stdout, "body (undecoded: no descriptor set given") != 2 ||
		!strings.Contains(r.stdout, base64.StdEncoding.EncodeToString(body)) || !strings.Contains(r.stdout, "aggregate_id = o-1") {
		t.Fatalf("dlq show without a descriptor set: exit %d, want both bodies in base64, labelled undecoded", r.code)
	}

	// Bad input: exit 2 before anything is pulled.
	notASet := writeFile(t, "not a descriptor set")
	for _, args := range [][]string{
		append(append([]string{}, sub...), "--descriptor-set", notASet, "--message-type", "orders.v1.OrderPlaced"),
		append(append([]string{}, sub...), "--descriptor-set", filepath.Join(t.TempDir(), "missing.binpb"), "--message-type", "orders.v1.OrderPlaced"),
		append(append([]string{}, sub...), "--message-type", "orders.v1.OrderPlaced"),
		append(append([]string{}, sub...), "--descriptor-set", descriptors),
	} {
		if r := relayctlWith(t, hook.Hooks{}, env, args...); r.code != ExitUsage || !strings.Contains(r.stderr, "--descriptor-set") {
			t.Errorf("%q: exit %d, stderr %q; want %d naming --descriptor-set", args, r.code, r.stderr, ExitUsage)
		}
	}
}
