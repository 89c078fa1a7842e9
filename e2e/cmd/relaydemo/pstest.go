package main

import (
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"cloud.google.com/go/pubsub/v2/pstest"
)

// pstestServer serves an in-memory pstest Pub/Sub on 127.0.0.1:port until
// SIGTERM/SIGINT: the fallback when the real emulator is not installed.
// Like the emulator it keeps nothing across restarts.
func pstestServer(args []string) int {
	fs := flag.NewFlagSet("pstest-server", flag.ContinueOnError)
	port := fs.Int("port", 8085, "TCP port on 127.0.0.1")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	srv := pstest.NewServerWithAddress(fmt.Sprintf("127.0.0.1:%d", *port))
	fmt.Fprintf(os.Stderr, "pstest Pub/Sub server (FALLBACK, not the real emulator) listening on %s\n", srv.Addr)
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, os.Interrupt)
	<-sig
	if err := srv.Close(); err != nil {
		fmt.Fprintln(os.Stderr, "closing:", err)
		return 1
	}
	return 0
}
