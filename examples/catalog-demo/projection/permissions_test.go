package projection_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/eventrelay/eventrelay/elastic/elastictest"
	catalogmigrations "github.com/eventrelay/eventrelay/examples/catalog-demo/migrations"
	catproj "github.com/eventrelay/eventrelay/examples/catalog-demo/projection"
	"github.com/eventrelay/eventrelay/relaytest"
)

// newRoleHarness runs the projector as its own database role, granted
// exactly catalogmigrations.ProjectorNeeds (neither owner nor superuser);
// the test reads and grants as the owner.
func newRoleHarness(t *testing.T) (*harness, func(sql string)) {
	t.Helper()
	db := relaytest.NewDB(t, relaytest.Options{Schema: catalogmigrations.Schema, Migrations: catalogmigrations.Sets})
	h := newHarnessOn(t, db)
	role := h.role
	asOwner := func(sql string) {
		t.Helper()
		if _, err := db.Pool.Exec(context.Background(), strings.ReplaceAll(sql, "ROLE", `"`+role+`"`)); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
	return h, asOwner
}

// readiness is the failing readiness checks, one string.
func (h *harness) readiness() string {
	r := h.health.Ready(context.Background())
	var b strings.Builder
	for name, f := range r.Failures {
		b.WriteString(name + ": " + f + "\n")
	}
	return b.String()
}

// TestFaultRevokedPrivilegeHoldsTheProjection revokes each privilege the
// projector's role uses, in turn, while events flow: readiness names the
// privilege, nothing is dead-lettered or lost, and once it is granted
// again the read model converges without a restart.
func TestFaultRevokedPrivilegeHoldsTheProjection(t *testing.T) {
	t.Parallel()
	h, asOwner := newRoleHarness(t)
	h.videos(batchConfig(20))
	published := int64(0)
	for _, n := range catalogmigrations.ProjectorNeeds {
		for _, p := range n.Privileges {
			t.Run(p+" on "+n.Table, func(t *testing.T) {
				h.t = t
				target := p + " ON " + catalogmigrations.Schema + "." + n.Table
				asOwner("REVOKE " + target + " FROM ROLE")
				videos := []uuid.UUID{uuid.New(), uuid.New(), uuid.New()}
				h.publish(wave(t, videos, 1, 2, false)...)
				published += 6
				want := p + " on " + n.Table
				h.eventually(60*time.Second, "readiness naming "+want, func() bool {
					return strings.Contains(h.readiness(), want)
				})
				// Give the projection time to meet the missing privilege.
				time.Sleep(time.Second)
				asOwner("GRANT " + target + " TO ROLE")
				h.eventually(90*time.Second, "every event applied after the GRANT", func() bool {
					return h.inboxCount(catproj.VideosConsumer) == published
				})
				for _, id := range videos {
					if r, ok := h.row(id); !ok || r.Version != 2 {
						t.Errorf("video %s: row %v (found %v), want version 2", id, r.Version, ok)
					}
				}
				h.eventually(30*time.Second, "readiness and projector_blocked clear", func() bool {
					return h.readiness() == "" && h.metric("projector_blocked", "videos") == 0
				})
				if n := h.metric("projector_dead_lettered_total", "videos"); n != 0 {
					t.Fatalf("%v events dead-lettered: a missing privilege is never the event's fault", n)
				}
			})
		}
	}
}

// TestFaultSearchCredentialRefusedHoldsTheProjection: Elasticsearch
// answers 401 (credentials missing or rotated) or 403 (a role without the
// index privilege) to every request. The search projection is blocked
// (projector_blocked, readiness "blocked/search"), holds its messages and
// dead-letters none; once Elasticsearch accepts it again it catches up
// without a restart.
func TestFaultSearchCredentialRefusedHoldsTheProjection(t *testing.T) {
	t.Parallel()
	for _, status := range []int{http.StatusUnauthorized, http.StatusForbidden} {
		t.Run(http.StatusText(status), func(t *testing.T) {
			t.Parallel()
			h, _ := newRoleHarness(t)
			srv, es := h.search(batchConfig(20), elastictest.Options{}, nil)
			srv.Inject(status, time.Hour)
			videos := make([]uuid.UUID, 10)
			for i := range videos {
				videos[i] = uuid.New()
			}
			h.publish(wave(t, videos, 1, 2, false)...)
			h.eventually(60*time.Second, "search blocked, named by readiness", func() bool {
				return h.metric("projector_blocked", "search") == 1 && strings.Contains(h.readiness(), "blocked/search") &&
					strings.Contains(h.readiness(), "permission_denied")
			})
			time.Sleep(2 * time.Second) // held meanwhile, not dead-lettered
			if n := h.metric("projector_dead_lettered_total", "search"); n != 0 {
				t.Fatalf("%v events dead-lettered while Elasticsearch answered %d", n, status)
			}
			srv.Inject(0, 0)
			h.eventually(90*time.Second, "search caught up", func() bool { return h.inboxCount(catproj.SearchConsumer) == 20 })
			for _, id := range videos {
				if _, v, found := h.doc(es, id); !found || v != 2 {
					t.Errorf("video %s: search document v%d (found %v), want v2", id, v, found)
				}
			}
			h.eventually(30*time.Second, "readiness and projector_blocked clear", func() bool {
				return h.readiness() == "" && h.metric("projector_blocked", "search") == 0
			})
			if n := h.metric("projector_dead_lettered_total", "search"); n != 0 {
				t.Fatalf("%v events dead-lettered: a refused credential is never the event's fault", n)
			}
		})
	}
}
