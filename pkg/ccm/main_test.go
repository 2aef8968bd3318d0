package ccm_test

import (
	"os"
	"testing"

	logsapi "k8s.io/component-base/logs/api/v1"
)

// TestMain lets every command these tests run apply the logging
// configuration again, as long as it is unchanged (a process applies it
// once). Resetting it between commands instead (logsapi.ResetForTest)
// rewrites klog's global logger while goroutines a stopped manager left
// behind may still read it (controller-runtime's event recorder shuts its
// broadcaster down in the background), which the race detector reports.
func TestMain(m *testing.M) {
	logsapi.ReapplyHandling = logsapi.ReapplyHandlingIgnoreUnchanged
	os.Exit(m.Run())
}
