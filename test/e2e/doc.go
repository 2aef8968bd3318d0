// Package e2e holds end-to-end tests that run the stratus binary as a user
// would, against real processes on loopback.
package e2e
