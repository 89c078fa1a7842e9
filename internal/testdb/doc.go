// Package testdb is relaytest.NewDB's implementation: a real Postgres
// database per test, cloned from a template database with the migration
// sets applied. It is internal so that the engines' own in-package tests
// (which relaytest, importing the engines, cannot serve) use the same
// databases; services use relaytest.
package testdb
