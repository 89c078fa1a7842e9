package gpubsubtest

import (
	"fmt"
	"reflect"
	"time"
	"unsafe"

	pb "cloud.google.com/go/pubsub/v2/apiv1/pubsubpb"
	"cloud.google.com/go/pubsub/v2/pstest"
	"google.golang.org/protobuf/types/known/timestamppb"
)

// timeSeek is a pstest reactor that implements Seek to a time, which
// pstest v2.8.0 gets wrong: its Seek puts the messages published after the
// target back on the subscription without their bodies ("This was not
// preserved!" in fake.go), so the next delivery panics on a nil message,
// and it takes them from every topic, not the subscription's own.
//
// This reactor does what Cloud Pub/Sub does for a subscription that
// retains acked messages: messages of its topic published before the
// target are acknowledged, those published at or after it are delivered
// again (whether acked or not). Snapshot targets are left to pstest, which
// answers Unimplemented.
//
// pstest keeps its state in unexported fields, so they are reached by
// reflection; a change of their layout fails the Seek with an error naming
// the missing field rather than misbehaving. Reactors run with the server's
// mutex held.
type timeSeek struct {
	g *pstest.GServer
}

// React implements pstest.Reactor.
func (r *timeSeek) React(req any) (bool, any, error) {
	sr, ok := req.(*pb.SeekRequest)
	if !ok || r.g == nil {
		return false, nil, nil
	}
	target, ok := sr.GetTarget().(*pb.SeekRequest_Time)
	if !ok {
		return false, nil, nil
	}
	if err := r.seek(sr.GetSubscription(), target.Time.AsTime()); err != nil {
		return true, nil, fmt.Errorf("gpubsubtest: seek: %w", err)
	}
	return true, &pb.SeekResponse{}, nil
}

func (r *timeSeek) seek(subName string, target time.Time) error {
	g := reflect.ValueOf(r.g).Elem()
	subs, err := hidden(g, "subs")
	if err != nil {
		return err
	}
	subPtr := subs.MapIndex(reflect.ValueOf(subName))
	if !subPtr.IsValid() || subPtr.IsNil() {
		return fmt.Errorf("subscription %q not found", subName)
	}
	sub := subPtr.Elem()
	topicName, err := r.topicOf(sub)
	if err != nil {
		return err
	}
	pending, err := hidden(sub, "msgs") // map[string]*message: unacked messages
	if err != nil {
		return err
	}
	// Published before the target: acknowledged.
	for _, id := range pending.MapKeys() {
		m := pending.MapIndex(id).Elem()
		published, err := hidden(m, "publishTime")
		if err != nil {
			return err
		}
		if published.Interface().(time.Time).Before(target) {
			pending.SetMapIndex(id, reflect.Value{})
		}
	}
	// Published at or after it: delivered again, with their bodies.
	all, err := hidden(g, "msgs") // []*pstest.Message: every message ever published
	if err != nil {
		return err
	}
	for i := 0; i < all.Len(); i++ {
		pm := all.Index(i).Interface().(*pstest.Message)
		if pm.Topic != topicName || pm.PublishTime.Before(target) {
			continue
		}
		entry, err := newPendingMessage(pending.Type().Elem().Elem(), all.Index(i).Elem(), pm)
		if err != nil {
			return err
		}
		pending.SetMapIndex(reflect.ValueOf(pm.ID), entry)
	}
	return nil
}

// topicOf is the name of the subscription's topic.
func (r *timeSeek) topicOf(sub reflect.Value) (string, error) {
	p, err := hidden(sub, "proto")
	if err != nil {
		return "", err
	}
	ps, ok := p.Interface().(*pb.Subscription)
	if !ok || ps == nil {
		return "", fmt.Errorf("pstest layout changed: subscription.proto is %s", p.Type())
	}
	return ps.GetTopic(), nil
}

// newPendingMessage builds pstest's *message for pm (type msgType), as
// pstest's own Seek does, but with the message itself.
func newPendingMessage(msgType reflect.Type, server reflect.Value, pm *pstest.Message) (reflect.Value, error) {
	entry := reflect.New(msgType)
	e := entry.Elem()
	deliveries, err := hidden(server, "deliveries")
	if err != nil {
		return reflect.Value{}, err
	}
	acks, err := hidden(server, "acks")
	if err != nil {
		return reflect.Value{}, err
	}
	set := map[string]reflect.Value{
		"publishTime": reflect.ValueOf(pm.PublishTime),
		"proto": reflect.ValueOf(&pb.ReceivedMessage{AckId: pm.ID, Message: &pb.PubsubMessage{
			Data: pm.Data, Attributes: pm.Attributes, MessageId: pm.ID,
			PublishTime: timestamppb.New(pm.PublishTime), OrderingKey: pm.OrderingKey,
		}}),
		"deliveries":  deliveries.Addr(),
		"acks":        acks.Addr(),
		"streamIndex": reflect.ValueOf(-1),
	}
	for name, v := range set {
		f, err := hidden(e, name)
		if err != nil {
			return reflect.Value{}, err
		}
		if !v.Type().AssignableTo(f.Type()) {
			return reflect.Value{}, fmt.Errorf("pstest layout changed: message.%s is %s, not %s", name, f.Type(), v.Type())
		}
		f.Set(v)
	}
	return entry, nil
}

// hidden returns the (possibly unexported) field name of the addressable
// struct v as a settable value.
func hidden(v reflect.Value, name string) (reflect.Value, error) {
	f := v.FieldByName(name)
	if !f.IsValid() {
		return reflect.Value{}, fmt.Errorf("pstest layout changed: %s has no field %s", v.Type(), name)
	}
	return reflect.NewAt(f.Type(), unsafe.Pointer(f.UnsafeAddr())).Elem(), nil
}
