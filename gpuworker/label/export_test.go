package label

import (
	"encoding/json"

	"github.com/criticml/critic/domain/labels"
)

// SchemaJSON is the schema sent for an actor (tests compare it with
// labels.Schema).
func SchemaJSON(a labels.Actor) ([]byte, error) { return json.Marshal(schemaFor(a)) }
