package settings

import (
	"github.com/go-kratos/kratos/v2/config"
	"github.com/go-kratos/kratos/v2/config/env"
)

// boundEnv is an environment source whose variables are renamed to the
// keys their `env` tags bind them to (OUTBOX_LEASE_SECONDS sets
// outbox.lease); variables no tag names are left out.
type boundEnv struct {
	env  config.Source
	keys map[string]string // variable -> key
	set  map[string]string // key -> variable, of the variables set (Load fills it)
}

func (b boundEnv) Load() ([]*config.KeyValue, error) {
	kvs, err := b.env.Load()
	if err != nil {
		return nil, err
	}
	var bound []*config.KeyValue
	for _, kv := range kvs {
		if key, ok := b.keys[kv.Key]; ok {
			bound = append(bound, &config.KeyValue{Key: key, Value: kv.Value})
			b.set[key] = kv.Key
		}
	}
	return bound, nil
}

func (b boundEnv) Watch() (config.Watcher, error) { return b.env.Watch() }

// lookupSource is an environment source over a lookup function, for the
// variables names lists.
type lookupSource struct {
	lookup func(string) (string, bool)
	names  []string
}

func (s lookupSource) Load() ([]*config.KeyValue, error) {
	var kvs []*config.KeyValue
	for _, name := range s.names {
		if v, ok := s.lookup(name); ok {
			kvs = append(kvs, &config.KeyValue{Key: name, Value: []byte(v)})
		}
	}
	return kvs, nil
}

// Watch never reports a change: the environment of a process is fixed.
func (s lookupSource) Watch() (config.Watcher, error) { return env.NewWatcher() }

// bindings maps every variable named by an `env` tag of dst's struct to
// its key.
func bindings(dst any) map[string]string {
	keys := map[string]string{}
	for _, s := range Keys(dst) {
		if s.Env != "" {
			keys[s.Env] = s.Key
		}
	}
	return keys
}

// variables are the names bindings binds.
func variables(dst any) []string {
	var names []string
	for name := range bindings(dst) {
		names = append(names, name)
	}
	return names
}
