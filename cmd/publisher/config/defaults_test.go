package config

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/eventrelay/eventrelay/settings"
)

// TestRelayDefaultsAreStatedOnce: Default's outbox and publish sections
// take every value from relay.Options.WithDefaults; a literal there would
// be a second statement of a relay default, free to disagree with it.
func TestRelayDefaultsAreStatedOnce(t *testing.T) {
	f, err := parser.ParseFile(token.NewFileSet(), "config.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	var found int
	ast.Inspect(f, func(n ast.Node) bool {
		fn, ok := n.(*ast.FuncDecl)
		if !ok || fn.Name.Name != "Default" {
			return true
		}
		ast.Inspect(fn.Body, func(n ast.Node) bool {
			lit, ok := n.(*ast.CompositeLit)
			if !ok {
				return true
			}
			if id, isIdent := lit.Type.(*ast.Ident); !isIdent || (id.Name != "Outbox" && id.Name != "Publish") {
				return true
			}
			for _, e := range lit.Elts {
				kv := e.(*ast.KeyValueExpr)
				found++
				ast.Inspect(kv.Value, func(n ast.Node) bool {
					if _, isLit := n.(*ast.BasicLit); isLit {
						t.Errorf("Default: %s.%s is a literal: take it from relay.Options.WithDefaults", lit.Type.(*ast.Ident).Name, kv.Key.(*ast.Ident).Name)
					}
					return true
				})
			}
			return false
		})
		return false
	})
	if found < 20 {
		t.Fatalf("found %d keys of Default's outbox and publish sections, want them all", found)
	}
}

// TestEveryDocumentedKeyIsASetting: every key of docs/configuration.md's
// publisher table is a key of Config (the reverse of the demo's
// TestConfigurationDocumentsEveryKey).
func TestEveryDocumentedKeyIsASetting(t *testing.T) {
	b, err := os.ReadFile("../../../docs/configuration.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, _ := strings.Cut(string(b), "## publisher (`configs/publisher.yaml`)")
	section, _, _ = strings.Cut(section, "\n## ")
	keys := map[string]bool{}
	var walk func(t reflect.Type, prefix string)
	walk = func(t reflect.Type, prefix string) {
		for i := range t.NumField() {
			f := t.Field(i)
			key := prefix + settings.KeyOf(f)
			keys[key] = true
			if f.Type.Kind() == reflect.Struct {
				walk(f.Type, key+".")
			}
		}
	}
	walk(reflect.TypeOf(Config{}), "")
	rows := regexp.MustCompile("(?m)^\\| `([a-z_.]+)` \\|").FindAllStringSubmatch(section, -1)
	if len(rows) < 20 {
		t.Fatalf("found %d rows in the publisher's table", len(rows))
	}
	for _, r := range rows {
		if !keys[r[1]] {
			t.Errorf("docs/configuration.md documents publisher key %s, which Config has no setting for", r[1])
		}
	}
}
