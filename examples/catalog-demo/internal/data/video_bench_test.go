package data_test

import (
	"context"
	"fmt"
	"log/slog"
	"testing"

	"github.com/google/uuid"

	"github.com/eventrelay/eventrelay/examples/catalog-demo/conf"
	"github.com/eventrelay/eventrelay/examples/catalog-demo/events"
	"github.com/eventrelay/eventrelay/examples/catalog-demo/internal/biz"
	"github.com/eventrelay/eventrelay/examples/catalog-demo/internal/data"
	catalogmigrations "github.com/eventrelay/eventrelay/examples/catalog-demo/migrations"
	"github.com/eventrelay/eventrelay/relaytest"
)

func benchUsecase(b *testing.B, notify bool) *biz.VideoUsecase {
	b.Helper()
	db := relaytest.NewDB(b, relaytest.Options{Schema: catalogmigrations.Schema, Migrations: catalogmigrations.Sets})
	w, err := data.NewWriter(&conf.Outbox{Topic: events.Topic, Notify: notify, ServiceName: "bench", Instance: "bench"})
	if err != nil {
		b.Fatal(err)
	}
	d, cleanup, err := data.NewData(&conf.Database{URL: db.URL, Schema: catalogmigrations.Schema, MaxConns: 16}, w, slog.New(slog.DiscardHandler))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(cleanup)
	return biz.NewVideoUsecase(data.NewVideoRepo(d))
}

// BenchmarkCreate measures the write path (videos insert + outbox insert,
// one transaction) from parallel clients.
func BenchmarkCreate(b *testing.B) {
	for _, notify := range []bool{false, true} {
		b.Run(fmt.Sprintf("notify=%v", notify), func(b *testing.B) {
			uc := benchUsecase(b, notify)
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if _, err := uc.Create(context.Background(), biz.Draft{UploaderID: uuid.NewString(), Title: "bench"}); err != nil {
						b.Error(err)
						return
					}
				}
			})
		})
	}
}

// BenchmarkUpdateHotVideo measures parallel updates of one video: they
// queue on its row lock.
func BenchmarkUpdateHotVideo(b *testing.B) {
	uc := benchUsecase(b, false)
	ch, err := uc.Create(context.Background(), biz.Draft{UploaderID: uuid.NewString(), Title: "hot"})
	if err != nil {
		b.Fatal(err)
	}
	id := ch.Video.GetId()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		i := int64(0)
		for pb.Next() {
			i++
			if _, err := uc.Update(context.Background(), id, biz.Patch{DurationMicros: &i}); err != nil {
				b.Error(err)
				return
			}
		}
	})
}
