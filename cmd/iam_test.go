package cmd_test

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"cloud.google.com/go/pubsub/v2"
	"cloud.google.com/go/pubsub/v2/pstest"

	"github.com/eventrelay/eventrelay/internal/gpubsub"
	"github.com/eventrelay/eventrelay/internal/gpubsub/strict"
)

// operatorMember stands for the group of operators running relayctl.
const operatorMember = "group:eventrelay-operators@example.com"

// TestManifestIAMRunsTheDaemons runs the publisher, the projector and the
// catalog with the environment and arguments of the rendered gke overlay
// (-conf "" included), each against the strict Pub/Sub double as the
// Google service account its Workload Identity annotation names, holding
// exactly the Pub/Sub roles the rendered IAMPolicyMember objects grant it;
// relayctl runs as the operators' documented roles (docs/deploy-gke.md
// section 4) and creates configs/pubsub.yaml's resources, which the double
// refuses when the service agent's bindings could not forward a
// subscription's dead letters. Every daemon must become ready, a video
// written over HTTP must be published and projected, a malformed message
// must be dead-lettered by the projector, replayed by relayctl dlq replay
// and dead-lettered again, and the double must have refused nothing.
// Elasticsearch is not run: the projector's search projection is off.
func TestManifestIAMRunsTheDaemons(t *testing.T) {
	// Rendering (kustomize through go run) and building come before the
	// budget: on a loaded machine they take minutes; only the run is bounded.
	m := renderManifests(t)
	bin := buildDaemons(t)
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	st := newStack(ctx, t, bin)

	pubEnv, _ := m.env(t, "publisher")
	project := pubEnv["PUBSUB_PROJECT_ID"]
	if project == "" {
		t.Fatal("the rendered publisher has no PUBSUB_PROJECT_ID")
	}
	policy := m.iam(t, project, operatorMember)
	srv := pstest.NewServer()
	t.Cleanup(func() { _ = srv.Close() })
	double, err := strict.Start(strict.Options{Upstream: srv.Addr, IAM: policy})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(double.Close)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("policy from the manifests: %+v\nrefused by the double: %s", policy, distinct(double.Denials()))
		}
	})
	hostOf := func(member string) string {
		addr, err := double.ListenAs(member)
		if err != nil {
			t.Fatal(err)
		}
		return addr
	}
	opHost := hostOf(operatorMember)
	opEnv := []string{"DATABASE_URL=" + st.opURL, "PUBSUB_EMULATOR_HOST=" + opHost, "PUBSUB_PROJECT_ID=" + project}
	resources := filepath.Join(repoRoot(t), "configs", "pubsub.yaml")
	run(ctx, t, st.bin, "relayctl", opEnv, "pubsub", "ensure", "-f", resources, "-by", "test", "-why", "iam")

	// Each daemon as its manifest runs it, as its own database role and
	// Google identity; the ports are the test's.
	daemon := func(name string, own ...string) func() {
		env, args := m.env(t, name)
		if !slices.Equal(args, []string{"-conf", ""}) {
			t.Fatalf("%s runs with %q; this test starts daemons with -conf \"\"", name, args)
		}
		env["DATABASE_URL"] = st.urlOf(st.role(name))
		env["PUBSUB_EMULATOR_HOST"] = hostOf(m.member(t, name))
		for _, kv := range own {
			k, v, _ := strings.Cut(kv, "=")
			env[k] = v
		}
		var list []string
		for k, v := range env {
			list = append(list, k+"="+v)
		}
		return start(ctx, t, st.bin, name, list)
	}
	daemon("catalog", fmt.Sprintf("CATALOG_HTTP_ADDR=127.0.0.1:%d", st.catHTTP), fmt.Sprintf("CATALOG_GRPC_ADDR=127.0.0.1:%d", st.catGRPC))
	daemon("publisher", fmt.Sprintf("OUTBOX_HTTP_PORT=%d", st.pubPort), "OUTBOX_WORKER_ID=publisher-iam")
	daemon("projector", fmt.Sprintf("PROJECTOR_HTTP_PORT=%d", st.projPort), "PROJECTOR_SEARCH_ENABLED=false")
	for name, port := range map[string]int{"catalog": st.catHTTP, "publisher": st.pubPort, "projector": st.projPort} {
		waitReady(ctx, t, name, port)
	}

	// Write -> publish -> project.
	id := postVideo(t, st.catHTTP)
	oc := connect(ctx, t, st.opURL)
	defer oc.Close(ctx)
	waitFor(ctx, t, "the video published and projected", func() bool {
		return count(ctx, t, oc, "SELECT count(*) FROM catalog.video_projection WHERE video_id = '"+id+"'") == 1 &&
			count(ctx, t, oc, "SELECT count(*) FROM catalog.outbox_events WHERE status <> 'published'") == 0
	})

	// Dead-letter: an operator publishes a malformed message; the
	// projector dead-letters it itself.
	cl, err := gpubsub.NewClient(ctx, gpubsub.Config{ProjectID: project, EmulatorHost: opHost})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	pub := cl.Publisher("catalog.video.events")
	pub.EnableMessageOrdering = true
	key := "iam-poison-" + randomHex(t)
	if _, err := pub.Publish(ctx, &pubsub.Message{Data: []byte("\xff not an envelope"), OrderingKey: key, Attributes: map[string]string{
		"event_id": uuidV4(t), "event_type": "catalog.video.updated", "aggregate_type": "catalog.video",
		"aggregate_id": key, "version": "1", "schema_version": "1",
	}}).Get(ctx); err != nil {
		t.Fatalf("publishing as the operator: %v", err)
	}
	pub.Stop()
	waitFor(ctx, t, "the projector dead-lettering the malformed message", func() bool {
		return metric(t, st.projPort, "projector_dead_lettered_total") >= 1
	})

	// Replay as the operator: the projector receives it again and
	// dead-letters it again.
	out := relayctlOutput(ctx, t, st.bin, opEnv, "dlq", "replay", "--subscription", "catalog.video.events.dlq-pg", "--all",
		"-f", resources, "-by", "test", "-why", "iam")
	if !strings.Contains(out, "replayed 1 message(s)") {
		t.Fatalf("relayctl dlq replay as the operator: %s", out)
	}
	waitFor(ctx, t, "the replayed message dead-lettered again", func() bool {
		return metric(t, st.projPort, "projector_dead_lettered_total") >= 2
	})

	// The kubelet keeps probing: every daemon is still ready after the
	// cycle (the publisher's readiness now covers the topic it published
	// to).
	for name, port := range map[string]int{"catalog": st.catHTTP, "publisher": st.pubPort, "projector": st.projPort} {
		waitReady(ctx, t, name, port)
	}
	if n := metric(t, st.pubPort, "outbox_store_errors_total"); n != 0 {
		t.Errorf("outbox_store_errors_total = %v, want 0", n)
	}
	if d := double.Denials(); len(d) > 0 {
		t.Errorf("the double refused %d call(s) the manifests do not grant: %s", len(d), distinct(d))
	}
}

// relayctlOutput runs relayctl and returns its standard output and error.
func relayctlOutput(ctx context.Context, t *testing.T, bin string, env []string, args ...string) string {
	t.Helper()
	cmd := exec.CommandContext(ctx, filepath.Join(bin, "relayctl"), args...)
	cmd.Env = append(baseEnv(), env...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("relayctl %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// distinct lists each denial once, with how often it happened.
func distinct(ds []strict.Denial) string {
	n := map[string]int{}
	var order []string
	for _, d := range ds {
		if n[d.String()] == 0 {
			order = append(order, d.String())
		}
		n[d.String()]++
	}
	var b strings.Builder
	for _, s := range order {
		fmt.Fprintf(&b, "\n  %dx %s", n[s], s)
	}
	return b.String()
}
