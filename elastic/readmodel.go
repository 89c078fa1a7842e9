package elastic

import (
	"fmt"
	"strconv"
	"time"

	"github.com/eventrelay/eventrelay/consistency"
	"github.com/eventrelay/eventrelay/envelope"
	"github.com/eventrelay/eventrelay/projection"
	"github.com/eventrelay/eventrelay/projector"
	"github.com/eventrelay/eventrelay/relayctl/hook"
)

// ReadModel is a service's search read model declared once, for
// embedded.Options.ReadModels: its projection, its index, the document
// each event leaves there and its side of relayctl. The service runs it
// when its environment names a cluster (ELASTIC_URL, ELASTIC_USERNAME,
// ELASTIC_PASSWORD, ELASTIC_REQUEST_TIMEOUT) and without it otherwise:
//
//	var Search = elastic.ReadModel{
//		Projection: projector.Projection{Name: "order-search", Subscription: ..., DeadLetterTopic: ...},
//		Index:      elastic.Index{Alias: "orders", Body: mapping},
//		Handlers:   elastic.Handlers(events.Codec, orderDocument),
//		Admin:      elastic.Admin{Source: "orders", Documents: docs, Versions: versions},
//		ReadSwitch: "READ_PATH_SEARCH",
//	}
//
// embedded.New then registers the projection (Handlers writing through the
// cluster's client), answers consistency tokens for it from the index
// (Lookup), and its relayctl gains `rebuild --reindex` and the index in
// `verify` (Admin). The service's read path gets the client and alias in
// its servers with In. Package elastic does not import embedded: its
// ReadModel is an embedded.ReadModel by its methods.
type ReadModel struct {
	// Projection is the search projection: its Name, Subscription,
	// DeadLetterTopic and the rest of its options; its Batch is the one
	// Handlers builds.
	Projection projector.Projection
	// Index is the index behind its alias (the alias the service reads).
	Index Index
	// Handlers builds the projection's registry writing to the index
	// through client: Handlers(codec, doc). Required.
	Handlers func(client *Client, idx Index) (*projection.Registry[projection.BatchHandler], error)
	// Admin is the read model's side of relayctl; an empty Index is
	// Index. Its Versions make verify compare the index, its Documents
	// serve rebuild --reindex; without them relayctl offers neither.
	Admin Admin
	// ReadSwitch, when set, is the environment variable that turns the
	// service's read path off ("false": In returns nil) while the
	// projection keeps the index, to read elsewhere during an incident
	// or a reindex.
	ReadSwitch string
}

// Handlers is ReadModel.Handlers for the document doc leaves for every
// event type codec declares (HandleAll).
func Handlers[P any](codec *envelope.Codec, doc DocFunc[P]) func(*Client, Index) (*projection.Registry[projection.BatchHandler], error) {
	return func(client *Client, idx Index) (*projection.Registry[projection.BatchHandler], error) {
		return HandleAll(codec, client, idx, doc)
	}
}

// store is embedded.Store, an alias of the same interface type: ReadModel
// implements embedded.ReadModel without importing embedded and the app
// runtime it brings.
type store = interface {
	Projection() (projector.Projection, error)
	Lookup() consistency.Lookup
	Close()
}

// Search is an open ReadModel: the client and the alias the service's
// read path searches. After a wait for consistency tokens, Refresh the
// alias before searching (see Lookup).
type Search struct {
	Client *Client
	Alias  string
	model  ReadModel
	read   bool
}

// Open implements embedded.ReadModel: the client of the cluster getenv
// names (no ELASTIC_URL: nil, the service runs without the read model).
// Errors name the variable.
func (m ReadModel) Open(getenv func(string) string) (store, error) {
	if m.Handlers == nil {
		return nil, fmt.Errorf("elastic: read model %s: ReadModel.Handlers is nil", m.Projection.Name)
	}
	cfg := Config{URL: getenv("ELASTIC_URL"), Username: getenv("ELASTIC_USERNAME"), Password: getenv("ELASTIC_PASSWORD")}
	if !cfg.Enabled() {
		return nil, nil
	}
	if v := getenv("ELASTIC_REQUEST_TIMEOUT"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			return nil, fmt.Errorf("ELASTIC_REQUEST_TIMEOUT: want a duration such as 5s, got %q", v)
		}
		cfg.RequestTimeout = d
	}
	read := true
	if v := getenv(m.ReadSwitch); m.ReadSwitch != "" && v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return nil, fmt.Errorf("%s: want true or false, got %q", m.ReadSwitch, v)
		}
		read = b
	}
	client, err := New(cfg)
	if err != nil {
		return nil, err
	}
	return &Search{Client: client, Alias: m.Index.Alias, model: m, read: read}, nil
}

// In is the open read model among the service's stores (Engines.Store),
// for its read path: nil when the environment leaves it out (no
// ELASTIC_URL) or ReadSwitch turns the read path off.
//
//	search := orderSearch.In(e.Store)
func (m ReadModel) In(stores func(name string) store) *Search {
	s, ok := stores(m.Projection.Name).(*Search)
	if !ok || !s.read {
		return nil
	}
	return s
}

// Hooks implements embedded.ReadModel: h with `rebuild --reindex` (unless
// h has a Reindexer) and the index compared by verify (Admin.Verifier
// around h.Verifier).
func (m ReadModel) Hooks(h hook.Hooks) hook.Hooks {
	a := m.admin()
	if h.Reindexer == nil && a.Documents != nil {
		h.Reindexer = a
	}
	if a.Versions != nil {
		noun := "aggregate"
		if h.Rebuilder != nil {
			noun = h.Rebuilder.Subject().Noun
		}
		h.Verifier = a.Verifier(h.Verifier, noun)
	}
	return h
}

func (m ReadModel) admin() Admin {
	a := m.Admin
	if a.Index.Alias == "" {
		a.Index = m.Index
	}
	return a
}

// Projection implements embedded.Store: ReadModel.Projection writing to
// the index.
func (s *Search) Projection() (projector.Projection, error) {
	reg, err := s.model.Handlers(s.Client, s.model.Index)
	if err != nil {
		return projector.Projection{}, fmt.Errorf("search read model %s: %w", s.model.Projection.Name, err)
	}
	p := s.model.Projection
	p.Batch = reg
	return p, nil
}

// Lookup implements embedded.Store: Lookup of the alias.
func (s *Search) Lookup() consistency.Lookup { return Lookup(s.Client, s.Alias) }

// Close implements embedded.Store.
func (s *Search) Close() { s.Client.Close() }
