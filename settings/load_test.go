package settings

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

type sample struct {
	Outbox struct {
		Concurrency int           `yaml:"concurrency" env:"OUTBOX_CONCURRENCY"`
		Lease       time.Duration `yaml:"lease" env:"OUTBOX_LEASE_SECONDS"`
		Topics      []string      `yaml:"topics" env:"OUTBOX_TOPICS"`
	} `yaml:"outbox"`
	Debug bool `yaml:"debug" env:"DEBUG"`
}

func (s *sample) Validate() error {
	if s.Outbox.Concurrency < 1 {
		return fmt.Errorf("outbox.concurrency (OUTBOX_CONCURRENCY) must be >= 1, got %d", s.Outbox.Concurrency)
	}
	return nil
}

func write(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "c.yaml")
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func environ(m map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

func TestLoadFileThenEnv(t *testing.T) {
	p := write(t, "outbox:\n  concurrency: 2\n  lease: 15s\n  topics: [a]\n")
	var c sample
	err := LoadWithEnv(p, &c, environ(map[string]string{"OUTBOX_LEASE_SECONDS": "30", "OUTBOX_TOPICS": "x, y", "DEBUG": "true"}))
	if err != nil {
		t.Fatal(err)
	}
	if c.Outbox.Concurrency != 2 || c.Outbox.Lease != 30*time.Second || !c.Debug ||
		len(c.Outbox.Topics) != 2 || c.Outbox.Topics[1] != "y" {
		t.Fatalf("got %+v", c)
	}
}

func TestLoadErrorsNameTheKey(t *testing.T) {
	cases := []struct {
		name, file string
		env        map[string]string
		want       []string
	}{
		{"bad env int", "outbox: {concurrency: 1}", map[string]string{"OUTBOX_CONCURRENCY": "many"}, []string{"outbox.concurrency", "OUTBOX_CONCURRENCY"}},
		{"bad env duration", "outbox: {concurrency: 1}", map[string]string{"OUTBOX_LEASE_SECONDS": "soon"}, []string{"outbox.lease", "OUTBOX_LEASE_SECONDS"}},
		{"unknown yaml key", "outbox: {concurency: 1}", nil, []string{"concurency"}},
		{"validation", "outbox: {concurrency: 0}", nil, []string{"outbox.concurrency"}},
		{"bad yaml duration", "outbox: {concurrency: 1, lease: soon}", nil, []string{"lease"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var c sample
			err := LoadWithEnv(write(t, tc.file), &c, environ(tc.env))
			if err == nil {
				t.Fatal("want error")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Fatalf("error %q does not mention %q", err, w)
				}
			}
		})
	}
}

type zeroSample struct {
	Batch struct {
		Size      int           `yaml:"size" env:"BATCH_SIZE"`
		Linger    time.Duration `yaml:"linger" env:"BATCH_LINGER"`
		Retention time.Duration `yaml:"retention" env:"RETENTION" zero:"allowed"`
		Offset    int           `yaml:"offset" env:"OFFSET"`
	} `yaml:"batch"`
}

// An explicit 0 for a number whose default is not 0 is refused naming key
// and variable (from the file and from the environment), unless the field
// allows it; a number whose default is 0 takes 0. Every error is
// ErrInvalid, which daemons exit with ExitInvalid.
func TestExplicitZeroOfADefaultIsRefused(t *testing.T) {
	defaults := func() *zeroSample {
		s := &zeroSample{}
		s.Batch.Size, s.Batch.Linger, s.Batch.Retention = 100, 20*time.Millisecond, time.Hour
		return s
	}
	cases := []struct {
		file string
		env  map[string]string
		want string
	}{
		{"", map[string]string{"BATCH_SIZE": "0"}, "batch.size (BATCH_SIZE) is 0, which would not mean 0 but the default 100"},
		{"batch:\n  linger: 0s\n", nil, "batch.linger (BATCH_LINGER) is 0, which would not mean 0 but the default 20ms"},
		{"", map[string]string{"RETENTION": "0", "OFFSET": "0"}, ""},
	}
	for _, c := range cases {
		path := ""
		if c.file != "" {
			path = write(t, c.file)
		}
		err := LoadWithEnv(path, defaults(), environ(c.env))
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%q %v: %v", c.file, c.env, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want) || !errors.Is(err, ErrInvalid) || ExitStatus(err) != ExitInvalid):
			t.Errorf("%q %v: %v, want an invalid-configuration error containing %q", c.file, c.env, err, c.want)
		}
	}
	if ExitStatus(errors.New("database unreachable")) != 1 {
		t.Error("a runtime error must not exit as an invalid configuration")
	}
}

// A section a struct keeps as it is (map[string]any or any) holds the
// file's values, an empty string included.
func TestLoadKeepsAnUntypedSection(t *testing.T) {
	p := write(t, "outbox:\n  concurrency: 1\nextra:\n  project_id: p-1\n  emulator_host: \"\"\n")
	var c struct {
		sample `yaml:",inline"`
		Extra  map[string]any `yaml:"extra"`
	}
	if err := LoadWithEnv(p, &c, environ(nil)); err != nil {
		t.Fatal(err)
	}
	if c.Extra["project_id"] != "p-1" || c.Extra["emulator_host"] != "" {
		t.Fatalf("extra = %#v, want project_id p-1 and an empty emulator_host", c.Extra)
	}
}
