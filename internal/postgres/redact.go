package postgres

import (
	"errors"
	"net/url"
	"regexp"
	"sort"
	"strings"
)

// masked replaces a password wherever one is redacted.
const masked = "xxxxx"

// passwordInURL matches the userinfo password of a URL in text, up to the
// last @ of its token (a password may hold an unescaped @ or spaces
// url.Parse refuses); passwordKV a keyword/value password, quoted (with
// backslash escapes) or not; passwordQuery a password query parameter.
var (
	passwordInURL = regexp.MustCompile(`(?i)(://[^:/@\s]*:)\S*@`)
	passwordKV    = regexp.MustCompile(`(?i)password\s*=\s*('(?:[^'\\]|\\.)*'|\S+)`)
	passwordQuery = regexp.MustCompile(`(?i)([?&]password=)([^&\s]*)`)
)

// Redact returns the connection string (URL or keyword/value form) with
// any password replaced, for logs, errors and pages. It never parses
// strictly: a malformed string (an unescaped @ or space in the password,
// a bad port) is redacted as well as a valid one.
func Redact(dsn string) string {
	scheme, rest, isURL := strings.Cut(dsn, "://")
	if !isURL {
		return passwordKV.ReplaceAllString(dsn, "password="+masked)
	}
	if user, pw, ok := urlPassword(rest); ok && pw != "" {
		rest = user + ":" + masked + rest[len(user)+1+len(pw):]
	}
	return scheme + "://" + passwordQuery.ReplaceAllString(rest, "${1}"+masked)
}

// urlPassword splits the part of a URL after "://" into its user and its
// password: the userinfo ends at the last @ (anything before it belongs to
// the password, unescaped @ and / included).
func urlPassword(rest string) (user, pw string, ok bool) {
	at := strings.LastIndex(rest, "@")
	if at < 0 {
		return "", "", false
	}
	user, pw, ok = strings.Cut(rest[:at], ":")
	if !ok || strings.ContainsAny(user, "/?#") {
		return "", "", false
	}
	return user, pw, true
}

// CheckURL refuses a URL whose user or password holds an unescaped @:
// drivers disagree on where its host starts (one looks up the password's
// tail as a host name and prints it in its error).
func CheckURL(dsn string) error {
	_, rest, isURL := strings.Cut(dsn, "://")
	if !isURL {
		return nil
	}
	if i := strings.IndexAny(rest, "?#"); i >= 0 {
		rest = rest[:i]
	}
	if strings.Count(rest, "@") > 1 {
		return errors.New("has an unescaped @ in its user or password: percent-encode it as %40 (the password is not shown)")
	}
	return nil
}

// Scrubber removes the passwords of connection strings from any text: the
// strings themselves, and each password alone, also its pieces a parser
// that split it at an @ would print as a host name.
type Scrubber struct{ secrets []string }

// minSecret is the shortest password (or piece of one) scrubbed alone:
// shorter ones would match ordinary text (the URLs are redacted whatever
// their password's length).
const minSecret = 4

// NewScrubber returns a Scrubber of the passwords in dsns (URLs or
// keyword/value strings, valid or not).
func NewScrubber(dsns ...string) Scrubber {
	seen := map[string]bool{}
	var s Scrubber
	add := func(v string) {
		if len(v) >= minSecret && !seen[v] {
			seen[v] = true
			s.secrets = append(s.secrets, v)
		}
	}
	for _, dsn := range dsns {
		for _, pw := range passwordsOf(dsn) {
			add(pw)
			add(url.QueryEscape(pw))
			if d, err := url.PathUnescape(pw); err == nil {
				add(d)
			}
			parts := strings.Split(pw, "@")
			for i := 1; i < len(parts); i++ {
				add(strings.Join(parts[:i], "@"))
				add(strings.Join(parts[i:], "@"))
			}
		}
	}
	// Longest first: a piece never leaves the rest of a longer secret.
	sort.Slice(s.secrets, func(i, j int) bool { return len(s.secrets[i]) > len(s.secrets[j]) })
	return s
}

// Scrub returns text without the passwords: any URL's or keyword/value
// password, then each known secret.
func (s Scrubber) Scrub(text string) string {
	text = scrubString(text)
	for _, v := range s.secrets {
		text = strings.ReplaceAll(text, v, masked)
	}
	return text
}

// passwordsOf are the passwords a connection string carries, read as
// leniently as Redact reads it.
func passwordsOf(dsn string) []string {
	var out []string
	if _, rest, isURL := strings.Cut(dsn, "://"); isURL {
		if _, pw, ok := urlPassword(rest); ok {
			out = append(out, pw)
		}
		for _, m := range passwordQuery.FindAllStringSubmatch(rest, -1) {
			out = append(out, m[2])
		}
		return out
	}
	for _, m := range passwordKV.FindAllStringSubmatch(dsn, -1) {
		v := m[1]
		if strings.HasPrefix(v, "'") {
			v = strings.ReplaceAll(strings.Trim(v, "'"), `\'`, "'")
		}
		out = append(out, v)
	}
	return out
}

// scrub removes passwords from errors that quote the connection string.
func scrub(err error) string { return scrubString(err.Error()) }

func scrubString(s string) string {
	s = passwordInURL.ReplaceAllString(s, "${1}"+masked+"@")
	s = passwordQuery.ReplaceAllString(s, "${1}"+masked)
	return passwordKV.ReplaceAllString(s, "password="+masked)
}
