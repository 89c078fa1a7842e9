// Package gpubsub is the Google Cloud Pub/Sub adapter: client construction
// (Cloud or the emulator), resource names, and translation of gRPC errors
// into errclass reasons at the edge.
package gpubsub
