package embedded

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"testing"
)

func TestLoggerWritesCloudLoggingLines(t *testing.T) {
	var buf bytes.Buffer
	Logger(&buf, slog.LevelInfo, "orders").Warn("starting", "database", RedactDatabaseURL("postgres://orders:secret@db/orders"))
	var line map[string]any
	if err := json.Unmarshal(buf.Bytes(), &line); err != nil {
		t.Fatalf("%q: %v", buf.String(), err)
	}
	if line["severity"] != "WARNING" || line["message"] != "starting" || line["service"] != "orders" {
		t.Errorf("line %v: want severity WARNING, message starting, service orders", line)
	}
	if db := line["database"].(string); bytes.Contains([]byte(db), []byte("secret")) {
		t.Errorf("database %q shows the password", db)
	}
}
