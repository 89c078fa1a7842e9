package contract_test

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/eventrelay/eventrelay/contract"
)

func Example() {
	id := contract.Identity{
		EventID:   uuid.MustParse("0b7e6f0a-4d5c-4a3b-9c1d-2e3f4a5b6c7d"),
		EventType: "orders.order.placed", AggregateType: "order", AggregateID: "order-1",
		AggregateVersion: 3, SchemaVersion: 1,
		OccurredAt: time.Date(2026, 1, 2, 3, 4, 5, 6, time.FixedZone("CET", 3600)),
	}
	attrs := id.Attributes() // the producer: the message's attributes
	fmt.Println(attrs[contract.AttrVersion], attrs[contract.AttrOccurredAt])

	got, err := contract.Parse(attrs) // the consumer
	fmt.Println(got.EventType, got.AggregateVersion, err)

	delete(attrs, contract.AttrEventType)
	_, err = contract.Parse(attrs)
	var missing *contract.MissingError
	fmt.Println(errors.As(err, &missing), err)
	// Output:
	// 3 2026-01-02T02:04:05.000000006Z
	// orders.order.placed 3 <nil>
	// true missing message attributes: event_type
}

func TestParseRefusesInvalidValues(t *testing.T) {
	good := contract.Identity{EventID: uuid.New(), EventType: "t", AggregateID: "a", AggregateVersion: 1, SchemaVersion: 1}.Attributes()
	for key, value := range map[string]string{
		contract.AttrEventID: uuid.Nil.String(), contract.AttrVersion: "0", contract.AttrSchemaVersion: "x",
	} {
		attrs := map[string]string{}
		for k, v := range good {
			attrs[k] = v
		}
		attrs[key] = value
		_, err := contract.Parse(attrs)
		var invalid *contract.InvalidError
		if !errors.As(err, &invalid) || invalid.Key != key {
			t.Errorf("%s=%q: %v, want an InvalidError naming it", key, value, err)
		}
	}
	attrs := map[string]string{}
	for k, v := range good {
		attrs[k] = v
	}
	attrs[contract.AttrOccurredAt] = "yesterday"
	if _, err := contract.Parse(attrs); err != nil {
		t.Errorf("an unparsable occurred_at is informational: %v", err)
	}
}
