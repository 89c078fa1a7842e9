package elastic

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/eventrelay/eventrelay/internal/errclass"
)

func TestScanSeesAllDocsWithVersions(t *testing.T) {
	forEachBackend(t, func(t *testing.T, e *env) {
		e.ensure(t)
		ctx := context.Background()
		const n = 2300 // more than two scroll pages
		docs := make([]Doc, 0, 500)
		for i := 0; i < n; i++ {
			docs = append(docs, Doc{ID: fmt.Sprintf("d%04d", i), Version: int64(i%7 + 1), Source: src(fmt.Sprint(i), i)})
			if len(docs) == cap(docs) || i == n-1 {
				for _, r := range e.bulk(t, docs...) {
					if r.Err != nil || r.Stale {
						t.Fatalf("indexing %s: %+v", r.ID, r)
					}
				}
				docs = docs[:0]
			}
		}
		if err := e.c.Refresh(ctx, e.alias); err != nil {
			t.Fatal(err)
		}
		seen := map[string]int64{}
		err := e.c.Scan(ctx, e.alias, func(id string, version int64, source []byte) error {
			if _, dup := seen[id]; dup {
				return fmt.Errorf("%s seen twice", id)
			}
			var i int
			fmt.Sscanf(id, "d%04d", &i)
			if !strings.Contains(string(source), fmt.Sprintf(`"views":%d`, i)) {
				return fmt.Errorf("%s has source %s", id, source)
			}
			seen[id] = version
			return nil
		})
		if err != nil {
			t.Fatalf("Scan: %v", err)
		}
		if len(seen) != n {
			t.Fatalf("Scan saw %d docs, want %d", len(seen), n)
		}
		for i := 0; i < n; i++ {
			if v := seen[fmt.Sprintf("d%04d", i)]; v != int64(i%7+1) {
				t.Fatalf("d%04d at version %d, want %d", i, v, i%7+1)
			}
		}
		stop := errors.New("stop")
		calls := 0
		err = e.c.Scan(ctx, e.alias, func(string, int64, []byte) error { calls++; return stop })
		if !errors.Is(err, stop) || calls != 1 {
			t.Fatalf("Scan with failing fn: calls=%d err=%v", calls, err)
		}
	})
}

func TestScanMissingAlias(t *testing.T) {
	forEachBackend(t, func(t *testing.T, e *env) {
		err := e.c.Scan(context.Background(), e.alias, func(string, int64, []byte) error { return nil })
		if errclass.Of(err) != errclass.Unavailable {
			t.Fatalf("Scan of a missing alias: %v, want unavailable", err)
		}
	})
}
