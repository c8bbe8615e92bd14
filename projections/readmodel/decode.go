package readmodel

import (
	"encoding/json"

	"github.com/criticml/critic/platform/jsonscan"
	"github.com/criticml/critic/projections"
)

func decodeImportedFast(b []byte, p *importedTrace) bool {
	*p = importedTrace{}
	return projections.ScanImported(b, &p.ImportedHeader, &p.Steps, (*importedStep).field)
}

func (st *importedStep) field(s *jsonscan.Scanner, k []byte) bool {
	switch string(k) {
	case "id":
		return s.Str(&st.ID)
	case "index":
		return s.Int(&st.Index)
	case "role":
		return s.Str(&st.Role)
	case "content":
		return s.Str(&st.Content)
	case "tool_name":
		return s.Str(&st.ToolName)
	case "tool_call_id":
		return s.Str(&st.ToolCallID)
	case "tool_input":
		raw, ok := s.Raw()
		st.ToolInput = json.RawMessage(raw)
		return ok && json.Valid(raw)
	case "metadata":
		raw, ok := s.Raw()
		st.Metadata = json.RawMessage(raw)
		return ok && json.Valid(raw)
	}
	return false
}
