// Package ordertest holds the orders service's test helpers: a fresh
// Postgres database per test with eventrelay's and the orders service's
// migrations applied (relaytest).
package ordertest
