package command

// secretFlag is a flag.Value for a connection string or URL that may carry a
// password. Its String, which flag uses for the "(default ...)" of --help and
// usage after a bad flag, shows the value redacted: a default taken from the
// environment is never printed with its password.
type secretFlag struct {
	s      *string
	redact func(string) string
}

func (f *secretFlag) String() string {
	if f == nil || f.s == nil || *f.s == "" {
		return ""
	}
	return f.redact(*f.s)
}

func (f *secretFlag) Set(v string) error {
	*f.s = v
	return nil
}
