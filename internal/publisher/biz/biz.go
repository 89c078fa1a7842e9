package biz

import "github.com/google/wire"

// ProviderSet is the biz layer's wire providers.
var ProviderSet = wire.NewSet(NewRelay, NewMetrics)
