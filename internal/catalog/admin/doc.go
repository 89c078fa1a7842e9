// Package admin is the catalog's implementation of relayctl's hooks
// (package relayctl/hook): restating catalog.videos through the outbox
// (rebuild), rebuilding the Elasticsearch index from video_projection
// (rebuild --reindex), comparing catalog.videos with video_projection and
// the index (verify), and decoding the catalog envelope (dlq show).
// cmd/relayctl passes Hooks() to relayctl.Main.
package admin

import "github.com/eventrelay/eventrelay/relayctl/hook"

// Hooks are the catalog's relayctl hooks.
func Hooks() hook.Hooks {
	return hook.Hooks{Rebuilder: Rebuilder{}, Reindexer: Reindexer{}, Verifier: Verifier{}, Decoder: Decoder{}}
}
