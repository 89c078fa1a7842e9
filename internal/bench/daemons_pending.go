package bench

import "context"

func runApplyDaemon(ctx context.Context, r *Runner, evs []Event) error {
	r.report.skip("apply with the projector daemon: not implemented yet")
	return nil
}

func runLatency(ctx context.Context, r *Runner) error {
	r.report.skip("latency: not implemented yet")
	return nil
}
