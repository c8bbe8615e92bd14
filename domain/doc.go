// Package domain holds Critic's pure types and rules: the canonical trace, the
// typed errors every layer maps to one HTTP/Connect status, aggregates that decide
// which events a command produces, and the formulas of pairs and scores. It does
// no I/O, reads no clock and draws no unseeded randomness, so every rule can be
// tested as a plain function and replayed from the event log.
package domain
