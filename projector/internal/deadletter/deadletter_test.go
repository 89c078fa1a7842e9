package deadletter

import (
	"errors"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/eventrelay/eventrelay/contract"
	"github.com/eventrelay/eventrelay/projection"
)

// A dead letter keeps the original attributes, says why, and cuts an
// error over Pub/Sub's attribute limit without splitting a character.
func TestAttributes(t *testing.T) {
	cause := errors.New(strings.Repeat("é", contract.MaxAttributeValueBytes)) // 2 bytes each
	a := Attributes(Original{ID: "m-1", Attributes: map[string]string{"event_id": "e-1"}, DeliveryAttempt: 3},
		"items", projection.PayloadInvalid, cause)
	if a["event_id"] != "e-1" || a[contract.AttrErrorReason] != "payload_invalid" || a[contract.AttrProjection] != "items" ||
		a[contract.AttrDeliveryAttempt] != "3" || a[contract.AttrOriginalMessageID] != "m-1" || a[contract.AttrDeadLetteredAt] == "" {
		t.Errorf("attributes %v", a)
	}
	if e := a[contract.AttrError]; len(e) != contract.MaxAttributeValueBytes || !utf8.ValidString(e) {
		t.Errorf("error attribute: %d bytes, valid UTF-8 %v; want %d, true", len(e), utf8.ValidString(e), contract.MaxAttributeValueBytes)
	}
}
