package main

import (
	"fmt"
	"reflect"
	"regexp"
	"strings"
	"time"

	pubconf "github.com/eventrelay/eventrelay/cmd/publisher/config"
	pconf "github.com/eventrelay/eventrelay/examples/catalog-demo/cmd/projector/config"
	catconf "github.com/eventrelay/eventrelay/examples/catalog-demo/conf"
	"github.com/eventrelay/eventrelay/settings"
)

// Daemons are the configurations the document has a table of, by the name
// its markers use.
var Daemons = map[string]any{
	"catalog":   catconf.Default(),
	"publisher": pubconf.Default(),
	"projector": pconf.Default(),
}

const header = "| Key | Environment | Default | Meaning |\n|---|---|---|---|\n"

var table = regexp.MustCompile(`(?s)(<!-- configdocs: ([a-z]+) -->\n)(.*?)(<!-- /configdocs -->)`)

// Render returns doc with every marked table written anew from its
// daemon's Default. A daemon without a table, or a table naming no
// daemon, is an error.
func Render(doc []byte) ([]byte, error) {
	var err error
	seen := map[string]bool{}
	out := table.ReplaceAllStringFunc(string(doc), func(m string) string {
		g := table.FindStringSubmatch(m)
		cfg, ok := Daemons[g[2]]
		if !ok {
			err = fmt.Errorf("a table for %q, which is no daemon's", g[2])
			return m
		}
		seen[g[2]] = true
		return g[1] + rows(settings.Keys(cfg), cells(g[3])) + g[4]
	})
	for name := range Daemons {
		if !seen[name] && err == nil {
			err = fmt.Errorf("no <!-- configdocs: %s --> table", name)
		}
	}
	return []byte(out), err
}

// rows is the table of keys, with the Default and Meaning cells of was
// (the table's rows before, by key) where they are the document's own.
func rows(keys []settings.Setting, was map[string][]string) string {
	var b strings.Builder
	b.WriteString(header)
	for _, s := range keys {
		def, meaning := "`"+shown(s)+"`", ""
		if old, ok := was[s.Key]; ok {
			if !literal.MatchString(old[0]) {
				def = old[0]
			}
			meaning = old[1]
		}
		env := ""
		if s.Env != "" {
			env = "`" + s.Env + "`"
		}
		fmt.Fprintf(&b, "| `%s` | %s | %s | %s |\n", s.Key, env, def, meaning)
	}
	return strings.ReplaceAll(b.String(), "|  |", "| |")
}

// cells reads a table's rows: by key, the Default cell and the Meaning
// cell (which may hold escaped bars, `on\|off`).
func cells(t string) map[string][]string {
	out := map[string][]string{}
	for _, line := range strings.Split(t, "\n") {
		c := split(line)
		if len(c) != 4 || !strings.HasPrefix(c[0], "`") {
			continue
		}
		out[strings.Trim(c[0], "`")] = c[2:]
	}
	return out
}

// split is the cells of a table row, trimmed: "| a | b |" is [a b]; an
// escaped bar (\|) stays in its cell.
func split(row string) []string {
	row = strings.TrimSpace(row)
	if !strings.HasPrefix(row, "|") || !strings.HasSuffix(row, "|") || len(row) < 2 {
		return nil
	}
	var out []string
	start := 1
	for i := 1; i < len(row); i++ {
		if row[i] == '|' && row[i-1] != '\\' {
			out = append(out, strings.TrimSpace(row[start:i]))
			start = i + 1
		}
	}
	return out
}

// literal is a Default cell that is one value (not "lease/4", "host name",
// "eventrelay_<schema>"): the generator writes it from the struct.
var literal = regexp.MustCompile("^`[^`<]*`$")

// shown is a setting's default as the tables write it: durations without
// trailing zero units (1m, 72h), a negated switch as what its key says
// (listen, the opposite of ListenOff), a map as {}.
func shown(s settings.Setting) string {
	v := s.Value.Interface()
	if s.Field.Tag.Get("negate") == "true" {
		v = !s.Value.Bool()
	}
	if d, ok := v.(time.Duration); ok {
		out := d.String()
		if strings.HasSuffix(out, "m0s") {
			out = strings.TrimSuffix(out, "0s")
		}
		if strings.HasSuffix(out, "h0m") {
			out = strings.TrimSuffix(out, "0m")
		}
		return out
	}
	if s.Value.Kind() == reflect.Map {
		return "{}"
	}
	return fmt.Sprint(v)
}
