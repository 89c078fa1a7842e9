package strict

import (
	"fmt"
	"strings"

	"cloud.google.com/go/iam/apiv1/iampb"
	pb "cloud.google.com/go/pubsub/v2/apiv1/pubsubpb"
	"google.golang.org/protobuf/proto"
)

// Need is one permission a call needs on one resource ("projects/P",
// "projects/P/topics/T", "projects/P/subscriptions/S",
// "projects/P/snapshots/N").
type Need struct {
	Permission string
	Resource   string
}

func (n Need) String() string { return n.Permission + " on " + n.Resource }

// Needs are the permissions a call of method (the gRPC full method name)
// with request (its first message, encoded) needs, as "Access control with
// IAM", "Required permissions" lists them per method
// (https://cloud.google.com/pubsub/docs/access-control#required_permissions).
// An unmapped method is an error: the double refuses what it cannot check.
//
// DetachSubscription needs pubsub.topics.detachSubscription on the
// subscription's topic, which the request does not name: the double
// requires it on the project (a binding on the topic alone is not seen).
func Needs(method string, request []byte) ([]Need, error) {
	rpc, ok := rpcs[method]
	if !ok {
		return nil, fmt.Errorf("no permission mapped for %s", method)
	}
	req := rpc.request()
	if err := proto.Unmarshal(request, req); err != nil {
		return nil, fmt.Errorf("decoding the %s request: %w", method, err)
	}
	needs := rpc.needs(req)
	for i := range needs {
		needs[i] = resourcePermission(needs[i])
	}
	return needs, nil
}

type rpc struct {
	request func() proto.Message
	needs   func(proto.Message) []Need
}

// on is a call needing perm on the resource that name picks from the
// request.
func on[R proto.Message](perm string, name func(R) string) rpc {
	return rpc{
		request: func() proto.Message { var r R; return r.ProtoReflect().New().Interface() },
		needs:   func(m proto.Message) []Need { return []Need{{perm, name(m.(R))}} },
	}
}

// onProject is a call needing perm on the project of the resource that
// name picks.
func onProject[R proto.Message](perm string, name func(R) string) rpc {
	return on(perm, func(r R) string { return projectOf(name(r)) })
}

// projectOf is "projects/P" of "projects/P/..." (or of "projects/P").
func projectOf(name string) string {
	parts := strings.SplitN(name, "/", 3)
	if len(parts) < 2 {
		return name
	}
	return parts[0] + "/" + parts[1]
}

const (
	pubPrefix = "/google.pubsub.v1.Publisher/"
	subPrefix = "/google.pubsub.v1.Subscriber/"
	iamPrefix = "/google.iam.v1.IAMPolicy/"
)

var rpcs = map[string]rpc{
	pubPrefix + "CreateTopic":            onProject("pubsub.topics.create", (*pb.Topic).GetName),
	pubPrefix + "UpdateTopic":            on("pubsub.topics.update", func(r *pb.UpdateTopicRequest) string { return r.GetTopic().GetName() }),
	pubPrefix + "Publish":                on("pubsub.topics.publish", (*pb.PublishRequest).GetTopic),
	pubPrefix + "GetTopic":               on("pubsub.topics.get", (*pb.GetTopicRequest).GetTopic),
	pubPrefix + "ListTopics":             on("pubsub.topics.list", (*pb.ListTopicsRequest).GetProject),
	pubPrefix + "ListTopicSubscriptions": on("pubsub.topics.get", (*pb.ListTopicSubscriptionsRequest).GetTopic),
	pubPrefix + "ListTopicSnapshots":     on("pubsub.topics.get", (*pb.ListTopicSnapshotsRequest).GetTopic),
	pubPrefix + "DeleteTopic":            on("pubsub.topics.delete", (*pb.DeleteTopicRequest).GetTopic),
	pubPrefix + "DetachSubscription":     onProject("pubsub.topics.detachSubscription", (*pb.DetachSubscriptionRequest).GetSubscription),

	subPrefix + "CreateSubscription": {
		request: func() proto.Message { return new(pb.Subscription) },
		needs: func(m proto.Message) []Need {
			s := m.(*pb.Subscription)
			return []Need{{"pubsub.subscriptions.create", projectOf(s.GetName())}, {"pubsub.topics.attachSubscription", s.GetTopic()}}
		},
	},
	subPrefix + "GetSubscription":    on("pubsub.subscriptions.get", (*pb.GetSubscriptionRequest).GetSubscription),
	subPrefix + "UpdateSubscription": on("pubsub.subscriptions.update", func(r *pb.UpdateSubscriptionRequest) string { return r.GetSubscription().GetName() }),
	subPrefix + "ListSubscriptions":  on("pubsub.subscriptions.list", (*pb.ListSubscriptionsRequest).GetProject),
	subPrefix + "DeleteSubscription": on("pubsub.subscriptions.delete", (*pb.DeleteSubscriptionRequest).GetSubscription),
	subPrefix + "ModifyPushConfig":   on("pubsub.subscriptions.update", (*pb.ModifyPushConfigRequest).GetSubscription),
	subPrefix + "ModifyAckDeadline":  on("pubsub.subscriptions.consume", (*pb.ModifyAckDeadlineRequest).GetSubscription),
	subPrefix + "Acknowledge":        on("pubsub.subscriptions.consume", (*pb.AcknowledgeRequest).GetSubscription),
	subPrefix + "Pull":               on("pubsub.subscriptions.consume", (*pb.PullRequest).GetSubscription),
	subPrefix + "StreamingPull":      on("pubsub.subscriptions.consume", (*pb.StreamingPullRequest).GetSubscription),
	subPrefix + "Seek": {
		request: func() proto.Message { return new(pb.SeekRequest) },
		needs: func(m proto.Message) []Need {
			r := m.(*pb.SeekRequest)
			n := []Need{{"pubsub.subscriptions.consume", r.GetSubscription()}}
			if r.GetSnapshot() != "" {
				n = append(n, Need{"pubsub.snapshots.seek", r.GetSnapshot()})
			}
			return n
		},
	},
	subPrefix + "GetSnapshot":   on("pubsub.snapshots.get", (*pb.GetSnapshotRequest).GetSnapshot),
	subPrefix + "ListSnapshots": on("pubsub.snapshots.list", (*pb.ListSnapshotsRequest).GetProject),
	subPrefix + "CreateSnapshot": {
		request: func() proto.Message { return new(pb.CreateSnapshotRequest) },
		needs: func(m proto.Message) []Need {
			r := m.(*pb.CreateSnapshotRequest)
			return []Need{{"pubsub.snapshots.create", projectOf(r.GetName())}, {"pubsub.subscriptions.consume", r.GetSubscription()}}
		},
	},
	subPrefix + "UpdateSnapshot": on("pubsub.snapshots.update", func(r *pb.UpdateSnapshotRequest) string { return r.GetSnapshot().GetName() }),
	subPrefix + "DeleteSnapshot": on("pubsub.snapshots.delete", (*pb.DeleteSnapshotRequest).GetSnapshot),

	iamPrefix + "GetIamPolicy": on("getIamPolicy", (*iampb.GetIamPolicyRequest).GetResource),
	iamPrefix + "SetIamPolicy": on("setIamPolicy", (*iampb.SetIamPolicyRequest).GetResource),
	// TestIamPermissions needs no permission.
	iamPrefix + "TestIamPermissions": {
		request: func() proto.Message { return new(iampb.TestIamPermissionsRequest) },
		needs:   func(proto.Message) []Need { return nil },
	},
}

// resourcePermission completes the IAM methods' permissions with the
// resource's kind: getIamPolicy on a topic is pubsub.topics.getIamPolicy.
func resourcePermission(n Need) Need {
	if strings.HasPrefix(n.Permission, "pubsub.") {
		return n
	}
	parts := strings.Split(n.Resource, "/")
	kind := "projects"
	if len(parts) >= 4 {
		kind = parts[2]
	}
	n.Permission = "pubsub." + kind + "." + n.Permission
	return n
}
