package biz

import (
	"strings"
	"unicode/utf8"

	"github.com/google/uuid"

	catalogv1 "github.com/eventrelay/eventrelay/examples/catalog-demo/api/catalog/v1"
	"github.com/eventrelay/eventrelay/examples/catalog-demo/events"
)

// Limits of a video's fields (the CHECK constraints of catalog.videos;
// lengths in characters).
const (
	MaxTitleChars       = 500
	MaxDescriptionChars = 10000
	MaxReasonChars      = 1000
)

func parseID(field, s string) (uuid.UUID, error) {
	if s == "" {
		return uuid.Nil, invalid(field, "is required")
	}
	id, err := uuid.Parse(s)
	if err != nil || id == uuid.Nil {
		return uuid.Nil, invalid(field, "%q is not a UUID", s)
	}
	return id, nil
}

func checkTitle(s string) error {
	if err := checkNoNUL("title", s); err != nil {
		return err
	}
	if n := utf8.RuneCountInString(s); n < 1 || n > MaxTitleChars {
		return invalid("title", "must be 1..%d characters, got %d", MaxTitleChars, n)
	}
	return nil
}

func checkDescription(s string) error {
	if err := checkNoNUL("description", s); err != nil {
		return err
	}
	if n := utf8.RuneCountInString(s); n > MaxDescriptionChars {
		return invalid("description", "must be at most %d characters, got %d", MaxDescriptionChars, n)
	}
	return nil
}

func checkReason(s string) error {
	if err := checkNoNUL("reason", s); err != nil {
		return err
	}
	if n := utf8.RuneCountInString(s); n > MaxReasonChars {
		return invalid("reason", "must be at most %d characters, got %d", MaxReasonChars, n)
	}
	return nil
}

// checkNoNUL refuses U+0000: valid UTF-8 and valid JSON ("\u0000"), but a
// Postgres text value cannot hold it.
func checkNoNUL(field, s string) error {
	if strings.ContainsRune(s, 0) {
		return invalid(field, "must not contain the NUL character (U+0000)")
	}
	return nil
}

func checkDuration(d int64) error {
	if d < 0 {
		return invalid("duration_micros", "must be >= 0, got %d", d)
	}
	return nil
}

func checkExpectedVersion(v *int64) error {
	if v != nil && *v < 1 {
		return invalid("expected_version", "must be >= 1, got %d", *v)
	}
	return nil
}

func checkVideoStatus(s catalogv1.VideoStatus) error { return checkEnum(events.VideoStatus, s) }
func checkMediaStatus(s catalogv1.MediaStatus) error { return checkEnum(events.MediaStatus, s) }
func checkAnalysisStatus(s catalogv1.AnalysisStatus) error {
	return checkEnum(events.AnalysisStatus, s)
}

// checkEnum refuses UNSPECIFIED and values this build does not know (proto3
// enums are open: the wire accepts any number).
func checkEnum[E ~int32](e events.Enum[E], v E) error {
	if !e.Known(v) {
		return invalid(e.Field(), "unknown or unspecified value %d", int32(v))
	}
	return nil
}

func (p Patch) validate() error {
	if p.Title == nil && p.Description == nil && p.DurationMicros == nil &&
		p.Status == nil && p.MediaStatus == nil && p.AnalysisStatus == nil {
		return invalid("update", "at least one of title, description, duration_micros, status, media_status, analysis_status must be set")
	}
	var errs []error
	if p.Title != nil {
		errs = append(errs, checkTitle(*p.Title))
	}
	if p.Description != nil {
		errs = append(errs, checkDescription(*p.Description))
	}
	if p.DurationMicros != nil {
		errs = append(errs, checkDuration(*p.DurationMicros))
	}
	if p.Status != nil {
		errs = append(errs, checkVideoStatus(*p.Status))
	}
	if p.MediaStatus != nil {
		errs = append(errs, checkMediaStatus(*p.MediaStatus))
	}
	if p.AnalysisStatus != nil {
		errs = append(errs, checkAnalysisStatus(*p.AnalysisStatus))
	}
	errs = append(errs, checkExpectedVersion(p.ExpectedVersion))
	return firstError(errs...)
}

// firstError returns the first non-nil error: a request is refused naming
// one field at a time, in field order.
func firstError(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}
