package bench

import "context"

func runLatency(ctx context.Context, r *Runner) error {
	r.report.skip("latency: not implemented yet")
	return nil
}
