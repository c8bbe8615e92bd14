// Package edge is what every API surface does at the boundary, before and
// after the use-case layer: API-key authentication (a caller in the request
// context), the one mapping from typed domain errors to HTTP statuses and
// Connect codes, and JSON responses.
//
// Calls flow inward: a surface's handler → edge (authenticate) → usecase or
// commands → edge (map the error or write the body).
package edge
