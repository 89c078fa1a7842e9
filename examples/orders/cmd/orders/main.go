// Command orders is the orders example service: a Kratos app serving
// orders.v1.OrderService over gRPC and HTTP/JSON with eventrelay embedded
// (embedded.Main): the projector keeps the order_summaries read model and,
// with ELASTIC_URL, the search index (projection.Search); the relay runs in
// the app with EMBED_RELAY=true (otherwise the shipped cmd/publisher daemon
// delivers the outbox, DATABASE_SCHEMA=orders). Configuration is the
// environment (orders --help); migrate the schema first: orders relayctl
// migrate up.
package main

import (
	"os"

	"github.com/go-kratos/kratos/v2/transport"

	"github.com/eventrelay/eventrelay/embedded"
	"github.com/eventrelay/eventrelay/projector"

	"github.com/eventrelay/eventrelay/examples/orders/internal/admin"
	"github.com/eventrelay/eventrelay/examples/orders/internal/biz"
	"github.com/eventrelay/eventrelay/examples/orders/internal/data"
	"github.com/eventrelay/eventrelay/examples/orders/internal/events"
	orderproj "github.com/eventrelay/eventrelay/examples/orders/internal/projection"
	"github.com/eventrelay/eventrelay/examples/orders/internal/server"
	"github.com/eventrelay/eventrelay/examples/orders/internal/service"
)

func main() { os.Exit(embedded.Main(os.Args[1:], orders)) }

// orders is the service on eventrelay's engines: its read models, its
// outbox writer, its read-your-writes waiter and its HTTP and gRPC servers.
var orders = embedded.Options{
	Name:        "orders",
	Config:      embedded.Config{HTTPAddr: ":8100", GRPCAddr: ":9100"},
	Codec:       events.Codec,
	Projections: []projector.Projection{orderproj.Summaries},
	ReadModels:  []embedded.ReadModel{orderproj.Search},
	Writer:      &data.WriterConfig,
	Admin:       admin.Hooks,
	Servers: func(e *embedded.Engines) ([]transport.Server, error) {
		uc := biz.NewOrderUsecase(data.NewOrderRepo(data.NewData(e.Pool, e.Writer))).WithSearch(data.NewOrderSearch(orderproj.Search.In(e.Store)))
		svc := service.NewOrderService(uc, e.Waiter, e.Logger)
		return []transport.Server{server.NewHTTPServer(e.Config.HTTPAddr, e.Config.RequestTimeout, svc),
			server.NewGRPCServer(e.Config.GRPCAddr, e.Config.RequestTimeout, svc)}, nil
	},
}
