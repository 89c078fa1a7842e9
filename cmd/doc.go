// Package cmd holds eventrelay's binaries, one directory each. Its tests
// cover them all: every binary's help, usage and error paths with planted
// credentials, failing if any output shows one (secrets_test.go), the
// version stamp (version_test.go), the exit status of an invalid
// configuration and a fuzz of the daemons' configuration loading.
package cmd
