package envelope_test

import (
	"context"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/eventrelay/eventrelay/envelope"
	"github.com/eventrelay/eventrelay/projection"
)

// valued is what a StringValue payload offers and an Empty one does not.
type valued interface {
	proto.Message
	GetValue() string
}

// shown is what every payload of codec offers.
type shown interface {
	proto.Message
	String() string
}

func TestHandleAllRoutesEveryTypeTyped(t *testing.T) {
	c := codec(t)
	reg := projection.NewRegistry[projection.TxHandler]()
	var got []string
	err := envelope.HandleAll(reg, c, func(_ context.Context, _ pgx.Tx, ev *projection.Event, p shown) (projection.Outcome, error) {
		got = append(got, ev.Type+"="+p.(*wrapperspb.StringValue).GetValue())
		return projection.Applied, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if types := reg.Types(); len(types) != len(c.Types()) {
		t.Fatalf("registered %v, codec declares %v", types, c.Types())
	}
	ev, rt := resolveRenamed(t, c, reg, "typed")
	if out, err := rt.Handler.HandleTx(context.Background(), nil, ev); err != nil || out != projection.Applied {
		t.Fatalf("HandleTx = %v, %v", out, err)
	}
	if len(got) != 1 || got[0] != "test.item.renamed=typed" {
		t.Fatalf("handler saw %v", got)
	}
}

func TestHandleAllRefusesAPayloadWithoutTheInterface(t *testing.T) {
	reg := projection.NewRegistry[projection.TxHandler]()
	err := envelope.HandleAll(reg, codec(t), func(context.Context, pgx.Tx, *projection.Event, valued) (projection.Outcome, error) {
		return projection.Applied, nil
	})
	if err == nil || !strings.Contains(err.Error(), "test.item.deleted") || !strings.Contains(err.Error(), "emptypb") {
		t.Fatalf("HandleAll over a payload without GetValue: %v", err)
	}
	if types := reg.Types(); len(types) != 0 {
		t.Fatalf("registered %v after refusing", types)
	}
	if err := envelope.HandleAll(reg, codec(t), func(context.Context, pgx.Tx, *projection.Event, proto.Message) (projection.Outcome, error) {
		return projection.Applied, nil
	}); err != nil {
		t.Fatalf("proto.Message fits every payload: %v", err)
	}
}

// HandleAllExec routes every declared type to an ExecFunc, so the engine
// can queue a batch's statements; it refuses what HandleAll refuses.
func TestHandleAllExecRoutesEveryTypeToABatchHandler(t *testing.T) {
	c := codec(t)
	reg := projection.NewRegistry[projection.TxHandler]()
	var got []string
	err := envelope.HandleAllExec(reg, c, func(_ context.Context, _ projection.DBTX, ev *projection.Event, p shown) error {
		got = append(got, ev.Type+"="+p.(*wrapperspb.StringValue).GetValue())
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if types := reg.Types(); len(types) != len(c.Types()) {
		t.Fatalf("registered %v, codec declares %v", types, c.Types())
	}
	ev, rt := resolveRenamed(t, c, reg, "typed")
	bh, ok := rt.Handler.(projection.TxBatchHandler)
	if !ok {
		t.Fatalf("handler %T is not a TxBatchHandler", rt.Handler)
	}
	// No statement was made, so nothing is sent and nothing changed.
	if res, err := bh.HandleTxBatch(context.Background(), nil, []*projection.Event{ev}); err != nil || res[0].Err != nil || res[0].Outcome != projection.Stale {
		t.Fatalf("HandleTxBatch = %v, %v, want stale", res, err)
	}
	if len(got) != 1 || got[0] != "test.item.renamed=typed" {
		t.Fatalf("handler saw %v", got)
	}
	err = envelope.HandleAllExec(projection.NewRegistry[projection.TxHandler](), c, func(context.Context, projection.DBTX, *projection.Event, valued) error { return nil })
	if err == nil || !strings.Contains(err.Error(), "test.item.deleted") {
		t.Fatalf("HandleAllExec over a payload without GetValue: %v", err)
	}
}
