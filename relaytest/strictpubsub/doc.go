// Package strictpubsub runs eventrelay's strict Pub/Sub double in front of
// a Pub/Sub emulator or pstest server that a test or a load test runs
// itself, so that a service is tested against Pub/Sub as production
// answers it:
//
//   - requests Cloud Pub/Sub refuses but the fakes accept are refused with
//     the service's status codes and messages (mixed ordering keys in one
//     Publish request, over 1,000 messages or 10 MB per request, empty
//     requests, messages without data and attributes, oversize or reserved
//     attributes, oversize ordering keys, publisher-set message ids) and
//     counted, per rule, in Stats;
//   - every call takes a network round trip (Options.RTT), since the fakes
//     answer in microseconds and Cloud Pub/Sub answers a GKE pod in
//     milliseconds;
//   - the Publish requests that pass are counted with their messages, their
//     bytes and their billable bytes, to judge what a publisher costs;
//   - the double keeps listening while the server behind it stops and
//     starts, as the network path to Pub/Sub stays during an outage of the
//     service: a test restarts its emulator to see its service hold and
//     recover.
//
// A test that wants an in-process pstest server with the double, resources
// and helpers uses relaytest.NewPubSub instead.
package strictpubsub
