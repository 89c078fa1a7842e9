// Package strict is a strict Pub/Sub double: a gRPC proxy that sits in
// front of the Pub/Sub emulator or a pstest server and refuses what Cloud
// Pub/Sub refuses but those fakes accept, answering with the service's
// status codes and messages, and that can add a network round trip to
// every call.
//
// Every suite, the demo and the benchmark talk to Pub/Sub through it, so a
// request that production would refuse fails there too, and speed figures
// include a realistic round trip (PUBSUB_DOUBLE_RTT, e.g. "15ms": a GKE
// pod's round trip to Pub/Sub is milliseconds, the fakes answer in
// microseconds).
//
// The rules (Rules.CheckPublish) and the API text each comes from:
//
//   - One ordering key per request. PubsubMessage.ordering_key: "All
//     PubsubMessages published in a given PublishRequest must specify the
//     same ordering_key value." The service answers FAILED_PRECONDITION "In
//     a single publish request, all messages must have no ordering key or
//     they must all have the same ordering key."
//   - At most 1,000 messages per request (quotas, "Publish request: 1,000
//     messages"); the service answers INVALID_ARGUMENT "The value for N is
//     too large. You passed message_count in the request, but the maximum
//     value is 1000."
//   - At most 10 MB per request (quotas, "Publish request: 10 MB (total
//     size)"; the client library's MaxPublishRequestBytes is 1e7); the
//     service answers INVALID_ARGUMENT "The value for N is too large. You
//     passed request_size in the request, but the maximum value is
//     10000000."
//   - At least one message (PublishRequest.messages: "Required. The
//     messages to publish.").
//   - No empty message. PubsubMessage: "The message must contain either a
//     non-empty data field or at least one attribute."
//   - At most 100 attributes per message, keys of at most 256 bytes,
//     values of at most 1,024 bytes (quotas, "Attributes per message: 100",
//     "Attribute key size: 256 bytes", "Attribute value size: 1024 bytes").
//   - Ordering keys of at most 1,024 bytes (quotas, "Ordering key size:
//     1 KB").
//   - No message_id or publish_time set by the publisher
//     (PubsubMessage.message_id: "It must not be populated by the publisher
//     in a topics.publish call.").
//
// Refused requests are counted (Stats) and never reach the upstream
// server. Other calls are forwarded unchanged, byte for byte.
//
// With Options.IAM the double also enforces Cloud Pub/Sub's access control
// on the clients of ListenAs addresses, one per member: every RPC needs the
// permissions "Access control with IAM" lists for it (Needs), granted by a
// role (Roles, or IAM.CustomRoles) bound to the member on the resource or
// its project; otherwise PERMISSION_DENIED "User not authorized to perform
// this action." (PermissionDeniedMessage), recorded in Denials. Clients of
// Addr carry no identity and are allowed everything.
package strict
