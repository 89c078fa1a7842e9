package command

import "github.com/eventrelay/eventrelay/internal/conf"

// durationFlag is a flag.Value for conf.Duration ("5m" or seconds).
type durationFlag struct{ d *conf.Duration }

func (f *durationFlag) String() string {
	if f.d == nil {
		return ""
	}
	return f.d.String()
}

func (f *durationFlag) Set(s string) error {
	d, err := conf.ParseDuration(s)
	if err != nil {
		return err
	}
	*f.d = conf.Duration(d)
	return nil
}
