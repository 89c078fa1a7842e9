package ordertest

import (
	"log/slog"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/eventrelay/eventrelay/outbox"

	"github.com/eventrelay/eventrelay/examples/orders/internal/biz"
	"github.com/eventrelay/eventrelay/examples/orders/internal/data"
	"github.com/eventrelay/eventrelay/examples/orders/internal/service"
)

// NewService returns the orders service over pool, writing its events
// with the service's outbox writer configuration.
func NewService(t testing.TB, pool *pgxpool.Pool) *service.OrderService {
	t.Helper()
	cfg := data.WriterConfig
	cfg.Producer = outbox.Producer{Service: "orders", Instance: t.Name()}
	w, err := outbox.NewWriter(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return service.NewOrderService(biz.NewOrderUsecase(data.NewOrderRepo(data.NewData(pool, w))), nil, slog.New(slog.DiscardHandler))
}
