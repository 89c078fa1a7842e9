package outbox

import (
	"crypto/md5"
	"encoding/hex"
	"fmt"
)

// NotifyChannelPrefix starts every channel NotifyChannelFor derives.
const NotifyChannelPrefix = "eventrelay_outbox_"

// maxChannelBytes is Postgres' identifier limit (NAMEDATALEN-1): pg_notify
// refuses longer channel names and LISTEN truncates them.
const maxChannelBytes = 63

// NotifyChannelFor is the LISTEN/NOTIFY channel of the outbox in schema:
// NotifyChannelPrefix + schema, or, when that exceeds Postgres' 63-byte
// identifier limit, NotifyChannelPrefix + the hex MD5 of schema (50
// bytes). Each schema gets its own channel, so services sharing a
// database do not wake each other's relays. The Writer derives the same
// name in SQL from current_schema() (md5 of the name's bytes, as here, in
// a UTF-8 database), so both ends agree without configuration.
func NotifyChannelFor(schema string) string {
	c := NotifyChannelPrefix + schema
	if len(c) <= maxChannelBytes {
		return c
	}
	sum := md5.Sum([]byte(schema))
	return NotifyChannelPrefix + hex.EncodeToString(sum[:])
}

// CheckNotifyChannel reports whether channel can be used with LISTEN and
// pg_notify: non-empty and at most 63 bytes.
func CheckNotifyChannel(channel string) error {
	switch {
	case channel == "":
		return fmt.Errorf("channel name is empty")
	case len(channel) > maxChannelBytes:
		return fmt.Errorf("channel name %q is %d bytes, Postgres allows %d", channel, len(channel), maxChannelBytes)
	}
	return nil
}
