package embedded

import (
	"github.com/eventrelay/eventrelay/consistency"
	"github.com/eventrelay/eventrelay/projector"
	"github.com/eventrelay/eventrelay/relayctl/hook"
)

// A ReadModel is a read model in a store of its own that the service
// connects to as its environment says: elastic.ReadModel, a search index
// in the Elasticsearch cluster at ELASTIC_URL. New opens each of
// Options.ReadModels; Options.Relayctl adds each one's relayctl hooks.
type ReadModel interface {
	// Open connects to the store as getenv configures it, without
	// contacting it. A nil Store and no error: the environment leaves the
	// read model out, and the service runs without it. Errors name the
	// variable.
	Open(getenv func(string) string) (Store, error)
	// Hooks returns h with the read model's side of relayctl (its
	// rebuild, its part of verify).
	Hooks(h hook.Hooks) hook.Hooks
}

// A Store is an open ReadModel. New registers its projection on the
// projector and its lookup on Engines.Waiter under the projection's name,
// offers it to the service's servers (Engines.Store) and closes it after
// the app stopped. It is an alias of an interface type, identical to any
// type with these methods: a store's package implements ReadModel without
// importing embedded (and the app runtime with it).
type Store = interface {
	// Projection is the read model's projection, writing to the store.
	Projection() (projector.Projection, error)
	// Lookup answers consistency tokens from the store: the version of
	// an aggregate there.
	Lookup() consistency.Lookup
	// Close releases the connection.
	Close()
}

// Store is the open read model whose projection is named name, nil when
// the environment left it out (see ReadModel.Open).
func (e *Engines) Store(name string) Store { return e.stores[name] }

// openStores opens o's read models; each one left out is skipped.
func openStores(o Options, getenv func(string) string) (map[string]Store, []projector.Projection, error) {
	stores := map[string]Store{}
	var projections []projector.Projection
	for _, rm := range o.ReadModels {
		s, err := rm.Open(getenv)
		if err == nil && s != nil {
			var p projector.Projection
			if p, err = s.Projection(); err == nil {
				stores[p.Name], projections = s, append(projections, p)
			} else {
				s.Close()
			}
		}
		if err != nil {
			closeStores(stores)
			return nil, nil, err
		}
	}
	return stores, projections, nil
}

func closeStores(stores map[string]Store) {
	for _, s := range stores {
		s.Close()
	}
}
