package embedded

import (
	"github.com/go-kratos/kratos/v2/config"

	"github.com/eventrelay/eventrelay/projector"
	"github.com/eventrelay/eventrelay/relay"
	"github.com/eventrelay/eventrelay/settings"
)

// ConfigKey is the key of eventrelay's settings in a service's own Kratos
// configuration: ConfigKey.relay holds relay.Options and
// ConfigKey.projector projector.Options, each field under the key the
// daemons read it by (its name in snake case or its yaml tag: bulk_size,
// log_slot, publish.max_message_bytes, drain_timeout; 0 of a key with an
// off switch turns it off), with the meaning, default and range its doc
// states:
//
//	eventrelay:
//	  relay:
//	    concurrency: 8
//	    lease: 45s
//	  projector:
//	    drain_timeout: 30s
const ConfigKey = "eventrelay"

// engineSettings is what ConfigKey holds.
type engineSettings struct {
	Relay     relay.Options     `yaml:"relay"`
	Projector projector.Options `yaml:"projector"`
}

// ScanConfig sets o.Relay and o.Projector from the service's Kratos
// configuration c (loaded) under ConfigKey; the fields o already has
// are the defaults, a key c leaves out keeps them. A key Options lacks,
// a value of the wrong type, and an explicit 0 for a field o set to
// something else are refused naming the key (settings.Scan); New then
// checks the values as it checks Options set in code.
func (o *Options) ScanConfig(c config.Config) error {
	s := engineSettings{Relay: o.Relay, Projector: o.Projector}
	if err := settings.Scan(c, ConfigKey, &s); err != nil {
		return err
	}
	o.Relay, o.Projector = s.Relay, s.Projector
	return nil
}
