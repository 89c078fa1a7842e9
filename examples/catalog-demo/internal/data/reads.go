package data

import (
	"context"
	"fmt"
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/eventrelay/eventrelay/consistency"
	"github.com/eventrelay/eventrelay/elastic"
	"github.com/eventrelay/eventrelay/examples/catalog-demo/conf"
	"github.com/eventrelay/eventrelay/examples/catalog-demo/internal/biz"
)

// Reads are what the catalog's reads need: the Postgres read model, the
// search index (nil without elastic.url), the consistency waiter with the
// look-ups of both read models, and the read path switches.
type Reads struct {
	Model    biz.VideoReadModel
	Search   biz.VideoSearch
	Waiter   biz.Waiter
	Switches biz.Switches
}

// NewReads builds the reads and starts the waiter's LISTEN connection;
// the cleanup stops it and closes the Elasticsearch client. The switches'
// gauge is registered on reg.
func NewReads(d *Data, c *conf.ReadPath, es *elastic.Config, reg prometheus.Registerer) (*Reads, func(), error) {
	w := consistency.NewWaiter(d.pool, consistency.WaiterOptions{DefaultWait: c.WaitDefault, MaxWait: c.WaitMax, Logger: d.log})
	w.Register(biz.ReadModelVideos, VideosLookup(d))
	r := &Reads{Model: NewVideoReadModel(d), Waiter: w}
	var client *elastic.Client
	if es.Enabled() {
		var err error
		if client, err = elastic.New(*es); err != nil {
			return nil, nil, fmt.Errorf("elastic: %w", err)
		}
		r.Search = NewVideoSearch(client, c.SearchAlias)
		w.Register(biz.ReadModelSearch, elastic.Lookup(client, c.SearchAlias))
	} else {
		d.log.Info("no elastic.url (ELASTIC_URL): SearchVideos answers as switched off")
	}
	sw := NewSwitches(d, map[string]bool{biz.PathVideos: c.Videos, biz.PathSearch: c.Search})
	if err := reg.Register(sw.Collector()); err != nil {
		return nil, nil, fmt.Errorf("registering the switch metric: %w", err)
	}
	r.Switches = sw
	ctx, stop := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		w.Run(ctx)
	}()
	return r, func() {
		stop()
		wg.Wait()
		if client != nil {
			client.Close()
		}
	}, nil
}
