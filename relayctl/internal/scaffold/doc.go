// Package scaffold writes a new service on eventrelay (`relayctl new`): a
// Kratos app in its own Go module with an aggregate, its events, their
// protobuf contract and generated Go code, the outbox writer with
// optimistic versions, one Postgres read model, read-your-writes,
// relayctl hooks, configs/pubsub.yaml and an end-to-end test on package
// relaytest that passes as written.
//
// The templates (templates/*.tmpl, text/template) are rendered from a
// Spec. The event contract is built once as a protobuf file descriptor
// (eventsFile): the .proto file is printed from it and its Go code is
// generated from it by protoc-gen-go's own generator, in process, so no
// protoc, buf or network is needed to write a service that compiles. The
// service's Makefile regenerates the code with protoc once the team edits
// the .proto file.
package scaffold
