package scaffold

import "strings"

// names are the names a Spec gives the new service's parts: what the
// templates and the protobuf contract use.
type names struct {
	Spec
	// APIPackage is the Go package of the generated protobuf code, at
	// APIImport; ProtoPackage its protobuf package, ProtoFile its path
	// under api/.
	APIPackage, APIImport, ProtoPackage, ProtoFile string
	// AggSnake is the aggregate in snake_case; Table its source table,
	// ViewTable its read model.
	AggSnake, Table, ViewTable string
	// AggregateType, Topic: the outbox's names of the aggregate.
	AggregateType, Topic string
	// Projection is the read model's projection (its inbox consumer),
	// Subscription and DeadLetterTopic its Pub/Sub names.
	Projection, Subscription, DeadLetterTopic string
	// Path is the HTTP collection of the aggregate ("/v1/invoices").
	Path   string
	Events []event
}

// event is one event of the aggregate.
type event struct {
	// Name is the CamelCase name, Snake its snake_case form (the state it
	// leaves and its HTTP action), Message its protobuf message, Type its
	// event type in the outbox.
	Name, Snake, Message, Type string
}

func namesOf(s Spec) names {
	agg := snake(s.Aggregate)
	n := names{
		Spec:          s,
		APIPackage:    s.Name + "v1",
		APIImport:     s.Module + "/api/" + s.Name + "/v1",
		ProtoPackage:  s.Name + ".v1",
		ProtoFile:     s.Name + "/v1/events.proto",
		AggSnake:      agg,
		Table:         plural(agg),
		ViewTable:     agg + "_views",
		AggregateType: s.Name + "." + agg,
		Path:          "/v1/" + strings.ReplaceAll(plural(agg), "_", "-"),
	}
	n.Topic = n.AggregateType + ".events"
	n.Projection = strings.ReplaceAll(agg, "_", "-") + "-views"
	n.Subscription = s.Name + "." + n.Projection
	n.DeadLetterTopic = n.Topic + ".dlq-views"
	for _, e := range s.Events {
		n.Events = append(n.Events, event{Name: e, Snake: snake(e), Message: s.Aggregate + e, Type: n.AggregateType + "." + snake(e)})
	}
	return n
}

// First is the event that creates an aggregate; Changes are the others.
func (n names) First() event     { return n.Events[0] }
func (n names) Changes() []event { return n.Events[1:] }
