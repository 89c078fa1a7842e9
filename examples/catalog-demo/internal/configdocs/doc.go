// Command configdocs writes the key tables of docs/configuration.md from
// the daemons' configuration structs: one row per key of settings.Keys
// over each daemon's Default (eventrelay's publisher, the catalog, the
// catalog's projector), in field order, with its variable and, where the
// default is one value, that value. Each table stands between the marker
// comments
//
//	<!-- configdocs: DAEMON -->
//	<!-- /configdocs -->
//
// and everything outside them is left as written. A row's Meaning cell,
// and a Default cell that is a phrase ("(required)", "lease/4"), are the
// document's own: they are kept from the row of the same key. make
// generate runs it:
//
//	go run ./internal/configdocs ../../docs/configuration.md
package main
