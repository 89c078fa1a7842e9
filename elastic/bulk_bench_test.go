package elastic

import (
	"context"
	"fmt"
	"testing"

	"github.com/eventrelay/eventrelay/elastic/elastictest"
)

// BenchmarkBulkIndex measures BulkIndex against the estest server (HTTP,
// NDJSON encoding, answer parsing): docs/s per batch size. It measures the
// adapter and the fake, not Elasticsearch.
func BenchmarkBulkIndex(b *testing.B) {
	for _, batch := range []int{1, 100, 500} {
		b.Run(fmt.Sprintf("batch=%d", batch), func(b *testing.B) {
			srv := elastictest.New(elastictest.Options{})
			defer srv.Close()
			c, err := New(Config{URL: srv.URL})
			if err != nil {
				b.Fatal(err)
			}
			ctx := context.Background()
			if _, err := c.EnsureIndex(ctx, "bench", testIndexBody); err != nil {
				b.Fatal(err)
			}
			docs := make([]Doc, batch)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				for j := range docs {
					docs[j] = Doc{ID: fmt.Sprintf("d%d-%d", i, j), Version: 1, Source: src("bench", j)}
				}
				res, err := c.BulkIndex(ctx, "bench", docs)
				if err != nil || res[0].Err != nil {
					b.Fatalf("bulk: %v %v", err, res[0].Err)
				}
			}
			b.ReportMetric(float64(b.N*batch)/b.Elapsed().Seconds(), "docs/s")
		})
	}
}
