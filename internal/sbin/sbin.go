// Package sbin finds the system programs the real nodes and localcloud's
// data plane run (runc, nft, conntrack, iptables): Debian installs them in
// the sbin directories, which a non-login PATH often lacks.
package sbin

import (
	"fmt"
	"os/exec"
	"path/filepath"
)

// LookPath finds name on the PATH or else in /usr/sbin, /sbin or
// /usr/local/sbin.
func LookPath(name string) (string, error) {
	p, err := exec.LookPath(name)
	if err == nil {
		return p, nil
	}
	for _, dir := range []string{"/usr/sbin", "/sbin", "/usr/local/sbin"} {
		if p, err2 := exec.LookPath(filepath.Join(dir, name)); err2 == nil {
			return p, nil
		}
	}
	return "", fmt.Errorf("find %s: %w", name, err)
}
