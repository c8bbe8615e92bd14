package events

// AccountErased is the tombstone of an erased account (issue 37, `critic
// users erase`): appended to the account's user stream after its traces
// were erased (each with its own trace.erased), its keys revoked, its
// blobs deleted and its account data key destroyed. Consumers drop every
// row the account still has; replay meets it last and ends in the same
// state. It is stored in clear and holds ids, counts, who, when and why —
// nothing the account wrote. The account's name stays claimed
// (user_name/<name>): a new account cannot take it and be mistaken for the
// old one.
const AccountErased = "account.erased.v1"

// AccountErasedV1 is who erased which account, when, why, and how much.
type AccountErasedV1 struct {
	AccountID string         `json:"account_id"`
	By        string         `json:"by"`
	Reason    string         `json:"reason"`
	At        string         `json:"at"`
	Counts    map[string]int `json:"counts"`
}
