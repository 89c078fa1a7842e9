package scaffold

import (
	"bytes"
	"embed"
	"errors"
	"fmt"
	"go/format"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"strings"
	"text/template"
)

//go:embed templates
var templates embed.FS

// data is what the templates see.
type data struct {
	names
	// GoVersion is go.mod's go directive: the toolchain relayctl was built
	// with, at least eventrelay's own.
	GoVersion string
}

// Write writes the service s describes into s.Dir (created; it must be
// absent or empty) and returns the files written, relative to s.Dir.
func Write(s Spec) ([]string, error) {
	if err := s.Validate(); err != nil {
		return nil, err
	}
	if entries, err := os.ReadDir(s.Dir); err == nil && len(entries) > 0 {
		return nil, fmt.Errorf("%s is not empty: relayctl new writes a new module into an empty or absent directory", s.Dir)
	} else if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	n := namesOf(s)
	files, err := render(data{names: n, GoVersion: strings.TrimPrefix(runtime.Version(), "go")})
	if err != nil {
		return nil, err
	}
	goFile, code, err := generateGo(n)
	if err != nil {
		return nil, err
	}
	files["api/"+n.ProtoFile] = []byte(protoText(n))
	files["api/"+goFile] = code
	var written []string
	for name, content := range files {
		p := filepath.Join(s.Dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return nil, err
		}
		if err := os.WriteFile(p, content, 0o644); err != nil {
			return nil, err
		}
		written = append(written, name)
	}
	return written, nil
}

// render executes every template and returns the files by their path in
// the new module; Go files are gofmt'ed.
func render(d data) (map[string][]byte, error) {
	files := map[string][]byte{}
	err := fs.WalkDir(templates, "templates", func(p string, e fs.DirEntry, err error) error {
		if err != nil || e.IsDir() {
			return err
		}
		t, err := template.ParseFS(templates, p)
		if err != nil {
			return err
		}
		var b bytes.Buffer
		if err := t.Execute(&b, d); err != nil {
			return fmt.Errorf("%s: %w", p, err)
		}
		name := target(strings.TrimSuffix(strings.TrimPrefix(p, "templates/"), ".tmpl"), d.names)
		out := b.Bytes()
		if path.Ext(name) == ".go" {
			if out, err = format.Source(out); err != nil {
				return fmt.Errorf("%s: %w", p, err)
			}
		}
		files[name] = out
		return nil
	})
	return files, err
}

// target is where a template's file goes in the new module.
func target(name string, n names) string {
	switch {
	case strings.HasPrefix(name, "cmd/"):
		return "cmd/" + n.Name + "/" + path.Base(name)
	case name == "migrations/00001_aggregate.sql":
		return "migrations/00001_" + n.Table + ".sql"
	}
	return name
}
