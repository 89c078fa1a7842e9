package admin_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/eventrelay/eventrelay/elastic"
	"github.com/eventrelay/eventrelay/elastic/elastictest"
)

// TestReindexAndVerifySearch: the index behind the alias is lost; verify
// says so; rebuild --reindex builds it from video_projection and swaps the
// alias; verify passes; a hand-made bad document is named.
func TestReindexAndVerifySearch(t *testing.T) {
	t.Parallel()
	s := newStack(t)
	es := elastictest.New(elastictest.Options{})
	t.Cleanup(es.Close)
	v := s.createVideo("kept")
	s.updateVideo(v, "kept, updated")
	gone := s.deleteVideo(s.createVideo("deleted"))
	for i := 0; i < 5; i++ {
		s.createVideo("more")
	}
	s.eventually(30*time.Second, ExitOK, "verify")

	env := map[string]string{"ELASTIC_URL": es.URL}
	for k, val := range s.env {
		env[k] = val
	}
	// No index yet: everything is missing from search; the rebuild creates
	// it from the Postgres projection.
	if r := relayctl(t, env, "verify"); r.code != ExitProblem || !strings.Contains(r.stdout, "the alias does not exist") || !strings.Contains(r.stdout, "missing_tombstone") {
		t.Fatalf("verify without the index: exit %d, want %d", r.code, ExitProblem)
	}
	// Elasticsearch unreachable: exit 3, not drift.
	if r := relayctl(t, env, "verify", "--elastic-url", "http://127.0.0.1:1"); r.code != ExitRuntime {
		t.Fatalf("verify with Elasticsearch unreachable: exit %d, want %d", r.code, ExitRuntime)
	}
	// The dry run shows exactly what the run does: a reindex and no
	// restatement.
	dry := relayctl(t, env, "rebuild", "--reindex", "--restate=false", "--dry-run")
	if dry.code != ExitOK || planLines(dry.stdout) != "rebuild plan: rebuild the index behind alias videos from video_projection, then swap the alias" {
		t.Fatalf("rebuild --reindex --restate=false --dry-run: exit %d, plan %q", dry.code, planLines(dry.stdout))
	}
	outboxBefore := count(t, s.db, "SELECT count(*) FROM outbox_events")
	r := relayctl(t, env, "rebuild", "--reindex", "--restate=false", "--by", "alice", "--why", "INC-11 index lost")
	if r.code != ExitOK || !strings.Contains(r.stdout, "reindexed 7 document(s)") {
		t.Fatalf("rebuild --reindex: exit %d", r.code)
	}
	if planLines(r.stdout) != planLines(dry.stdout) {
		t.Fatalf("the run's plan %q differs from the dry run's %q", planLines(r.stdout), planLines(dry.stdout))
	}
	if n := count(t, s.db, "SELECT count(*) FROM outbox_events"); n != outboxBefore {
		t.Fatalf("rebuild --restate=false wrote %d outbox row(s)", n-outboxBefore)
	}
	r = relayctl(t, env, "verify")
	if r.code != ExitOK || !strings.Contains(r.stdout, "elasticsearch alias videos: OK (7 rows, 1 tombstones)") {
		t.Fatalf("verify after reindex: exit %d", r.code)
	}

	// Reindex again: a new index, the alias moves, still converged.
	if r := relayctl(t, env, "rebuild", "--reindex", "--restate=false", "--by", "alice", "--why", "again"); r.code != ExitOK {
		t.Fatalf("second reindex: exit %d", r.code)
	}
	s.eventually(10*time.Second, ExitOK, "verify", "--elastic-url", es.URL)

	// A resurrected delete and a stale document are named.
	client, err := elastic.New(elastic.Config{URL: es.URL})
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	_, err = client.BulkIndex(context.Background(), "videos", []elastic.Doc{
		{ID: gone.ID.String(), Version: gone.Version + 5, Source: []byte(`{"video_id":"` + gone.ID.String() + `","deleted":false,"title":"zombie"}`)},
	})
	if err != nil {
		t.Fatal(err)
	}
	r = relayctl(t, env, "verify")
	if r.code != ExitProblem || !strings.Contains(r.stdout, "ahead") || !strings.Contains(r.stdout, gone.ID.String()) || !strings.Contains(r.stdout, "postgres video_projection: OK") {
		t.Fatalf("verify with a bad document: exit %d, want 1 naming %s", r.code, gone.ID)
	}
}

// TestRebuildAfterLosingBothReadModels is the acceptance scenario with the
// search projection running: video_projection truncated and the search
// index deleted; one `rebuild --reindex` later, verify exits 0.
func TestRebuildAfterLosingBothReadModels(t *testing.T) {
	t.Parallel()
	es := elastictest.New(elastictest.Options{})
	t.Cleanup(es.Close)
	s := newStack(t, es)
	for i := 0; i < 6; i++ {
		v := s.createVideo("video")
		if i%3 == 0 {
			s.updateVideo(v, "updated")
		}
	}
	s.deleteVideo(s.createVideo("deleted"))
	r := s.eventually(30*time.Second, ExitOK, "verify")
	if !strings.Contains(r.stdout, "elasticsearch alias videos: OK (7 rows, 1 tombstones)") {
		t.Fatalf("verify did not compare the index:\n%s", r.stdout)
	}

	exec(t, s.db, "TRUNCATE video_projection")
	deleteIndexBehind(t, es.URL, "videos")
	r = relayctl(t, s.env, "verify")
	if r.code != ExitProblem || !strings.Contains(r.stdout, "the alias does not exist") {
		t.Fatalf("verify after losing both read models: exit %d", r.code)
	}
	r = relayctl(t, s.env, "rebuild", "--reindex", "--by", "alice", "--why", "INC-12 both read models lost")
	if r.code != ExitOK || !strings.Contains(r.stdout, "restated 7 video(s)") || !strings.Contains(r.stdout, "alias videos now points to it") {
		t.Fatalf("rebuild --reindex: exit %d", r.code)
	}
	r = s.eventually(30*time.Second, ExitOK, "verify")
	if !strings.Contains(r.stdout, "postgres video_projection: OK (7 rows, 1 tombstones)") || !strings.Contains(r.stdout, "elasticsearch alias videos: OK (7 rows, 1 tombstones)") {
		t.Fatalf("verify after rebuild:\n%s", r.stdout)
	}
}

// deleteIndexBehind deletes the concrete index the alias points to.
func deleteIndexBehind(t *testing.T, url, alias string) {
	t.Helper()
	resp, err := http.Get(url + "/_alias/" + alias)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var got map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&got); err != nil || len(got) != 1 {
		t.Fatalf("reading alias %s: %v (%d indices)", alias, err, len(got))
	}
	client, err := elastic.New(elastic.Config{URL: url})
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	for name := range got {
		if err := client.DeleteIndex(context.Background(), name); err != nil {
			t.Fatalf("deleting %s: %v", name, err)
		}
	}
}

// planLines is what a rebuild printed as its plan ("rebuild plan: ..."
// lines), joined by newlines.
func planLines(stdout string) string {
	var out []string
	for _, l := range strings.Split(stdout, "\n") {
		if strings.HasPrefix(l, "rebuild plan: ") {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
