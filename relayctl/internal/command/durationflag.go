package command

import (
	"time"

	"github.com/eventrelay/eventrelay/settings"
)

// durationFlag is a flag.Value for time.Duration ("5m" or seconds).
type durationFlag struct{ d *time.Duration }

func (f *durationFlag) String() string {
	if f.d == nil {
		return ""
	}
	return f.d.String()
}

func (f *durationFlag) Set(s string) error {
	d, err := settings.ParseDuration(s)
	if err != nil {
		return err
	}
	*f.d = d
	return nil
}
