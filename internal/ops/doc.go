// Package ops holds the daemons' operational glue that is not part of the
// public health surface (see package health): the slog-backed Kratos logger.
package ops
