package app

import (
	"bytes"
	"context"

	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"

	"github.com/stratus-ccm/stratus/internal/observe"
)

// observeConfig makes every client built from cfg write nothing: each write
// becomes a server-side dry run recorded in rec when it would change
// something. Clients speak JSON so that the objects before and after can be
// compared field by field.
func observeConfig(cfg *rest.Config, rec *observe.Recorder) *rest.Config {
	c := rest.CopyConfig(cfg)
	c.ContentType = "application/json"
	c.AcceptContentTypes = "application/json"
	c.Wrap(observe.DryRun(rec))
	return c
}

// logObserveSummary writes what observe mode would have done, at exit.
func logObserveSummary(ctx context.Context, rec *observe.Recorder) {
	var b bytes.Buffer
	_ = rec.WriteSummary(&b)
	klog.FromContext(ctx).Info("Observe mode summary", "plannedChanges", len(rec.Changes()), "summary", b.String())
}
