package check

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// rolloutRun runs scripts/rollout.sh with the real kubectl against f, on a
// copy of deploy/k8s whose gke overlay names release; relayctl is a
// stand-in that tells f it ran. It returns the script's stderr and error.
func rolloutRun(t *testing.T, f *fakeAPI, release string) (string, error) {
	t.Helper()
	kubectl, err := exec.LookPath("kubectl")
	if err != nil {
		t.Fatal("kubectl not found: the rollout test runs the real kubectl against a fake API server (install kubectl)")
	}
	dir := t.TempDir()
	k8s := filepath.Join(dir, "k8s")
	if err := os.CopyFS(k8s, os.DirFS(filepath.Join(Repo(), "deploy", "k8s"))); err != nil {
		t.Fatal(err)
	}
	overlay := filepath.Join(k8s, "overlays", "gke")
	if err := os.WriteFile(filepath.Join(overlay, "release.env"), []byte("EVENTRELAY_RELEASE="+release+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	kubeconfig := filepath.Join(dir, "kubeconfig")
	if err := os.WriteFile(kubeconfig, []byte(f.Kubeconfig()), 0o600); err != nil {
		t.Fatal(err)
	}
	relayctl := filepath.Join(dir, "relayctl")
	stub := "#!/bin/sh\nexec " + kubectl + " get --raw \"/relayctl/$1\" >/dev/null\n"
	if err := os.WriteFile(relayctl, []byte(stub), 0o755); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(Repo(), "scripts", "rollout.sh"), overlay)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+kubeconfig, "RELAYCTL="+relayctl,
		"MIGRATE_TIMEOUT=3m", "ROLLOUT_TIMEOUT=3m", "SKIP_RELAYCTL=")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	err = cmd.Run()
	return stderr.String(), err
}

// index is the position of the first event equal to e, -1 if none.
func index(events []string, e string) int {
	for i, x := range events {
		if x == e {
			return i
		}
	}
	return -1
}

// TestRolloutScriptPhases: scripts/rollout.sh applies the migration, waits
// for its Job, applies the writers and the publisher, waits for their
// rollouts and checks the outbox, and only then applies the projector, waits
// for it and verifies, against a fake API server answering the real
// kubectl (fakeapi_test.go says why not a real one).
func TestRolloutScriptPhases(t *testing.T) {
	f := newFakeAPI(t)
	out, err := rolloutRun(t, f, "v1.2.3")
	ev := f.Events()
	if err != nil {
		t.Fatalf("rollout.sh: %v\n%s\nrequests: %q", err, out, ev)
	}
	// Each group's requests come after every request of the group before.
	phases := [][]string{
		{"create ConfigMap/eventrelay-release", "create Job/migrate-v1.2.3"},
		{"list Job/migrate-v1.2.3"}, // kubectl wait
		{"create Deployment/publisher", "create Deployment/catalog"},
		{"list Deployment/publisher", "list Deployment/catalog"}, // kubectl rollout status
		{"relayctl status"},
		{"create Deployment/projector"},
		{"list Deployment/projector"},
		{"relayctl verify"},
	}
	last, lastEvent := -1, ""
	for _, group := range phases {
		end := last
		for _, e := range group {
			i := index(ev, e)
			if i < 0 || i < last {
				t.Fatalf("%q at %d, want it after %q at %d (phases %q)\nrequests: %q", e, i, lastEvent, last, phases, ev)
			}
			if i > end {
				end, lastEvent = i, e
			}
		}
		last = end
	}
	o := render(t, gkeOverlay)
	creates := 0
	for i, e := range ev {
		if strings.HasPrefix(e, "unexpected") {
			t.Errorf("kubectl asked what the phases do not need: %s", e)
		}
		if !strings.HasPrefix(e, "create ") {
			continue
		}
		creates++
		projector := strings.Contains(e, "/projector")
		if before := i < index(ev, "relayctl status"); projector == before {
			t.Errorf("%s at %d: projector objects belong after the phase 2 gate (at %d), all others before it", e, i, index(ev, "relayctl status"))
		}
	}
	want := len(o.Deployments) + len(o.Jobs) + len(o.PDBs) + len(o.HPAs) + len(o.ServiceAccounts) + len(o.NetworkPolicies) +
		len(o.PodMonitorings) + len(o.Rules) + len(o.ConfigMaps) + o.Other
	if creates != want {
		t.Errorf("%d objects created, the rendering has %d: each must be applied exactly once", creates, want)
	}
}

// TestRolloutScriptStopsAtAFailedGate: a failed migration Job stops the
// release before any Deployment changes; a publisher rollout past its
// progress deadline stops it before the projector; the placeholder
// release is refused before anything is applied.
func TestRolloutScriptStopsAtAFailedGate(t *testing.T) {
	cases := []struct {
		name, release, want, never string
		setup                      func(f *fakeAPI)
	}{
		{"migration failed", "v1.2.3", "job/migrate-v1.2.3 failed", "create Deployment/",
			func(f *fakeAPI) { f.jobResult = "Failed" }},
		{"publisher stuck", "v1.2.3", "deploy/publisher did not roll out", "create Deployment/projector",
			func(f *fakeAPI) { f.stuck["publisher"] = true }},
		{"placeholder release", "v0.0.0-unset", "placeholder v0.0.0-unset", "create ",
			func(*fakeAPI) {}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := newFakeAPI(t)
			c.setup(f)
			out, err := rolloutRun(t, f, c.release)
			ev := f.Events()
			if err == nil {
				t.Fatalf("rollout.sh exited 0, want a failure\n%s\nrequests: %q", out, ev)
			}
			if !strings.Contains(out, c.want) {
				t.Errorf("stderr %q, want it to say %q", out, c.want)
			}
			for _, e := range ev {
				if strings.HasPrefix(e, c.never) || strings.HasPrefix(e, "relayctl") {
					t.Errorf("after the failed gate: %s\nrequests: %q", e, ev)
				}
			}
		})
	}
}
