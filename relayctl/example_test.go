package relayctl_test

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/jackc/pgx/v5"
	"google.golang.org/protobuf/proto"

	"github.com/eventrelay/eventrelay/outbox"
	"github.com/eventrelay/eventrelay/relayctl"
	"github.com/eventrelay/eventrelay/relayctl/hook"
)

// ordersRebuilder is the hook an orders service writes: its rows to
// restatement events. Only CheckID runs in this example.
type ordersRebuilder struct{}

func (ordersRebuilder) Subject() hook.Subject {
	return hook.Subject{Noun: "order", Source: "orders.orders", Tombstone: "OrderCancelled", Topic: "orders.events",
		Encoder: func(outbox.Metadata, proto.Message) ([]byte, error) { return nil, errors.New("example") }}
}

func (ordersRebuilder) CheckID(id string) error {
	if len(id) != 10 {
		return fmt.Errorf("%q is not an order number (10 characters)", id)
	}
	return nil
}

func (ordersRebuilder) Count(context.Context, pgx.Tx, []string) (hook.Count, error) {
	return hook.Count{}, errors.New("example")
}

func (ordersRebuilder) Restate(context.Context, pgx.Tx, string, []string, int) ([]outbox.Event, error) {
	return nil, errors.New("example")
}

// A service's own relayctl main: the command set with its hooks. Here it
// runs two commands that stop before any database: one a hook refuses
// (a bad --ids), one this binary has no hook for (verify).
func Example() {
	hooks := relayctl.Hooks{Schema: "orders", Rebuilder: ordersRebuilder{}}
	ctx := context.Background()
	// In main: os.Exit(relayctl.Main(ctx, os.Args[1:], os.Stdout, os.Stderr, hooks))
	code := relayctl.Main(ctx, []string{"rebuild", "--ids", "42", "--dry-run"}, os.Stdout, os.Stdout, hooks)
	fmt.Println("exit", code)
	code = relayctl.Main(ctx, []string{"verify"}, os.Stdout, os.Stdout, hooks)
	fmt.Println("exit", code)
	// Output:
	// relayctl: --ids: "42" is not an order number (10 characters)
	// exit 2
	// relayctl: verify: this relayctl binary has no Verifier for the service (source of truth against read models). A service adds its own with a small main calling relayctl.Main(ctx, os.Args[1:], os.Stdout, os.Stderr, relayctl.Hooks{Verifier: ...}) (see the docs of package github.com/eventrelay/eventrelay/relayctl)
	// exit 2
}
