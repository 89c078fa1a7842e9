package main

import (
	"context"
	"fmt"
	"log/slog"

	klog "github.com/go-kratos/kratos/v2/log"
)

// kratosLogger sends Kratos' own logs (server start/stop) to slog.
type kratosLogger struct{ l *slog.Logger }

func (k kratosLogger) Log(level klog.Level, keyvals ...any) error {
	lvl := slog.LevelInfo
	switch level {
	case klog.LevelDebug:
		lvl = slog.LevelDebug
	case klog.LevelWarn:
		lvl = slog.LevelWarn
	case klog.LevelError, klog.LevelFatal:
		lvl = slog.LevelError
	}
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
	k.l.Log(context.Background(), lvl, msg, attrs...)
	return nil
}
