// Package cmd holds the catalog demo's binaries, one directory each: the
// catalog service, its projector and its relayctl. Its tests cover the
// configuration of the daemons the demo runs (the catalog's and
// eventrelay's publisher): every key documented in docs/configuration.md,
// and a fuzz of their loading.
package cmd
