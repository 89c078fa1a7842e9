package main

import (
	"context"
	"fmt"
	"log/slog"

	klog "github.com/go-kratos/kratos/v2/log"
)

// kratosLogger sends Kratos' own log lines (server start and stop) to slog,
// so the service writes one JSON log stream.
type kratosLogger struct{ l *slog.Logger }

func (k kratosLogger) Log(level klog.Level, keyvals ...any) error {
	msg := ""
	attrs := make([]any, 0, len(keyvals))
	for i := 0; i+1 < len(keyvals); i += 2 {
		key := fmt.Sprint(keyvals[i])
		if key == klog.DefaultMessageKey {
			msg = fmt.Sprint(keyvals[i+1])
			continue
		}
		attrs = append(attrs, key, keyvals[i+1])
	}
	k.l.Log(context.Background(), slogLevel(level), msg, attrs...)
	return nil
}

func slogLevel(l klog.Level) slog.Level {
	switch l {
	case klog.LevelDebug:
		return slog.LevelDebug
	case klog.LevelWarn:
		return slog.LevelWarn
	case klog.LevelError, klog.LevelFatal:
		return slog.LevelError
	default:
		return slog.LevelInfo
	}
}
