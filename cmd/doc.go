// Package cmd holds eventrelay's binaries, one directory each: the
// publisher daemon and relayctl, generic over any service's schema. Its
// tests run them with the catalog demo's daemons
// (examples/catalog-demo/cmd), as deployed: every binary's help, usage and
// error paths with planted credentials, failing if any output shows one
// (secrets_test.go), the version stamp (version_test.go), the exit status
// of an invalid configuration, the stack as its database roles and the
// rendered manifests.
package cmd
