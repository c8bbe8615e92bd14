// Package handlers holds what every API surface shares: API-key
// authentication and the one mapping from domain errors to HTTP statuses and
// Connect codes. The surfaces themselves live in rest/, connectapi/ and otlp/.
package handlers
