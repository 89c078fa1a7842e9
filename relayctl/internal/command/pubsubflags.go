package command

import (
	"context"
	"flag"
	"fmt"

	"cloud.google.com/go/pubsub/v2"

	"github.com/eventrelay/eventrelay/internal/errclass"
	"github.com/eventrelay/eventrelay/internal/gpubsub"
	"github.com/eventrelay/eventrelay/settings"
)

// pubsubFile is configs/pubsub.yaml: the connection and the resources.
// Its promoted Validate checks the resources only; the connection is
// validated once the flags are applied.
type pubsubFile struct {
	PubSub            gpubsub.Config `yaml:"pubsub"`
	gpubsub.Resources `yaml:",inline"`
}

// pubsubFlags select the Pub/Sub to talk to: -f configs/pubsub.yaml (with
// env overrides), then --project / --emulator-host on top.
type pubsubFlags struct {
	file     string
	project  string
	emulator string
	needFile bool
}

func addPubSubFlags(fs *flag.FlagSet, needFile bool) *pubsubFlags {
	p := &pubsubFlags{needFile: needFile}
	help := "Pub/Sub resources file, e.g. configs/pubsub.yaml"
	if !needFile {
		help += " (optional: resolves defaults such as the main topic of a DLQ)"
	}
	fs.StringVar(&p.file, "f", "", help)
	fs.StringVar(&p.project, "project", "", "Pub/Sub project id (default: the file's pubsub.project_id or env PUBSUB_PROJECT_ID)")
	fs.StringVar(&p.emulator, "emulator-host", "", "emulator or pstest host:port (default: the file's or env PUBSUB_EMULATOR_HOST; empty: Cloud Pub/Sub)")
	return p
}

// load returns the connection config and, with -f, the resources.
func (p *pubsubFlags) load(c *cli) (gpubsub.Config, *gpubsub.Resources, error) {
	var f pubsubFile
	if p.file == "" && p.needFile {
		return gpubsub.Config{}, nil, usageErr("-f is required (e.g. -f configs/pubsub.yaml)")
	}
	if p.file != "" {
		if err := settings.LoadWithEnv(p.file, &f, c.lookup); err != nil {
			return gpubsub.Config{}, nil, usageErr("%s: %v", p.file, err)
		}
	} else {
		f.PubSub.ProjectID = c.env("PUBSUB_PROJECT_ID", "")
		f.PubSub.EmulatorHost = c.env("PUBSUB_EMULATOR_HOST", "")
	}
	if p.project != "" {
		f.PubSub.ProjectID = p.project
	}
	if p.emulator != "" {
		f.PubSub.EmulatorHost = p.emulator
	}
	if err := f.PubSub.Validate("pubsub"); err != nil {
		where := "flags/env"
		if p.file != "" {
			where = p.file
		}
		return gpubsub.Config{}, nil, usageErr("%s: %v", where, err)
	}
	if p.file == "" {
		return f.PubSub, nil, nil
	}
	return f.PubSub, &f.Resources, nil
}

// connect loads the config, opens a client and probes it within
// --connect-timeout: the client retries an unreachable server until its
// caller's deadline, so without the probe a command would wait for minutes
// or (Pull) read the silence as "nothing there".
func (p *pubsubFlags) connect(ctx context.Context, c *cli) (*pubsub.Client, gpubsub.Config, *gpubsub.Resources, error) {
	cfg, res, err := p.load(c)
	if err != nil {
		return nil, cfg, nil, err
	}
	cl, err := gpubsub.NewClient(ctx, cfg)
	if err != nil {
		return nil, cfg, nil, fmt.Errorf("connecting to Pub/Sub: %w", err)
	}
	pctx, cancel := context.WithTimeout(ctx, c.connectTimeout)
	defer cancel()
	// Any answer proves the server is reachable; a refusal (say, no
	// permission to list topics) is left to the command's own calls.
	if err := gpubsub.Probe(pctx, cl, cfg.ProjectID, ""); err != nil {
		if r := errclass.Of(err); r == errclass.Timeout || r == errclass.Unavailable {
			cl.Close()
			where := "Cloud Pub/Sub"
			if cfg.EmulatorHost != "" {
				where = "the emulator at " + cfg.EmulatorHost
			}
			return nil, cfg, nil, fmt.Errorf("Pub/Sub unreachable: %s did not answer within --connect-timeout %s: %w", where, c.connectTimeout, err)
		}
	}
	return cl, cfg, res, nil
}
