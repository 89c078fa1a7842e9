package biz

import "github.com/google/wire"

// ProviderSet is the biz layer's providers.
var ProviderSet = wire.NewSet(NewVideoUsecase, NewReadUsecase)
