package service

// retryFailed queues every Service whose last sync failed because the
// cloud did (kit.Outcome.Outage), now: the cloud answers again after an
// outage, and the backoff those Services accumulated while it was down
// (minutes, at the cap) no longer protects anything. A Service the cloud
// refused on its own account is not among them: it keeps its backoff, the
// retry its condition and explain quote. The queue's workers and the cloud
// call pacing still bound how fast they go. It is called on a cloud call's
// goroutine and only adds to the queue, which does not block.
func (c *Controller) retryFailed() {
	c.queue.Add(c.outage.Keys()...)
}
