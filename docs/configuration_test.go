package docs_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestConfigurationListsEveryConfigKey keeps the configuration tables of
// docs/configuration.md in step with configs/*.yaml and the catalog demo's
// examples/catalog-demo/configs/*.yaml: every environment
// variable named in a config file's comments must appear in
// configuration.md.
func TestConfigurationListsEveryConfigKey(t *testing.T) {
	t.Parallel()
	doc, err := os.ReadFile("configuration.md")
	if err != nil {
		t.Fatal(err)
	}
	var files []string
	for _, dir := range []string{"../configs", "../examples/catalog-demo/configs"} {
		found, err := filepath.Glob(dir + "/*.yaml")
		if err != nil || len(found) == 0 {
			t.Fatalf("no %s/*.yaml found (%v)", dir, err)
		}
		files = append(files, found...)
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
				if !strings.Contains(string(doc), name) {
					t.Errorf("%s names %s, which docs/configuration.md's tables do not mention", filepath.Base(f), name)
				}
			}
		}
	}
}
