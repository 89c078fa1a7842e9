// Package biz is the orders service's domain (Kratos layout): the order
// life cycle (placed -> paid -> cancelled, or placed -> cancelled), request
// validation, and the OrderRepo the data layer implements. Every write
// goes through the repo, which changes the orders row and appends the
// event in one transaction.
package biz
