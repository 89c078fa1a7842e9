package elastic

import (
	"context"
	"errors"
	"strings"
	"testing"
)

func TestReindexSwapsAliasAndDropsOldIndex(t *testing.T) {
	forEachBackend(t, func(t *testing.T, e *env) {
		e.ensure(t)
		ctx := context.Background()
		e.bulk(t, Doc{ID: "old-only", Version: 1, Source: src("old", 1)}, Doc{ID: "both", Version: 1, Source: src("old", 1)})
		var filled string
		name, err := e.c.Reindex(ctx, e.alias, testIndexBody, func(ctx context.Context, index string) error {
			filled = index
			// The alias still serves the old index while filling.
			if _, _, found, err := e.c.Get(ctx, e.alias, "old-only"); !found || err != nil {
				t.Errorf("alias during fill: found=%v err=%v", found, err)
			}
			res, err := e.c.BulkIndex(ctx, index, []Doc{
				{ID: "both", Version: 2, Source: src("new", 2)},
				{ID: "new-only", Version: 1, Source: src("new", 1)},
			})
			if err != nil {
				return err
			}
			for _, r := range res {
				if r.Err != nil {
					return r.Err
				}
			}
			return nil
		})
		if err != nil {
			t.Fatalf("Reindex: %v", err)
		}
		if !strings.HasPrefix(name, e.alias+"-") || name == e.alias+"-000001" || !strings.HasPrefix(filled, name) {
			t.Fatalf("new index %q, filled through %q", name, filled)
		}
		targets, err := e.c.aliasTargets(ctx, e.alias)
		if err != nil || len(targets) != 1 || targets[0] != name {
			t.Fatalf("alias targets = %v %v, want [%s]", targets, err, name)
		}
		if exists, err := e.c.indexExists(ctx, e.alias+"-000001"); err != nil || exists {
			t.Fatalf("old index still exists (%v, %v)", exists, err)
		}
		if exists, err := e.c.indexExists(ctx, filled); err != nil || exists && filled != name {
			t.Fatalf("temporary fill alias %s left behind (%v, %v)", filled, exists, err)
		}
		if _, _, found, _ := e.c.Get(ctx, e.alias, "old-only"); found {
			t.Fatal("old-only survived the reindex")
		}
		if source, version := e.mustGet(t, "both"); version != 2 || !strings.Contains(string(source), "new") {
			t.Fatalf("both = %s v%d", source, version)
		}
		e.mustGet(t, "new-only")
		// EnsureIndex accepts the alias on the reindexed index.
		if created, err := e.c.EnsureIndex(ctx, e.alias, testIndexBody); err != nil || created {
			t.Fatalf("EnsureIndex after Reindex: %v %v", created, err)
		}
	})
}

func TestReindexFillFailureLeavesAliasAlone(t *testing.T) {
	forEachBackend(t, func(t *testing.T, e *env) {
		e.ensure(t)
		ctx := context.Background()
		boom := errors.New("boom")
		var newIndex string
		_, err := e.c.Reindex(ctx, e.alias, testIndexBody, func(ctx context.Context, index string) error {
			newIndex = strings.TrimSuffix(index, "-fill")
			return boom
		})
		if !errors.Is(err, boom) {
			t.Fatalf("Reindex: %v, want the fill error", err)
		}
		targets, _ := e.c.aliasTargets(ctx, e.alias)
		if len(targets) != 1 || targets[0] != e.alias+"-000001" {
			t.Fatalf("alias moved: %v", targets)
		}
		if exists, err := e.c.indexExists(ctx, newIndex); err != nil || exists {
			t.Fatalf("half-filled index %s left behind (%v %v)", newIndex, exists, err)
		}
	})
}

func TestDeleteIndex(t *testing.T) {
	forEachBackend(t, func(t *testing.T, e *env) {
		e.ensure(t)
		ctx := context.Background()
		if err := e.c.DeleteIndex(ctx, e.alias); err != nil {
			t.Fatalf("DeleteIndex(alias): %v", err)
		}
		if exists, _ := e.c.indexExists(ctx, e.alias+"-000001"); exists {
			t.Fatal("index behind the alias survived")
		}
		if err := e.c.DeleteIndex(ctx, e.alias); err != nil {
			t.Fatalf("DeleteIndex of a missing name: %v", err)
		}
	})
}
