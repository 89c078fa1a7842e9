// Package cmd holds eventrelay's binaries, one directory each. Its test
// (secrets_test.go) runs every binary's help, usage and error paths with
// planted credentials and fails if any output shows one.
package cmd
