package ui_test

import (
	"context"
	"log"
	"os"

	khttp "github.com/go-kratos/kratos/v2/transport/http"

	"github.com/eventrelay/eventrelay/relayctl/hook"
	"github.com/eventrelay/eventrelay/relayctl/ui"
)

// A service mounts the console in its own Kratos HTTP server, on a
// loopback address (or behind Identity-Aware Proxy, with IdentityHeader).
func Example() {
	ctx := context.Background()
	con, err := ui.New(ctx, ui.Options{
		DatabaseURL: os.Getenv("DATABASE_URL"),
		PubSubFile:  "configs/pubsub.yaml",
		Hooks:       hook.Hooks{Schema: "orders"},
		Getenv:      os.LookupEnv,
		Redrive:     ui.Redrive{Reasons: []string{"unavailable", "timeout"}, Rate: 10},
	})
	if err != nil {
		log.Fatal(err)
	}
	defer con.Close()
	srv := khttp.NewServer(khttp.Address("127.0.0.1:8089"))
	srv.HandlePrefix("/", con)
	_ = srv // run it with the service's kratos.App
}
