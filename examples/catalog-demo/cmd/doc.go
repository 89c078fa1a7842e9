// Package cmd holds the catalog demo's binaries, one directory each: the
// catalog service, its projector and its relayctl. Its tests cover the
// configuration of the daemons the demo runs (the catalog's and
// eventrelay's publisher): a fuzz of their loading. Their keys are
// documented by internal/configdocs.
package cmd
