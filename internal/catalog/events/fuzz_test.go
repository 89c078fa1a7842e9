package events

import (
	"errors"
	"testing"

	"google.golang.org/protobuf/proto"

	catalogv1 "github.com/eventrelay/eventrelay/api/catalog/v1"
)

// FuzzDecode: any message body either decodes into an envelope whose
// identity and payload agree, or fails with ErrMalformed; it never panics.
func FuzzDecode(f *testing.F) {
	for _, p := range []struct {
		typ string
		msg proto.Message
	}{
		{TypeVideoCreated, &catalogv1.VideoCreated{Video: video(3)}},
		{TypeVideoUpdated, &catalogv1.VideoUpdated{Video: video(3)}},
		{TypeVideoDeleted, &catalogv1.VideoDeleted{Video: video(3)}},
	} {
		body, err := Encode(meta(p.typ, 3), p.msg)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(body)
		f.Add(body[:len(body)/2])
	}
	f.Add([]byte{})
	f.Add([]byte("not a protobuf"))
	f.Add([]byte{0x0a, 0xff, 0xff, 0xff, 0xff, 0x0f})
	f.Fuzz(func(t *testing.T, body []byte) {
		ev, err := Decode(body)
		if err != nil {
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("error not classified as ErrMalformed: %v", err)
			}
			return
		}
		v := VideoOf(ev)
		if ev.GetEventId() == "" || ev.GetAggregateVersion() < 1 || v.GetId() != ev.GetAggregateId() || v.GetVersion() != ev.GetAggregateVersion() {
			t.Fatalf("accepted an envelope that does not agree with itself: %v", ev)
		}
	})
}
