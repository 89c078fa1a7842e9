// Package consoletest holds the browser tests of eventrelay's web console:
// a headless Chromium (Debian's chromium package) driven by chromedp opens
// the overview, filters failed rows, previews and performs a replay with a
// reason, and republishes a dead letter, against a private Postgres and
// pstest. Without chromium the tests skip, saying so; make console-test
// installs it and runs them.
package consoletest
