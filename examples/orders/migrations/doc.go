// Package migrations embeds the orders service's own schema: the orders
// table (source of truth) and the order_summaries read model. Table names
// are unqualified; apply the set with search_path set to the service's
// schema ("orders"), next to eventrelay's own migration set.
package migrations
