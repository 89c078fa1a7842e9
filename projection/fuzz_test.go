package projection_test

import (
	"testing"

	"github.com/google/uuid"

	"github.com/eventrelay/eventrelay/contract"
	"github.com/eventrelay/eventrelay/projection"
)

// FuzzParseAttributes: any attribute values either parse into an identity
// the engine can use (a non-nil UUID, since the inbox dedupes by event id;
// version and schema version >= 1) or fail with a permanent attributes_missing / payload_invalid error (the message
// is dead-lettered with that reason); never a panic.
func FuzzParseAttributes(f *testing.F) {
	good := attrs(uuid.MustParse("0196f0a0-0000-7000-8000-000000000001"))
	f.Add(good["event_id"], good["event_type"], good["aggregate_id"], good["version"], good["schema_version"], "2026-11-21T01:02:03.000004Z")
	f.Add("", "", "", "", "", "")
	f.Add("not-a-uuid", "t", "a", "-1", "0", "yesterday")
	f.Add(good["event_id"], " ", "a", "9223372036854775808", "2147483648", "")
	f.Fuzz(func(t *testing.T, id, typ, agg, version, schema, occurred string) {
		ev, err := projection.ParseAttributes(map[string]string{
			contract.AttrEventID: id, contract.AttrEventType: typ, contract.AttrAggregateID: agg,
			contract.AttrVersion: version, contract.AttrSchemaVersion: schema, contract.AttrOccurredAt: occurred,
		})
		if err != nil {
			reason, permanent := projection.Classify(err)
			if !permanent || (reason != projection.AttributesMissing && reason != projection.PayloadInvalid) {
				t.Fatalf("error %v classified %s (permanent %v), want attributes_missing or payload_invalid", err, reason, permanent)
			}
			return
		}
		if ev.ID == uuid.Nil || ev.AggregateVersion < 1 || ev.SchemaVersion < 1 || ev.Type != typ {
			t.Fatalf("accepted attributes yield an unusable identity: %+v", ev)
		}
	})
}
