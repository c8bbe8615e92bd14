package events

// UserRetentionSet is on the account's user stream: an admin set or turned
// off the account's retention period (issue 37).
const UserRetentionSet = "user.retention_set.v1"

// UserRetentionSetV1 sets how long the account keeps a trace after its last
// activity: traces whose latest revision is older than Days days are erased
// (crypto-shredded, as a deletion) by the daily retention sweep. Days nil
// turns retention off, the default. By is who set it.
type UserRetentionSetV1 struct {
	UserID string `json:"user_id"`
	Days   *int   `json:"days"`
	By     string `json:"by"`
}
