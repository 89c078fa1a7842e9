package service

import "github.com/google/wire"

// ProviderSet is the service layer's providers.
var ProviderSet = wire.NewSet(NewVideoService, NewReadMetrics, NewObserver)
