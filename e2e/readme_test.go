package e2e

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestReadmeListsEveryConfigKey keeps the README's configuration tables in
// step with configs/*.yaml: every environment variable named in a config
// file's comments must appear in README.md.
func TestReadmeListsEveryConfigKey(t *testing.T) {
	t.Parallel()
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	files, err := filepath.Glob("../configs/*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no configs/*.yaml found (%v)", err)
	}
	envName := regexp.MustCompile(`\b[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+\b`)
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(string(b), "\n") {
			_, comment, ok := strings.Cut(line, "#")
			if !ok {
				continue
			}
			for _, loc := range envName.FindAllStringIndex(comment, -1) {
				name := comment[loc[0]:loc[1]]
				if (loc[0] > 0 && comment[loc[0]-1] == '-') || (loc[1] < len(comment) && comment[loc[1]] == '@') {
					continue // part of an address, e.g. service-PROJECT_NUMBER@...
				}
				if !strings.Contains(string(readme), name) {
					t.Errorf("%s names %s, which README.md's configuration tables do not mention", filepath.Base(f), name)
				}
			}
		}
	}
}
