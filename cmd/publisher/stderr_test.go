package main

import (
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/eventrelay/eventrelay/internal/ops/opstest"
)

// TestStderrHoldsOnlyJSONLines: from its start through loading the
// shipped configuration file and the environment to serving /healthz, the
// daemon writes nothing on stderr but JSON lines. Kratos' config package
// logs every key it loads and the end of its watchers through Kratos'
// global logger, which prints plain text on stderr unless it is routed.
func TestStderrHoldsOnlyJSONLines(t *testing.T) {
	port := opstest.FreePort(t)
	cmd := exec.Command(publisherBinary(t), "-conf", "../../configs/publisher.yaml")
	cmd.Env = append(os.Environ(), "DATABASE_URL=postgres://u@127.0.0.1:1/db", "PUBSUB_PROJECT_ID=stderr-test",
		"PUBSUB_EMULATOR_HOST=127.0.0.1:1", "OUTBOX_HTTP_HOST=127.0.0.1", "OUTBOX_HTTP_PORT="+strconv.Itoa(port))
	stderr := &syncBuffer{}
	cmd.Stdout, cmd.Stderr = io.Discard, stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	deadline := time.Now().Add(60 * time.Second)
	for {
		resp, err := http.Get("http://127.0.0.1:" + strconv.Itoa(port) + "/healthz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no /healthz within a minute; stderr:\n%s", stderr.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
	time.Sleep(500 * time.Millisecond) // the config watchers end after the load
	for _, line := range strings.Split(stderr.String(), "\n") {
		if line != "" && !json.Valid([]byte(line)) {
			t.Errorf("stderr line is not JSON: %s", line)
		}
	}
}
