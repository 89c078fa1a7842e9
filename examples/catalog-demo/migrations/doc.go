// Package migrations holds the catalog's own tables (videos and its read
// model video_projection) as a goose set with its own version table,
// applied after eventrelay's set (the root migrations package).
package migrations
