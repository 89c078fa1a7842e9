// Package claim is the relay's side of the outbox rows on Postgres: it
// claims ready rows under the head-of-line rule, marks their outcomes
// (published, rescheduled, failed), releases them, extends their lease and
// reclaims expired claims. Every write to a claimed row is fenced by the
// claim's lock token. Driver errors are classified into errclass reasons
// here, at the edge.
package claim
