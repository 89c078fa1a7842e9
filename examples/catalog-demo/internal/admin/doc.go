// Package admin is the catalog's implementation of relayctl's hooks
// (package relayctl/hook): restating catalog.videos through the outbox
// (rebuild), rebuilding the Elasticsearch index from video_projection
// (rebuild --reindex), the migration sets (eventrelay's and the
// catalog's, for migrate), comparing catalog.videos with video_projection and
// the index (verify), and decoding dead letters (dlq show) with the catalog's envelope
// codec.
// cmd/relayctl passes Hooks() to relayctl.Main.
package admin

import (
	"github.com/eventrelay/eventrelay/examples/catalog-demo/events"
	catalogmigrations "github.com/eventrelay/eventrelay/examples/catalog-demo/migrations"
	"github.com/eventrelay/eventrelay/relayctl/hook"
)

// Hooks are the catalog's relayctl hooks.
func Hooks() hook.Hooks {
	return hook.Hooks{
		Rebuilder: Rebuilder{}, Reindexer: Search, Verifier: Verifier{}, Decoder: hook.DecoderFunc(events.Codec.DecodeEnvelope),
		Migrations: catalogmigrations.Sets,
		Schema:     catalogmigrations.Schema,
	}
}
