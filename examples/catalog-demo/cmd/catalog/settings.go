package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"strconv"

	"github.com/eventrelay/eventrelay/examples/catalog-demo/conf"
	"github.com/eventrelay/eventrelay/examples/catalog-demo/internal/biz"
	"github.com/eventrelay/eventrelay/examples/catalog-demo/internal/data"
	"github.com/eventrelay/eventrelay/settings"
)

// runSettings is `catalog settings set <switch> on|off -requested-by WHO
// -reason WHY`: it flips a read path switch for every catalog process
// (they follow within data.SwitchTTL, without a restart) and records the
// change in admin_audit, the audit log relayctl writes too.
func runSettings(args []string, out io.Writer, logger *slog.Logger) error {
	fs := flag.NewFlagSet("catalog settings set", flag.ContinueOnError)
	confPath := fs.String("conf", "configs/catalog.yaml", "config file (YAML); environment variables override it")
	requestedBy := fs.String("requested-by", "", "who asks (required, recorded in admin_audit)")
	reason := fs.String("reason", "", "why (required, recorded in admin_audit)")
	if len(args) < 1 || args[0] != "set" {
		return settings.Invalid(errors.New("usage: catalog settings set read_path.videos|read_path.search on|off -requested-by WHO -reason WHY"))
	}
	if err := fs.Parse(args[1:]); err != nil {
		return settings.Invalid(err)
	}
	rest := fs.Args()
	if len(rest) != 2 || (rest[0] != biz.PathVideos && rest[0] != biz.PathSearch) {
		return settings.Invalid(fmt.Errorf("usage: catalog settings set %s|%s on|off -requested-by WHO -reason WHY", biz.PathVideos, biz.PathSearch))
	}
	on, err := parseOnOff(rest[1])
	if err != nil {
		return settings.Invalid(err)
	}
	cfg := conf.Default()
	if err := settings.Load(*confPath, &cfg); err != nil {
		return err
	}
	d, cleanup, err := data.NewData(&cfg.Database, nil, logger)
	if err != nil {
		return err
	}
	defer cleanup()
	id, err := data.SetSwitch(context.Background(), d, rest[0], on, *requestedBy, *reason)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "%s set to %s (admin_audit id %d); catalog processes follow within %s\n", rest[0], rest[1], id, data.SwitchTTL)
	return nil
}

func parseOnOff(s string) (bool, error) {
	switch s {
	case "on":
		return true, nil
	case "off":
		return false, nil
	}
	b, err := strconv.ParseBool(s)
	if err != nil {
		return false, fmt.Errorf("want on or off, got %q", s)
	}
	return b, nil
}
