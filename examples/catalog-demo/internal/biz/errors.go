package biz

import (
	"fmt"

	"github.com/go-kratos/kratos/v2/errors"

	catalogv1 "github.com/eventrelay/eventrelay/examples/catalog-demo/api/catalog/v1"
)

// Errors of the catalog API. Match them with errors.Is (Kratos errors
// compare code and reason, not the message).
var (
	// ErrVideoNotFound: no video with that id, or it is deleted (404).
	ErrVideoNotFound = errors.NotFound(catalogv1.ErrorReason_ERROR_REASON_VIDEO_NOT_FOUND.String(), "video not found")
	// ErrVersionConflict: expected_version is not the current version (409).
	ErrVersionConflict = errors.Conflict(catalogv1.ErrorReason_ERROR_REASON_VERSION_CONFLICT.String(), "version conflict")
	// ErrInvalidArgument: a request field is invalid (400); the message
	// starts with the field name and metadata["field"] names it.
	ErrInvalidArgument = errors.BadRequest(catalogv1.ErrorReason_ERROR_REASON_INVALID_ARGUMENT.String(), "invalid argument")
)

// VideoNotFound is ErrVideoNotFound naming the id.
func VideoNotFound(id fmt.Stringer) error {
	return errors.NotFound(ErrVideoNotFound.Reason, fmt.Sprintf("video %s not found", id)).
		WithMetadata(map[string]string{"id": id.String()})
}

func versionConflict(expected, current int64) error {
	return errors.Conflict(ErrVersionConflict.Reason,
		fmt.Sprintf("expected_version: video is at version %d, not %d", current, expected)).
		WithMetadata(map[string]string{
			"field":           "expected_version",
			"current_version": fmt.Sprint(current),
		})
}

// invalid returns an ErrInvalidArgument naming field.
func invalid(field, format string, args ...any) error {
	return errors.BadRequest(ErrInvalidArgument.Reason, field+": "+fmt.Sprintf(format, args...)).
		WithMetadata(map[string]string{"field": field})
}
