package projection

import "github.com/google/wire"

// ProviderSet provides the catalog's read model handlers.
var ProviderSet = wire.NewSet(NewVideos)
