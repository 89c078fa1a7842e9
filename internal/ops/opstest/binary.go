package opstest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
)

type build struct {
	once sync.Once
	path string
	err  error
}

var (
	buildsMu sync.Mutex
	builds   = map[string]*build{}
	buildDir string
)

// Binary builds the main package in dir (e.g. "." from a cmd test) once per
// test process and returns the executable's path. Call RemoveBinaries from
// TestMain to delete the builds.
func Binary(t testing.TB, dir string) string {
	t.Helper()
	abs, err := filepath.Abs(dir)
	if err != nil {
		t.Fatal(err)
	}
	buildsMu.Lock()
	b := builds[abs]
	if b == nil {
		b = &build{}
		builds[abs] = b
	}
	if buildDir == "" {
		if buildDir, err = os.MkdirTemp("", "eventrelay-bin-"); err != nil {
			buildsMu.Unlock()
			t.Fatal(err)
		}
	}
	out := filepath.Join(buildDir, filepath.Base(abs))
	buildsMu.Unlock()

	b.once.Do(func() {
		cmd := exec.Command("go", "build", "-o", out, ".")
		cmd.Dir = abs
		if msg, err := cmd.CombinedOutput(); err != nil {
			b.err = fmt.Errorf("go build %s: %v\n%s", abs, err, msg)
			return
		}
		b.path = out
	})
	if b.err != nil {
		t.Fatal(b.err)
	}
	return b.path
}

// RemoveBinaries deletes what Binary built.
func RemoveBinaries() {
	buildsMu.Lock()
	defer buildsMu.Unlock()
	if buildDir != "" {
		os.RemoveAll(buildDir)
	}
}
