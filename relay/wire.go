package relay

import "github.com/google/wire"

// ProviderSet provides a *Relay (New) for Wire. The injector supplies the
// *pgxpool.Pool (built with PoolConfig), the *pubsub.Client and Options;
// bind the *Relay as a transport.Server of the service's kratos.App.
var ProviderSet = wire.NewSet(New)
