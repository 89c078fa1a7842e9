package docs_test

import (
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unicode"
)

// repoRoot is the repository root, seen from this package's directory.
const repoRoot = ".."

// skipDirs are never searched for Markdown files: generated, vendored or
// local run state.
var skipDirs = map[string]bool{"third_party": true, "node_modules": true, "testdata": true, "bin": true}

// TestLinksResolve checks every relative link of every Markdown file of the
// repository (README.md, docs/, bench/, examples/, ...): its target must
// exist inside the repository, and a #fragment must name a heading of the
// target Markdown file. Links to other sites (a scheme such as https:) are
// not followed.
func TestLinksResolve(t *testing.T) {
	t.Parallel()
	root, err := filepath.Abs(repoRoot)
	if err != nil {
		t.Fatal(err)
	}
	files := markdownFiles(t, root)
	if len(files) == 0 {
		t.Fatal("no Markdown files found")
	}
	anchors := map[string]map[string]bool{} // file -> heading anchors
	anchorsOf := func(path string) (map[string]bool, error) {
		if a, ok := anchors[path]; ok {
			return a, nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return nil, err
		}
		a := headingAnchors(string(b))
		anchors[path] = a
		return a, nil
	}
	checked := 0
	for _, file := range files {
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(root, file)
		for _, l := range links(string(b)) {
			checked++
			if err := checkLink(root, file, l.target, anchorsOf); err != nil {
				t.Errorf("%s:%d: link %q: %v", rel, l.line, l.target, err)
			}
		}
	}
	t.Logf("%d links in %d Markdown files", checked, len(files))
}

// checkLink resolves target, a link found in file.
func checkLink(root, file, target string, anchorsOf func(string) (map[string]bool, error)) error {
	if hasScheme(target) {
		return nil
	}
	path, fragment, _ := strings.Cut(target, "#")
	if i := strings.IndexByte(path, '?'); i >= 0 {
		path = path[:i]
	}
	unescaped, err := url.PathUnescape(path)
	if err != nil {
		return fmt.Errorf("bad escape: %v", err)
	}
	dest := file
	if unescaped != "" {
		if strings.HasPrefix(unescaped, "/") {
			dest = filepath.Join(root, filepath.FromSlash(unescaped))
		} else {
			dest = filepath.Join(filepath.Dir(file), filepath.FromSlash(unescaped))
		}
		if r, err := filepath.Rel(root, dest); err != nil || r == ".." || strings.HasPrefix(r, ".."+string(filepath.Separator)) {
			return fmt.Errorf("points outside the repository")
		}
		if _, err := os.Stat(dest); err != nil {
			return fmt.Errorf("target does not exist")
		}
	}
	if fragment == "" || !strings.HasSuffix(dest, ".md") {
		return nil
	}
	a, err := anchorsOf(dest)
	if err != nil {
		return err
	}
	if !a[strings.ToLower(fragment)] {
		return fmt.Errorf("no heading with anchor #%s in %s", fragment, filepath.Base(dest))
	}
	return nil
}

var scheme = regexp.MustCompile(`^[a-zA-Z][a-zA-Z0-9+.-]*:`)

func hasScheme(target string) bool { return scheme.MatchString(target) }

// markdownFiles lists the *.md files under root, skipping hidden
// directories (.git, .run, ...) and skipDirs.
func markdownFiles(t *testing.T, root string) []string {
	t.Helper()
	var files []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path != root && (strings.HasPrefix(d.Name(), ".") || skipDirs[d.Name()]) {
				return filepath.SkipDir
			}
			return nil
		}
		if strings.HasSuffix(d.Name(), ".md") {
			files = append(files, path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

type link struct {
	line   int
	target string
}

var (
	// inlineLink matches [text](target) and ![alt](target), with an
	// optional "title".
	inlineLink = regexp.MustCompile(`!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)`)
	// refDefinition matches a reference definition: [label]: target
	refDefinition = regexp.MustCompile(`^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s+.*)?$`)
	codeSpan      = regexp.MustCompile("`+[^`]*`+")
)

// links returns the link targets of a Markdown text, outside fenced code
// blocks and code spans.
func links(text string) []link {
	var out []link
	fence := ""
	for i, line := range strings.Split(text, "\n") {
		trimmed := strings.TrimSpace(line)
		if fence != "" {
			if strings.HasPrefix(trimmed, fence) {
				fence = ""
			}
			continue
		}
		if strings.HasPrefix(trimmed, "```") || strings.HasPrefix(trimmed, "~~~") {
			fence = trimmed[:3]
			continue
		}
		if m := refDefinition.FindStringSubmatch(line); m != nil {
			out = append(out, link{i + 1, m[1]})
			continue
		}
		line = codeSpan.ReplaceAllString(line, "")
		for _, m := range inlineLink.FindAllStringSubmatch(line, -1) {
			out = append(out, link{i + 1, m[1]})
		}
	}
	return out
}

// headingAnchors returns the anchors GitHub gives the headings of a
// Markdown text: lower case, punctuation dropped, spaces as hyphens, and
// -1, -2, ... appended to repeats.
func headingAnchors(text string) map[string]bool {
	anchors := map[string]bool{}
	seen := map[string]int{}
	fence := ""
	for _, line := range strings.Split(text, "\n") {
		trimmed := strings.TrimSpace(line)
		if fence != "" {
			if strings.HasPrefix(trimmed, fence) {
				fence = ""
			}
			continue
		}
		if strings.HasPrefix(trimmed, "```") || strings.HasPrefix(trimmed, "~~~") {
			fence = trimmed[:3]
			continue
		}
		if !strings.HasPrefix(line, "#") {
			continue
		}
		heading := strings.TrimLeft(line, "#")
		if heading == "" || heading[0] != ' ' {
			continue
		}
		slug := slugify(strings.TrimSpace(heading))
		if n, ok := seen[slug]; ok {
			seen[slug] = n + 1
			anchors[fmt.Sprintf("%s-%d", slug, n+1)] = true
			continue
		}
		seen[slug] = 0
		anchors[slug] = true
	}
	return anchors
}

// slugify is GitHub's heading anchor: letters, digits, hyphens and
// underscores kept (lower case), spaces turned into hyphens, the rest
// dropped. Link syntax in the heading counts by its text.
func slugify(heading string) string {
	heading = inlineLink.ReplaceAllStringFunc(heading, func(m string) string {
		return m[strings.IndexByte(m, '[')+1 : strings.IndexByte(m, ']')]
	})
	var b strings.Builder
	for _, r := range strings.ToLower(heading) {
		switch {
		case unicode.IsLetter(r), unicode.IsDigit(r), r == '-', r == '_':
			b.WriteRune(r)
		case r == ' ':
			b.WriteByte('-')
		}
	}
	return b.String()
}

// TestLinkCheckerRefusesBrokenLinks keeps TestLinksResolve from passing
// vacuously: a missing file, a path out of the repository and an unknown
// heading are refused; a file, a directory and a known heading resolve.
func TestLinkCheckerRefusesBrokenLinks(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	docs := filepath.Join(root, "docs")
	if err := os.MkdirAll(filepath.Join(docs, "decisions"), 0o755); err != nil {
		t.Fatal(err)
	}
	page := "# Title\n\n## 3. Deterministic failures (payload, `topic`)\n\n## Repeat\n\n## Repeat\n\n" +
		"```\n[not a link](missing.md)\n```\n`[not a link either](missing.md)`\n"
	if err := os.WriteFile(filepath.Join(docs, "page.md"), []byte(page), 0o644); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(root, "README.md")
	if err := os.WriteFile(file, []byte("# Read me\n\n[a](docs/page.md)\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	anchorsOf := func(path string) (map[string]bool, error) {
		b, err := os.ReadFile(path)
		return headingAnchors(string(b)), err
	}
	for target, ok := range map[string]bool{
		"docs/page.md":    true,
		"docs/decisions/": true,
		"docs/page.md#3-deterministic-failures-payload-topic": true,
		"docs/page.md#repeat-1":                               true,
		"https://example.com/x":                               true,
		"#read-me":                                            true,
		"docs/missing.md":                                     false,
		"#read-you":                                           false,
		"../shared/DESIGN.md":                                 false,
		"docs/page.md#title-2":                                false,
	} {
		err := checkLink(root, file, target, anchorsOf)
		if (err == nil) != ok {
			t.Errorf("checkLink(%q) = %v, want ok=%v", target, err, ok)
		}
	}
	if got := links(page); len(got) != 0 {
		t.Errorf("links in code: %v, want none", got)
	}
}
