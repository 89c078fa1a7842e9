package events

import (
	"testing"

	"google.golang.org/protobuf/proto"

	catalogv1 "github.com/eventrelay/eventrelay/examples/catalog-demo/api/catalog/v1"
	"github.com/eventrelay/eventrelay/projection"
)

// FuzzDecode: any message body either decodes (new envelope or
// catalog.v1.Event) into a declared event with its identity and a payload
// message, or fails permanently (dead-lettered); it never panics.
func FuzzDecode(f *testing.F) {
	for _, p := range []struct {
		typ string
		msg proto.Message
	}{
		{TypeVideoCreated, &catalogv1.VideoCreated{Video: video(3)}},
		{TypeVideoUpdated, &catalogv1.VideoUpdated{Video: video(3)}},
		{TypeVideoDeleted, &catalogv1.VideoDeleted{Video: video(3)}},
	} {
		body, err := Codec.Encode(meta(p.typ, 3), p.msg)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(body)
		f.Add(body[:len(body)/2])
	}
	old := catalogV1Event(func(*catalogv1.Event) {})
	f.Add(old)
	f.Add(old[:len(old)/2])
	f.Add([]byte{})
	f.Add([]byte("not a protobuf"))
	f.Add([]byte{0x0a, 0xff, 0xff, 0xff, 0xff, 0x0f})
	f.Fuzz(func(t *testing.T, body []byte) {
		env, err := Codec.Decode(body)
		if err != nil {
			if _, permanent := projection.Classify(err); !permanent {
				t.Fatalf("error not permanent: %v", err)
			}
			return
		}
		if _, err := Codec.EventType(env.Type); err != nil {
			t.Fatalf("accepted an undeclared event type: %+v", env)
		}
		if env.EventID == "" || env.AggregateVersion < 1 {
			t.Fatalf("accepted an envelope without identity: %+v", env)
		}
		// The codec promises a declared payload message; whether it
		// carries the aggregate's video is the projections' check.
		if _, ok := env.Payload.(proto.Message); !ok {
			t.Fatalf("payload %T is not a message", env.Payload)
		}
	})
}
