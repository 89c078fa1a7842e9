package cmd_test

import (
	"os"
	"testing"

	"github.com/eventrelay/eventrelay/internal/ops/opstest"
)

// TestMain deletes the binaries the tests built with opstest.Binary: each
// is built once per run and shared by every test of the package.
func TestMain(m *testing.M) {
	code := m.Run()
	opstest.RemoveBinaries()
	os.Exit(code)
}
