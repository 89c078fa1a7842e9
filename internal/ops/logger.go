package ops

import (
	"context"
	"fmt"
	"log/slog"

	klog "github.com/go-kratos/kratos/v2/log"
)

// KratosLogger sends Kratos' own log lines (server start and stop) to l, so
// a daemon writes one JSON log stream. Use it with kratos.Logger(...) and
// klog.SetLogger(...).
func KratosLogger(l *slog.Logger) klog.Logger { return kratosLogger{l} }

type kratosLogger struct{ l *slog.Logger }

func (k kratosLogger) Log(level klog.Level, keyvals ...any) error {
	msg := "kratos"
	attrs := make([]any, 0, len(keyvals))
	for i := 0; i+1 < len(keyvals); i += 2 {
		key := fmt.Sprint(keyvals[i])
		if key == klog.DefaultMessageKey {
			msg = fmt.Sprint(keyvals[i+1])
			continue
		}
		attrs = append(attrs, slog.Any(key, keyvals[i+1]))
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
