package projection

import _ "embed"

// DefaultAlias is the alias the search projection writes and searches read.
const DefaultAlias = "videos"

// IndexBody creates the search index: an explicit, strict mapping (a field
// the projection does not know is a mapping error, not a silently guessed
// type) including the tombstone fields deleted and deleted_at.
//
//go:embed mapping.json
var IndexBody []byte
