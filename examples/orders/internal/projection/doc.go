// Package projection is the orders service's read models, both kept from
// the state-carrying order events: the order_summaries table, by a
// version-guarded upsert run in the transaction that also records the
// event in the inbox (Summaries), and the search index "orders" in
// Elasticsearch, written in bulk at the order's version (Search, on
// eventrelay's package elastic).
package projection
