// Package usecase is the use-case layer every API surface shares: the
// operations REST (handlers/rest) and Connect (handlers/connectapi) both call
// where an operation is more than one command or query — required fields,
// defaults, PATCH decoding, fallbacks and read-your-writes — so both surfaces
// answer the same data and the same errors.
//
// Calls flow one way: a surface decodes the request → usecase.Backend →
// commands (append events) → readmodel.Waiter (until the read-model
// projection applied them) → readmodel.Queries (the answer).
package usecase
