package events

// ProjectionEventSkipped is an operator's decision (`critic projections
// skip EVENT_ID --reason …`) that a parked event can never be applied and
// must be passed over by every projection from now on, and by every replay:
// the log keeps the event, this event records who skipped it, when and why,
// and the read model and a replay agree because both read it. It carries
// the skipped event's owner (so it reaches the projections in order with
// that owner's events, and releases the owner they hold) and lives in a
// stream of its own per skipped event, so skipping twice is a conflict.
const ProjectionEventSkipped = "projection.event_skipped.v1"

// ProjectionEventSkippedV1 names the skipped event and the reason.
type ProjectionEventSkippedV1 struct {
	EventID   string `json:"event_id"`
	EventType string `json:"event_type"`
	Seq       int64  `json:"seq"`
	Reason    string `json:"reason"`
}

// ProjectionSkipStream is the stream of the skip of one event.
func ProjectionSkipStream(eventID string) string { return "projection_skip/" + eventID }
