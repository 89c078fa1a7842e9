package consistency_test

import (
	"context"
	"testing"
	"time"

	kerrors "github.com/go-kratos/kratos/v2/errors"
	"github.com/go-kratos/kratos/v2/transport"

	"github.com/eventrelay/eventrelay/consistency"
	"github.com/eventrelay/eventrelay/relaytest"
)

// TestAwaitAnswersKratosErrors: a read with no token reads at once, one
// with a malformed token or an id the read model cannot hold is a 400
// naming the header, one the read model has not reached is a 503
// READ_MODEL_BEHIND after the wait, and one it holds passes.
func TestAwaitAnswersKratosErrors(t *testing.T) {
	t.Parallel()
	db := relaytest.NewDB(t, relaytest.Options{Schema: "kv"})
	ctx := t.Context()
	if _, err := db.Pool.Exec(ctx, `CREATE TABLE kv (id uuid PRIMARY KEY, version bigint NOT NULL)`); err != nil {
		t.Fatal(err)
	}
	const id = "0193a5b0-0000-7000-8000-000000000001"
	if _, err := db.Pool.Exec(ctx, `INSERT INTO kv VALUES ($1, 2)`, id); err != nil {
		t.Fatal(err)
	}
	w := consistency.NewWaiter(db.Pool, consistency.WaiterOptions{DefaultWait: 200 * time.Millisecond})
	w.Register("kv-model", consistency.TableLookup(db.Pool, "kv", "id", "version"))
	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	go w.Run(runCtx)

	read := func(tokens ...string) context.Context {
		r := request{in: header{}, out: header{}}
		for _, s := range tokens {
			r.in.Add(consistency.TokenHeader, s)
		}
		return transport.NewServerContext(ctx, r)
	}
	tok := func(id string, v int64) string {
		return consistency.Token{AggregateType: "kv", AggregateID: id, AggregateVersion: v}.String()
	}
	for _, c := range []struct {
		name   string
		ctx    context.Context
		waited bool
		code   int
		reason string
	}{
		{"no token", read(), false, 0, ""},
		{"malformed", read("not a token"), false, 400, consistency.ReasonInvalidToken},
		{"not a key of the read model", read(tok("k1", 1)), false, 400, consistency.ReasonInvalidToken},
		{"behind", read(tok(id, 3)), false, 503, consistency.ReasonReadModelBehind},
		{"held", read(tok(id, 2)), true, 0, ""},
	} {
		waited, err := consistency.Await(c.ctx, w, "kv-model")
		code := 0
		if err != nil {
			code = int(kerrors.Code(err))
		}
		if waited != c.waited || code != c.code || kerrors.Reason(err) != c.reason {
			t.Errorf("%s: Await = %v, %v; want waited %v, code %d, reason %q", c.name, waited, err, c.waited, c.code, c.reason)
		}
	}
	if waited, err := consistency.Await(read(tok(id, 3)), nil, "kv-model"); waited || err != nil {
		t.Errorf("Await without a waiter = %v, %v; want an immediate read", waited, err)
	}
}
