package projection

import (
	"fmt"

	catalogv1 "github.com/eventrelay/eventrelay/examples/catalog-demo/api/catalog/v1"
	"github.com/eventrelay/eventrelay/examples/catalog-demo/events"
	proj "github.com/eventrelay/eventrelay/projection"
)

// videoOf returns the state an event carries and whether the event is a
// deletion. The state must be the aggregate's at the event's version.
func videoOf(ev *proj.Event) (*catalogv1.Video, bool, error) {
	v, err := events.VideoOf(ev.Payload)
	if err != nil {
		return nil, false, proj.Permanent(proj.PayloadInvalid, fmt.Errorf("event %s: %w", ev.ID, err))
	}
	if v.GetId() != ev.AggregateID || v.GetVersion() != ev.AggregateVersion {
		return nil, false, proj.Permanent(proj.PayloadInvalid, fmt.Errorf("event %s: payload video %s v%d is not aggregate %s v%d",
			ev.ID, v.GetId(), v.GetVersion(), ev.AggregateID, ev.AggregateVersion))
	}
	_, deleted := ev.Payload.(*catalogv1.VideoDeleted)
	return v, deleted, nil
}
