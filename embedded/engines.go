package embedded

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"slices"
	"time"

	"cloud.google.com/go/pubsub/v2"
	"github.com/go-kratos/kratos/v2"
	"github.com/go-kratos/kratos/v2/transport"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/eventrelay/eventrelay/consistency"
	"github.com/eventrelay/eventrelay/envelope"
	"github.com/eventrelay/eventrelay/health"
	"github.com/eventrelay/eventrelay/internal/postgres"
	"github.com/eventrelay/eventrelay/migrations"
	"github.com/eventrelay/eventrelay/outbox"
	"github.com/eventrelay/eventrelay/projector"
	"github.com/eventrelay/eventrelay/relay"
	"github.com/eventrelay/eventrelay/relayctl"
)

// Options declare a service that embeds eventrelay.
type Options struct {
	// Name is the service: the Kratos app's name, the envelope's
	// producer.service and the default schema. Required.
	Name string
	// Config is the service's configuration (LoadConfig); Main loads it,
	// with the fields set here as the service's defaults.
	Config Config
	// Logger receives the engines' logs (default slog.Default(); Main:
	// Logger on stdout).
	Logger *slog.Logger
	// Relay shapes the embedded relay (Config.EmbedRelay); its Schema,
	// Logger, Health and Registerer are the engines', an empty
	// Publish.ReadyTopic is Writer.DefaultTopic, else the first (by name)
	// of the topics Codec declares (envelope.Aggregate).
	Relay relay.Options
	// Projector shapes the projector; its Schema, Logger, Health and
	// Registerer are the engines'.
	Projector projector.Options
	// Projections are the service's projections, registered on the
	// projector (projector.Register) before Register runs.
	Projections []projector.Projection
	// ReadModels are the service's read models in stores of their own
	// (elastic.ReadModel: a search index). New opens each from the
	// process' environment (ReadModel.Open: its only reading of the
	// environment), registers its projection after Projections and its
	// lookup on the Waiter, and closes it after the app stopped; the
	// service's servers find it with Engines.Store. One the environment
	// leaves out is not run.
	ReadModels []ReadModel
	// Register, when set, registers more projections on the projector:
	// those built at run time. Without Projections, ReadModels and
	// Register the app runs no projector.
	Register func(*projector.Projector) error
	// Codec, when set, is the service's envelope (package envelope): the
	// writer's Encoder when Writer.Encoder is nil, and the decoder of
	// `relayctl dlq show` when Admin.Decoder is nil.
	Codec *envelope.Codec
	// Writer, when set, is the service's outbox writer (Engines.Writer);
	// an empty Producer is the engines' (Name, Config.Instance), a nil
	// Encoder Codec's.
	Writer *outbox.Config
	// Tables are the service's own tables of Config.Schema, which its
	// requests read and write (SELECT, INSERT, UPDATE, DELETE). The
	// service's readiness check "schema/<Name>" requires those privileges
	// on them and, with Writer, the outbox writer's on eventrelay's
	// tables, and names each one the service's role lacks ("INSERT on
	// outbox_events"): a request that would be refused for it takes the
	// service out of rotation with the reason, and its write answers 503.
	Tables []string
	// Waiter shapes read-your-writes: Engines.Waiter
	// (consistency.NewWaiter) runs in the app when Waiter is set, and with
	// its defaults when the service has servers and projections, with the
	// lookup of every projection of Projections registered under its
	// name: what the projector recorded for it (consistency.InboxLookup
	// of its consumer), so a token is answered for any read model, one
	// row per aggregate or not; each of ReadModels' under its projection's
	// name: its store's (Store.Lookup). A lookup registered in Servers
	// replaces it (a read model's own version column,
	// consistency.TableLookup), and one for a projection of Register is
	// registered there.
	Waiter *consistency.WaiterOptions
	// Servers builds the service's own servers (HTTP, gRPC) from the
	// engines: its pool, writer, waiter, health and metrics. The app
	// starts them with the engines (Kratos starts its servers at once).
	// The health surface (/healthz, /readyz, /metrics: health.Handler of
	// Engines.Health and Engines.Metrics) is mounted on the first Kratos
	// HTTP server among them (a path the service routes itself stays
	// its own); without one, the app serves it on Config.HTTPAddr
	// (health.NewServer).
	Servers func(*Engines) ([]transport.Server, error)
	// Migrations, when set, are applied to Config.Schema by Main before
	// the app starts (migrations.Up; e.g. migrations.Eventrelay and the
	// service's set). Without them the schema is migrated beforehand
	// (relayctl migrate up).
	Migrations []migrations.Set
	// Admin are the service's relayctl hooks (rebuild, verify, migrate,
	// dlq show): under Main, `<service> relayctl <command>` runs relayctl's
	// command set with them (Options.Relayctl), so the service's binary is
	// its admin CLI too, at the service's own version.
	Admin relayctl.Hooks
	// AppOptions are more Kratos options (metadata, registrar, hooks),
	// applied after New's.
	AppOptions []kratos.Option
}

// Engines are eventrelay's engines built for one service, and the Kratos
// app that runs them with the service's servers.
type Engines struct {
	Config Config
	Logger *slog.Logger
	Pool   *pgxpool.Pool
	Client *pubsub.Client
	// Health is shared by the engines and the service's servers, served
	// with Metrics on the service's HTTP server (Options.Servers). Its readiness is the service's: Postgres
	// ("postgres") and draining; the engines' checks (Pub/Sub, blocked
	// topics, stalls) are advisory (health.Health.Advisory): /readyz lists
	// them under "degraded" without taking the service's API out of
	// rotation, and their alerts report them. The engines' loops count for
	// /healthz.
	Health *health.Health
	// Metrics holds the engines' metrics; register the service's own on
	// it and serve it with health.Handler.
	Metrics *prometheus.Registry
	// Producer is the outbox writer's producer (Name, Config.Instance).
	Producer outbox.Producer
	// Writer is the outbox writer of Options.Writer (nil without).
	Writer *outbox.Writer
	// Projector is nil without Options.Projections and Register, Relay without
	// Config.EmbedRelay.
	Projector *projector.Projector
	Relay     *relay.Relay
	// Waiter makes reads wait for consistency tokens (Options.Waiter; nil
	// without it and without servers or projections).
	Waiter *consistency.Waiter
	// Servers are the service's own servers (Options.Servers).
	Servers []transport.Server
	// stores are the open Options.ReadModels by projection name.
	stores map[string]Store
	// App runs the servers, the projector and the relay: Run until SIGINT
	// or SIGTERM; then /readyz fails and every server drains within
	// Config.StopTimeout.
	App *kratos.App
}

// readyTopic is the topic the embedded relay's readiness probes:
// Writer.DefaultTopic, else the first (by name) of Codec's topics, else
// none.
func readyTopic(o Options) string {
	if o.Writer != nil && o.Writer.DefaultTopic != "" {
		return o.Writer.DefaultTopic
	}
	if o.Codec == nil {
		return ""
	}
	topics := slices.Sorted(maps.Values(o.Codec.Topics()))
	if len(topics) == 0 {
		return ""
	}
	return topics[0]
}

// New builds the engines and the app of service o on pool (whose
// search_path starts with o.Config.Schema: relay.PoolConfig) and client.
// It contacts neither Postgres nor Pub/Sub, nor the stores of
// o.ReadModels. Errors name the part that failed.
func New(pool *pgxpool.Pool, client *pubsub.Client, o Options) (_ *Engines, err error) {
	if o.Name == "" {
		return nil, fmt.Errorf("embedded: Options.Name is required")
	}
	stores, storeProjections, err := openStores(o, os.Getenv)
	if err != nil {
		return nil, fmt.Errorf("%s's read models: %w", o.Name, err)
	}
	defer func() {
		if err != nil {
			closeStores(stores)
		}
	}()
	c := o.Config
	c.Schema = or(c.Schema, o.Name)
	e := &Engines{Config: c, Logger: o.Logger, Pool: pool, Client: client, Health: health.NewHealth(2 * time.Second),
		Metrics: health.NewRegistry(), Producer: outbox.Producer{Service: o.Name, Instance: c.Instance}, stores: stores}
	if e.Logger == nil {
		e.Logger = slog.Default()
	}
	engineHealth := e.Health.Advisory()
	var engines []transport.Server
	drain := 10 * time.Second // Kratos' default stop timeout
	if len(o.Projections) > 0 || len(storeProjections) > 0 || o.Register != nil {
		po := o.Projector
		po.Schema, po.Logger, po.Registerer, po.Health = c.Schema, e.Logger, e.Metrics, engineHealth
		p, err := projector.New(pool, client, po)
		if err != nil {
			return nil, fmt.Errorf("embedded projector: %w", err)
		}
		for _, pr := range append(slices.Clip(o.Projections), storeProjections...) {
			if err := p.Register(pr); err != nil {
				return nil, fmt.Errorf("registering projection %s: %w", pr.Name, err)
			}
		}
		if o.Register != nil {
			if err := o.Register(p); err != nil {
				return nil, fmt.Errorf("registering %s's projections: %w", o.Name, err)
			}
		}
		e.Projector, engines = p, append(engines, p)
		drain = po.WithDefaults().DrainTimeout
	}
	if c.EmbedRelay {
		ro := o.Relay
		ro.Schema, ro.Logger, ro.Registerer, ro.Health = c.Schema, e.Logger, e.Metrics, engineHealth
		if ro.Publish.ReadyTopic == "" {
			ro.Publish.ReadyTopic = readyTopic(o) // GetTopic needs no project-wide list permission
		}
		r, err := relay.New(pool, client, ro)
		if err != nil {
			return nil, fmt.Errorf("embedded relay: %w", err)
		}
		e.Relay, engines = r, append(engines, r)
		drain = max(drain, ro.StopTimeout())
	}
	e.Health.AddCheck("postgres", pool.Ping) // after the engines: the relay's advisory "postgres" is replaced
	if needs := serviceNeeds(o); len(needs) > 0 {
		e.Health.AddCheck("schema/"+o.Name, func(ctx context.Context) error { return postgres.CheckSchema(ctx, pool, needs) })
	}
	if o.Writer != nil {
		wc := *o.Writer
		if wc.Producer == (outbox.Producer{}) {
			wc.Producer = e.Producer
		}
		if wc.Encoder == nil && o.Codec != nil {
			wc.Encoder = o.Codec.Encode
		}
		w, err := outbox.NewWriter(wc)
		if err != nil {
			return nil, fmt.Errorf("outbox writer: %w", err)
		}
		e.Writer = w
	}
	if o.Waiter != nil || (o.Servers != nil && e.Projector != nil) {
		var wo consistency.WaiterOptions
		if o.Waiter != nil {
			wo = *o.Waiter
		}
		if wo.Logger == nil {
			wo.Logger = e.Logger
		}
		e.Waiter = consistency.NewWaiter(pool, wo)
		for _, pr := range o.Projections {
			e.Waiter.Register(pr.Name, consistency.InboxLookup(pool, or(pr.Consumer, pr.Name)))
		}
		for name, s := range stores {
			e.Waiter.Register(name, s.Lookup())
		}
		engines = append(engines, newWaiterServer(e.Waiter))
	}
	if o.Servers != nil {
		own, err := o.Servers(e)
		if err != nil {
			return nil, fmt.Errorf("%s's servers: %w", o.Name, err)
		}
		e.Servers = own
	}
	e.Servers = mountHealth(e.Servers, c.HTTPAddr, e.Health, e.Metrics)
	if c.StopTimeout == 0 {
		c.StopTimeout = drain // an explicit shorter one stands: the relay warns at Stop
	}
	e.Config = c
	opts := []kratos.Option{
		kratos.Name(o.Name),
		kratos.StopTimeout(c.StopTimeout),
		kratos.Server(append(e.Servers, engines...)...),
		kratos.BeforeStop(func(context.Context) error {
			e.Health.SetDraining()
			return nil
		}),
		kratos.AfterStop(func(context.Context) error {
			closeStores(stores)
			return nil
		}),
	}
	e.App = kratos.New(append(opts, o.AppOptions...)...)
	return e, nil
}

// waiterServer runs a consistency.Waiter as a Kratos server.
type waiterServer struct {
	w      *consistency.Waiter
	ctx    context.Context
	cancel context.CancelFunc
}

func newWaiterServer(w *consistency.Waiter) *waiterServer {
	ctx, cancel := context.WithCancel(context.Background())
	return &waiterServer{w: w, ctx: ctx, cancel: cancel}
}

// Start listens for the projector's announcements until Stop.
func (s *waiterServer) Start(context.Context) error {
	s.w.Run(s.ctx)
	return nil
}

// Stop ends the LISTEN connection.
func (s *waiterServer) Stop(context.Context) error {
	s.cancel()
	return nil
}

// serviceNeeds are the privileges the service's own requests use: its
// Tables and, with a Writer, the outbox writer's.
func serviceNeeds(o Options) []postgres.Need {
	lists := [][]postgres.Need{postgres.ReadWrite(o.Tables...)}
	if o.Writer != nil {
		lists = append(lists, postgres.WriterNeeds)
	}
	return postgres.Merge(lists...)
}
