// Package service is the catalog's API layer (Kratos layout): VideoService
// implements catalog.v1.VideoService for gRPC and, through the routes of
// internal/server, HTTP. It converts between API messages and the
// biz layer and nothing else: validation, state and errors come from biz,
// whose errors already carry the API's Kratos reasons.
package service
