package strict

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"

	pb "cloud.google.com/go/pubsub/v2/apiv1/pubsubpb"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
)

// PermissionDeniedMessage is Cloud Pub/Sub's answer to a call its caller
// lacks a permission for (with PERMISSION_DENIED).
const PermissionDeniedMessage = "User not authorized to perform this action."

// Binding grants Role (a key of Roles) to Member ("serviceAccount:...",
// "group:...", "user:...") on Resource: "projects/P" (every topic,
// subscription and snapshot of P), "projects/P/topics/T",
// "projects/P/subscriptions/S" or "projects/P/snapshots/N".
type Binding struct {
	Member   string
	Role     string
	Resource string
}

// IAM is the access policy a double enforces on the connections of its
// identity listeners (Proxy.ListenAs). The double's own address (Addr)
// carries no identity and is allowed everything, as before.
type IAM struct {
	Bindings []Binding
	// ServiceAgent is the Pub/Sub service agent's member
	// (serviceAccount:service-NUMBER@gcp-sa-pubsub.iam.gserviceaccount.com).
	// Set, a subscription with a dead-letter policy is refused at
	// CreateSubscription and UpdateSubscription unless the agent holds
	// pubsub.topics.publish on the dead-letter topic and
	// pubsub.subscriptions.consume on the subscription: Cloud Pub/Sub
	// accepts such a subscription and then never forwards its dead letters
	// (they are redelivered for ever), which no test would see.
	ServiceAgent string
	// CustomRoles are roles besides Roles, by name, each with its
	// permissions (a custom role, "projects/P/roles/R" on Google Cloud).
	CustomRoles map[string][]string
}

// Validate refuses unknown roles and malformed resources, naming them.
func (a *IAM) Validate() error {
	var errs []error
	for _, b := range a.Bindings {
		_, predefined := Roles[b.Role]
		if _, custom := a.CustomRoles[b.Role]; !predefined && !custom {
			errs = append(errs, fmt.Errorf("binding of %s on %s: unknown role %q", b.Member, b.Resource, b.Role))
		}
		parts := strings.Split(b.Resource, "/")
		if parts[0] != "projects" || (len(parts) != 2 && len(parts) != 4) || b.Member == "" {
			errs = append(errs, fmt.Errorf("binding of %q (%s): resource %q is not projects/P or projects/P/<kind>/<name>", b.Member, b.Role, b.Resource))
		}
	}
	return errors.Join(errs...)
}

// Allows reports whether member holds perm on resource: a binding on the
// resource itself or on its project grants a role holding perm.
func (a *IAM) Allows(member string, n Need) bool {
	project := projectOf(n.Resource)
	for _, b := range a.Bindings {
		if b.Member == member && (b.Resource == n.Resource || b.Resource == project) && a.grants(b.Role, n.Permission) {
			return true
		}
	}
	return false
}

// ListenAs opens another address of the double whose clients act as
// member under Options.IAM: point a client's PUBSUB_EMULATOR_HOST at it,
// so its calls are checked without any change to the client.
func (p *Proxy) ListenAs(member string) (string, error) {
	if p.iam == nil {
		return "", errors.New("strict pubsub double: ListenAs needs Options.IAM")
	}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", fmt.Errorf("strict pubsub double: listening as %s: %w", member, err)
	}
	p.mu.Lock()
	p.members[lis.Addr().String()] = member
	p.mu.Unlock()
	go p.srv.Serve(lis) //nolint:errcheck // ends with Close
	return lis.Addr().String(), nil
}

// memberOf is the identity of the connection of ctx: the member of the
// listener it arrived on; ok is false on the double's own address.
func (p *Proxy) memberOf(ctx context.Context) (member string, ok bool) {
	pr, found := peer.FromContext(ctx)
	if !found || pr.LocalAddr == nil || p.iam == nil {
		return "", false
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	member, ok = p.members[pr.LocalAddr.String()]
	return member, ok
}

// Denial is one call the double refused for a missing permission.
type Denial struct {
	Member, Method string
	Missing        Need
}

func (d Denial) String() string {
	return fmt.Sprintf("%s %s: lacks %s", d.Member, strings.TrimPrefix(d.Method, "/"), d.Missing)
}

// Denials are the calls refused for a missing permission so far, oldest
// first (the first 100).
func (p *Proxy) Denials() []Denial {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]Denial(nil), p.denials...)
}

// authorize checks a call of member: every permission the method needs
// (Needs), and for a subscription with a dead-letter policy the service
// agent's (IAM.ServiceAgent), from any caller.
func (p *Proxy) authorize(member string, identified bool, method string, request []byte) error {
	if p.iam == nil {
		return nil
	}
	if identified {
		needs, err := Needs(method, request)
		if err != nil {
			return status.Errorf(codes.PermissionDenied, "strict pubsub double: %v", err)
		}
		for _, n := range needs {
			if !p.iam.Allows(member, n) {
				p.deny(Denial{Member: member, Method: method, Missing: n})
				return status.Error(codes.PermissionDenied, PermissionDeniedMessage)
			}
		}
	}
	return p.checkServiceAgent(method, request)
}

func (p *Proxy) deny(d Denial) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.denials) < 100 {
		p.denials = append(p.denials, d)
	}
}

// checkServiceAgent refuses a subscription whose dead letters the service
// agent could not forward (see IAM.ServiceAgent).
func (p *Proxy) checkServiceAgent(method string, request []byte) error {
	agent := p.iam.ServiceAgent
	var sub *pb.Subscription
	switch method {
	case subPrefix + "CreateSubscription":
		sub = new(pb.Subscription)
		if proto.Unmarshal(request, sub) != nil {
			return nil // the server answers
		}
	case subPrefix + "UpdateSubscription":
		r := new(pb.UpdateSubscriptionRequest)
		if proto.Unmarshal(request, r) != nil {
			return nil
		}
		sub = r.GetSubscription()
	default:
		return nil
	}
	dlt := sub.GetDeadLetterPolicy().GetDeadLetterTopic()
	if agent == "" || dlt == "" {
		return nil
	}
	for _, n := range []Need{{"pubsub.topics.publish", dlt}, {"pubsub.subscriptions.consume", sub.GetName()}} {
		if !p.iam.Allows(agent, n) {
			p.deny(Denial{Member: agent, Method: method, Missing: n})
			return status.Errorf(codes.PermissionDenied,
				"strict pubsub double: the Pub/Sub service agent %s lacks %s: Cloud Pub/Sub would accept %s and never forward its dead letters",
				agent, n, sub.GetName())
		}
	}
	return nil
}
