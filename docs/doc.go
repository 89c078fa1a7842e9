// Package docs holds the repository's documentation checks: every
// relative link in the Markdown files resolves inside the repository, and
// the configuration tables name every key the daemons' configs/*.yaml
// name. It has no code of its own.
package docs
