// Package handlers holds what every API surface shares: API-key
// authentication, the one mapping from domain errors to HTTP statuses and
// Connect codes, and the operations REST and Connect both call where one is
// more than a command or query (Backend: required fields, defaults, PATCH
// decoding, fallbacks, read-your-writes). The surfaces themselves live in
// rest/, connectapi/ and otlp/.
package handlers
