package options_test

import (
	"strings"
	"testing"
)

func TestSafetyFlagsBadValuesRejected(t *testing.T) {
	for _, arg := range []string{
		"--node-deletion-window=0s",
		"--node-deletion-max-share=0",
		"--node-deletion-max-share=1.5",
		"--node-deletion-max-zone-share=-0.1",
		"--node-deletion-min-per-window=0",
		"--cloud-provider-platforms=aws,on prem",
	} {
		_, err := parse(t, "--cloud-provider=x", arg)
		name, value, _ := strings.Cut(strings.TrimPrefix(arg, "--"), "=")
		if err == nil || !strings.Contains(err.Error(), "--"+name) || !strings.Contains(err.Error(), value[strings.LastIndex(value, ",")+1:]) {
			t.Errorf("%s: error %v, want one naming the flag and value", arg, err)
		}
	}
}
