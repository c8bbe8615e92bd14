package snapshot

import (
	"github.com/criticml/critic/domain/events"
	"github.com/criticml/critic/platform/jsonscan"
	"github.com/criticml/critic/projections"
)

// importedTrace is events.TraceImportedV1 as this projection decodes it: the
// steps as the domain's records (their tool inputs and metadata as maps,
// which the automatic annotation reads; the read model keeps them raw for
// jsonb instead, projections/readmodel).
type importedTrace struct {
	projections.ImportedHeader
	Steps []events.StepRecord `json:"steps"`
}

func decodeImportedFast(b []byte, p *importedTrace) bool {
	*p = importedTrace{}
	return projections.ScanImported(b, &p.ImportedHeader, &p.Steps, stepField)
}

func stepField(st *events.StepRecord, s *jsonscan.Scanner, k []byte) bool {
	switch string(k) {
	case "id":
		return s.Str(&st.ID)
	case "index":
		return s.Int(&st.Index)
	case "role":
		return s.Str((*string)(&st.Role))
	case "content":
		return s.Str(&st.Content)
	case "tool_name":
		return s.Str(&st.ToolName)
	case "tool_call_id":
		return s.Str(&st.ToolCallID)
	case "tool_input":
		return projections.ScanMap(s, &st.ToolInput)
	case "metadata":
		return projections.ScanMap(s, &st.Metadata)
	}
	return false
}
