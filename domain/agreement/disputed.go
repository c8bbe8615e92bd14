package agreement

// Dispute is a target whose members disagree: what an admin adjudicates.
type Dispute struct {
	Target string `json:"target"`
	// Values are the members' values, by member.
	Values map[string]float64 `json:"values"`
}

// Disputed lists the targets judged by two or more members who did not
// all give the same value, sorted by target.
func Disputed(js []Judgment) []Dispute {
	out := []Dispute{}
	for _, u := range units(js) {
		if len(u.members) < 2 {
			continue
		}
		first := u.values[u.members[0]]
		for _, m := range u.members[1:] {
			if !agree(u.values[m], first) {
				out = append(out, Dispute{Target: u.target, Values: u.values})
				break
			}
		}
	}
	return out
}
