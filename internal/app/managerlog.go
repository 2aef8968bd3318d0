package app

import (
	"github.com/go-logr/logr"
)

// Messages controller-runtime's manager logs that the sink below rewords.
const (
	crStopSequenceError = "error received after stop sequence was engaged"
	crLeaderLost        = "leader election lost"
)

// managerLogger is the logger handed to controller-runtime's manager. With
// LeaderElectionReleaseOnCancel, a clean shutdown releases the lease, which
// makes the manager report "leader election lost" to its stop sequence, and
// the stop sequence logs every such report as an error. A release during
// the stop sequence is the shutdown working as asked, so it is logged as
// information; a lease lost while running still ends Run with an error.
func managerLogger(base logr.Logger) logr.Logger {
	sink := base.GetSink()
	// One more frame (this sink's method) lies between the caller and the
	// wrapped sink, so file:line still names the caller.
	if cd, ok := sink.(logr.CallDepthLogSink); ok {
		sink = cd.WithCallDepth(1)
	}
	return base.WithSink(&shutdownSink{LogSink: sink})
}

type shutdownSink struct {
	logr.LogSink
}

func (s *shutdownSink) Error(err error, msg string, kv ...any) {
	if msg == crStopSequenceError && err != nil && err.Error() == crLeaderLost {
		s.Info(0, "Released the leader lease on shutdown", kv...)
		return
	}
	s.LogSink.Error(err, msg, kv...)
}

func (s *shutdownSink) WithValues(kv ...any) logr.LogSink {
	return &shutdownSink{LogSink: s.LogSink.WithValues(kv...)}
}

func (s *shutdownSink) WithName(name string) logr.LogSink {
	return &shutdownSink{LogSink: s.LogSink.WithName(name)}
}

func (s *shutdownSink) WithCallDepth(depth int) logr.LogSink {
	if cd, ok := s.LogSink.(logr.CallDepthLogSink); ok {
		return &shutdownSink{LogSink: cd.WithCallDepth(depth)}
	}
	return s
}
