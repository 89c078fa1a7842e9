// Command es-testserver runs the Elasticsearch test server
// (elastic/elastictest) as a process, for the demo and the end-to-end
// fault suite, where Elasticsearch itself cannot be installed.
//
//	es-testserver -addr 127.0.0.1:9200 [-control-addr 127.0.0.1:9201] [-gc-deletes 60s]
//
// Point ELASTIC_URL at http://<addr>. Faults are controlled over HTTP under
// /_estest/ (fault, item-fault, latency, down, up, reset, stats; see the
// elastictest package documentation), on -addr and, if given, on -control-addr,
// which stays reachable while the main address is down.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/eventrelay/eventrelay/elastic/elastictest"
)

func main() {
	if err := run(); err != nil {
		slog.Error("es-testserver failed", "error", err.Error())
		os.Exit(1)
	}
}

func run() error {
	addr := flag.String("addr", "127.0.0.1:9200", "address of the Elasticsearch API")
	controlAddr := flag.String("control-addr", "", "optional separate address serving only /_estest/ (stays up during outages)")
	gc := flag.Duration("gc-deletes", 60*time.Second, "default index.gc_deletes: how long a delete's version is remembered")
	refresh := flag.Duration("refresh-interval", time.Second, "default index.refresh_interval (negative: refresh only on request)")
	version := flag.String("version", "8.15.3", "version.number reported by GET /")
	flag.Parse()
	log := slog.New(slog.NewJSONHandler(os.Stderr, nil))

	srv, err := elastictest.Listen(*addr, elastictest.Options{GCDeletes: *gc, RefreshInterval: *refresh, Version: *version})
	if err != nil {
		return err
	}
	defer srv.Close()
	log.Info("es-testserver listening", "url", srv.URL, "gc_deletes", gc.String(), "version", *version)

	errc := make(chan error, 1)
	if *controlAddr != "" {
		mux := http.NewServeMux()
		mux.Handle("/_estest/", srv.Handler)
		ctl := &http.Server{Addr: *controlAddr, Handler: mux, ReadHeaderTimeout: 10 * time.Second}
		go func() {
			if err := ctl.ListenAndServe(); err != nil && !errors.Is(err, http.ErrServerClosed) {
				errc <- fmt.Errorf("control server: %w", err)
			}
		}()
		defer ctl.Close()
		log.Info("es-testserver control listening", "url", "http://"+*controlAddr+"/_estest/")
	}

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	select {
	case <-ctx.Done():
		log.Info("es-testserver stopping")
		return nil
	case err := <-errc:
		return err
	}
}
