// Package wakeup tells the relay when rows may be ready: LISTEN on the
// outbox's NOTIFY channel over a dedicated connection, and the relay's row
// of outbox_wakeups, through which it asks writers to notify only while
// it is idle.
package wakeup
