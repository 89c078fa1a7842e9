package elastic_test

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/eventrelay/eventrelay/elastic"
	"github.com/eventrelay/eventrelay/elastic/elastictest"
	"github.com/eventrelay/eventrelay/envelope"
	"github.com/eventrelay/eventrelay/projection"
)

// A search projection of "notes": each event leaves the note's text at the
// event's version. The projector calls HandleBatch with each batch; here it
// is called directly, against the test server.
func Example() {
	srv := elastictest.New(elastictest.Options{}) // a real cluster: elastic.Config{URL: "https://..."}
	defer srv.Close()
	client, err := elastic.New(elastic.Config{URL: srv.URL})
	if err != nil {
		panic(err)
	}
	defer client.Close()

	codec := envelope.Must(envelope.Type[*wrapperspb.StringValue]("notes.note.written"))
	index := elastic.Index{Alias: "notes", Body: []byte(`{"mappings":{"dynamic":"strict","properties":{
		"text":{"type":"text"},"deleted":{"type":"boolean"},"deleted_at":{"type":"date"}}}}`)}
	document := func(ev *projection.Event, note *wrapperspb.StringValue) ([]byte, error) {
		return json.Marshal(map[string]any{"text": note.GetValue(), elastic.FieldDeleted: false})
	}
	reg, err := elastic.HandleAll(codec, client, index, document) // projector.Projection{..., Batch: reg}
	if err != nil {
		panic(err)
	}

	handler := reg.Handlers()[0] // one handler for every event type: a batch is one bulk request
	ctx := context.Background()
	event := func(version int64, text string) *projection.Event {
		return &projection.Event{AggregateID: "n-1", AggregateVersion: version, OccurredAt: time.Now(), Payload: wrapperspb.String(text)}
	}
	results, err := handler.HandleBatch(ctx, []*projection.Event{event(2, "second"), event(1, "first, redelivered late")})
	if err != nil {
		panic(err)
	}
	for _, r := range results {
		fmt.Println(r.Outcome, r.Err)
	}
	src, version, _, _ := client.Get(ctx, "notes", "n-1")
	fmt.Printf("n-1 v%d %s\n", version, src)
	// Output:
	// applied <nil>
	// stale <nil>
	// n-1 v2 {"deleted":false,"text":"second"}
}
