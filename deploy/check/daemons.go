package check

import (
	"fmt"
	"net"
	"path/filepath"
	"strconv"
	"time"

	pubconf "github.com/eventrelay/eventrelay/cmd/publisher/config"
	pconf "github.com/eventrelay/eventrelay/examples/catalog-demo/cmd/projector/config"
	catconf "github.com/eventrelay/eventrelay/examples/catalog-demo/conf"
	"github.com/eventrelay/eventrelay/settings"
)

// Daemon is what a deployment unit needs to know about one daemon, computed
// by the daemon's own configuration loader (defaults, then the environment
// the unit sets, then validation), never copied by hand.
type Daemon struct {
	// Drain is the longest the daemon takes to stop after SIGTERM.
	Drain time.Duration
	// HTTPPort serves /healthz, /readyz and /metrics.
	HTTPPort int
}

// ConfigFile is the shipped configuration file of daemon: the publisher's
// in configs/, the catalog demo's daemons' in examples/catalog-demo/configs/.
func ConfigFile(daemon string) string {
	if daemon == "publisher" {
		return filepath.Join(Repo(), "configs", daemon+".yaml")
	}
	return filepath.Join(Repo(), "examples", "catalog-demo", "configs", daemon+".yaml")
}

// LoadDaemon loads the configuration of daemon (publisher, projector or
// catalog) as the binary does with -conf path (empty: defaults only), with
// the environment lookup.
func LoadDaemon(daemon, path string, lookup func(string) (string, bool)) (Daemon, error) {
	switch daemon {
	case "publisher":
		c := pubconf.Default()
		if err := settings.LoadWithEnv(path, &c, lookup); err != nil {
			return Daemon{}, fmt.Errorf("publisher configuration: %w", err)
		}
		return Daemon{Drain: c.Relay.StopTimeout(), HTTPPort: c.HTTP.Port}, nil
	case "projector":
		c := pconf.Default()
		if err := settings.LoadWithEnv(path, &c, lookup); err != nil {
			return Daemon{}, fmt.Errorf("projector configuration: %w", err)
		}
		return Daemon{Drain: c.Projector.DrainTimeout, HTTPPort: c.HTTP.Port}, nil
	case "catalog":
		c := catconf.Default()
		if err := settings.LoadWithEnv(path, &c, lookup); err != nil {
			return Daemon{}, fmt.Errorf("catalog configuration: %w", err)
		}
		_, port, err := net.SplitHostPort(c.Server.HTTPAddr)
		if err != nil {
			return Daemon{}, err
		}
		p, err := strconv.Atoi(port)
		if err != nil {
			return Daemon{}, fmt.Errorf("catalog server.http_addr port %q: %w", port, err)
		}
		return Daemon{Drain: c.Server.ShutdownTimeout, HTTPPort: p}, nil
	}
	return Daemon{}, fmt.Errorf("unknown daemon %q", daemon)
}

// StopMargin is the least time a unit allows beyond the drain for the
// process to exit once its drain timer fires.
const StopMargin = 5 * time.Second
