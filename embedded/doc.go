// Package embedded runs eventrelay inside a service's own Kratos app: the
// projector with the service's projections, optionally the relay, and the
// health surface, next to the service's HTTP and gRPC servers, stopped
// together with a stop timeout long enough for the relay's drain.
//
// What every service that embeds eventrelay repeats is here once:
//
//   - Config and LoadConfig: the environment every such service reads
//     (DATABASE_URL, DATABASE_SCHEMA, PUBSUB_PROJECT_ID, HTTP_ADDR,
//     GRPC_ADDR, REQUEST_TIMEOUT, SHUTDOWN_TIMEOUT, EMBED_RELAY, INSTANCE),
//     with -h/--help printing it and an unknown flag refused;
//   - New: one *health.Health and Prometheus registry shared by the
//     engines and the service's servers, the projector with the
//     service's projections (Options.Projections), the relay when
//     Config.EmbedRelay, and the Kratos app: /readyz fails first on
//     SIGTERM, then every server drains within Config.StopTimeout
//     (default: the longest drain of the engines, the relay's
//     Options.StopTimeout, DrainTimeout + Lease, and the projector's
//     DrainTimeout; not Kratos' 10s);
//   - read models in stores of their own (Options.ReadModels, such as
//     elastic.ReadModel): opened from the environment, their projections
//     registered, their tokens answered from the store, their relayctl
//     hooks added; and the read-your-writes waiter (Engines.Waiter) for
//     a service with servers and projections;
//   - Main: LoadConfig, the Postgres pool (relay.PoolConfig: search_path
//     starts with the schema) and the Pub/Sub client, New, and the app run
//     until SIGINT or SIGTERM, as a process exit status.
//   - the service's admin CLI: under Main, `<service> relayctl <command>`
//     runs relayctl's command set with the service's hooks (Options.Admin),
//     schema and codec, at the version the service runs.
//
// A service's main is then its own servers and projections:
//
//	func main() {
//		os.Exit(embedded.Main(os.Args[1:], embedded.Options{
//			Name:        "orders",
//			Codec:       codec, // envelope.New(envelope.Aggregate("orders.order", "orders.order.events", envelope.Type[*ordersv1.OrderPlaced]("orders.order.placed"), ...))
//			Projections: []projector.Projection{summaries.Projection},
//			Writer:      &outbox.Config{Notify: true}, // its events carry their topic (codec.Event)
//			Admin:       relayctl.Hooks{Verifier: admin.Verifier, Migrations: admin.Migrations},
//			Servers: func(e *embedded.Engines) ([]transport.Server, error) {
//				... // the service's HTTP and gRPC servers on e.Pool, e.Writer, e.Health, e.Metrics
//				return []transport.Server{httpServer, grpcServer}, nil
//			},
//		}))
//	}
//
// The engines take plain option structs and read no environment but what
// Options.ReadModels read for their stores (ReadModel.Open): a service
// that keeps its own configuration calls New with a Config it filled.
// Tests start the same engines against a test database and the strict
// Pub/Sub double with relaytest.StartPipeline.
package embedded
