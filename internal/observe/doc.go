// Package observe is Stratus' observe mode: the controller manager runs
// beside the cloud-controller-manager that is in charge, reads everything
// and changes nothing, and reports what it would have done.
//
// It owns the Recorder (the planned changes: a metric per controller, kind
// and action, a log line per change with the object and the diff, and a
// summary), and the API transport that turns every write into a
// server-side dry run and records the writes that would change something.
// The cloud side is Cloud, a decorator stacked outside the instrumented
// wrapper: reads pass, mutating calls are recorded here and never reach
// the provider, so neither the wrapper nor any controller knows observe
// mode exists.
package observe
