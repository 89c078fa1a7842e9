package main

import (
	"fmt"
	"os"
	"strconv"

	"github.com/eventrelay/eventrelay/elastic"
	"github.com/eventrelay/eventrelay/embedded"
	"github.com/eventrelay/eventrelay/projector"

	"github.com/eventrelay/eventrelay/examples/orders/internal/biz"
	"github.com/eventrelay/eventrelay/examples/orders/internal/data"
	orderproj "github.com/eventrelay/eventrelay/examples/orders/internal/projection"
)

// searchClient connects to the cluster of the search read model from the
// environment: ELASTIC_URL (empty: no search read model, nil client),
// ELASTIC_USERNAME, ELASTIC_PASSWORD.
func searchClient() (*elastic.Client, error) {
	cfg := elastic.Config{URL: os.Getenv("ELASTIC_URL"), Username: os.Getenv("ELASTIC_USERNAME"), Password: os.Getenv("ELASTIC_PASSWORD")}
	if !cfg.Enabled() {
		return nil, nil
	}
	return elastic.New(cfg)
}

// registerSearch registers the search projection when ELASTIC_URL is set.
func registerSearch(p *projector.Projector) error {
	es, err := searchClient()
	if es == nil {
		return err
	}
	return orderproj.RegisterSearch(p, es)
}

// withSearch turns on the search read path of uc unless READ_PATH_SEARCH
// is false (the projection keeps the index meanwhile) or there is no
// ELASTIC_URL: SearchOrders then answers SEARCH_DISABLED. Reads with
// consistency tokens wait for the search projection through e.Waiter.
func withSearch(e *embedded.Engines, uc *biz.OrderUsecase) (*biz.OrderUsecase, error) {
	on := true
	if v := os.Getenv("READ_PATH_SEARCH"); v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return nil, fmt.Errorf("READ_PATH_SEARCH: want true or false, got %q", v)
		}
		on = b
	}
	es, err := searchClient()
	if es == nil || !on {
		return uc, err
	}
	e.Waiter.Register(orderproj.Search.Name, elastic.Lookup(es, orderproj.SearchIndex.Alias))
	return uc.WithSearch(data.NewOrderSearch(es, orderproj.SearchIndex.Alias)), nil
}
