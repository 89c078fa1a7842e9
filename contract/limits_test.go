package contract_test

import (
	"strings"
	"testing"

	pb "cloud.google.com/go/pubsub/v2/apiv1/pubsubpb"
	"google.golang.org/protobuf/proto"

	"github.com/eventrelay/eventrelay/contract"
)

func TestMessageSizeIsTheEncodedSize(t *testing.T) {
	for _, m := range []*pb.PubsubMessage{
		{},
		{Data: []byte("x")},
		{Data: make([]byte, 300), OrderingKey: "k", Attributes: map[string]string{"a": "", "": "b", "event_id": strings.Repeat("v", 200)}},
	} {
		if got, want := contract.MessageSize(m.Data, m.Attributes, m.OrderingKey), proto.Size(m); got != want {
			t.Errorf("MessageSize(%v) = %d, proto.Size %d", m, got, want)
		}
	}
}

func TestCheckMessage(t *testing.T) {
	ok := map[string]string{"x-tenant": "t1", strings.Repeat("k", 256): strings.Repeat("v", 1024)}
	if err := contract.CheckMessage([]byte("body"), ok, strings.Repeat("k", 1024), 0); err != nil {
		t.Errorf("a message at every limit: %v", err)
	}
	for want, attrs := range map[string]map[string]string{
		`"GOOG-x": keys starting with "goog" are reserved`: {"GOOG-x": "v"},
		`attribute "v" value is not valid UTF-8`:           {"v": "\xc3"},
	} {
		if err := contract.CheckAttributes(attrs); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("CheckAttributes(%q) = %v, want %q", attrs, err, want)
		}
	}
	if err := contract.CheckMessage(make([]byte, 100), nil, "", 50); err == nil || !strings.Contains(err.Error(), "limit 50") {
		t.Errorf("CheckMessage over maxBytes: %v", err)
	}
}

func TestReservedKey(t *testing.T) {
	for k, want := range map[string]bool{"goog": true, "GoOgle-trace": true, "googclient_x": true, "go": false, "xgoog": false, "": false} {
		if got := contract.ReservedKey(k); got != want {
			t.Errorf("ReservedKey(%q) = %t, want %t", k, got, want)
		}
	}
}
