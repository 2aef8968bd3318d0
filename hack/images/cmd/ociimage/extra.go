package main

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"
)

// extraFiles reads the -add programs, each followed by the shared
// libraries and loader ldd names for it, and turns -link into links.
func extraFiles(adds, links []string) ([]file, error) {
	var out []file
	for _, a := range adds {
		src, dst, _ := strings.Cut(a, "=")
		if dst == "" {
			dst = src
		}
		if !path.IsAbs(dst) {
			return nil, fmt.Errorf("-add %q: the path in the image must be absolute", a)
		}
		f, err := hostFile(src, dst)
		if err != nil {
			return nil, fmt.Errorf("-add %q: %w", a, err)
		}
		out = append(out, f)
		libs, err := libraryFiles(src)
		if err != nil {
			return nil, fmt.Errorf("-add %q: %w", a, err)
		}
		out = append(out, libs...)
	}
	for _, l := range links {
		dst, target, ok := strings.Cut(l, "=")
		if !ok || !path.IsAbs(dst) || target == "" {
			return nil, fmt.Errorf("-link %q: want /ABSOLUTE/PATH=TARGET", l)
		}
		out = append(out, file{path: dst[1:], link: target})
	}
	return out, nil
}

// hostFile reads src, following links, as the file dst of the image with
// src's permission bits.
func hostFile(src, dst string) (file, error) {
	resolved, err := filepath.EvalSymlinks(src)
	if err != nil {
		return file{}, fmt.Errorf("read %s: %w", src, err)
	}
	st, err := os.Stat(resolved)
	if err != nil {
		return file{}, fmt.Errorf("read %s: %w", src, err)
	}
	data, err := os.ReadFile(resolved)
	if err != nil {
		return file{}, fmt.Errorf("read %s: %w", src, err)
	}
	return file{path: strings.TrimPrefix(dst, "/"), data: data, mode: int64(st.Mode().Perm())}, nil
}

// libraryFiles reads the shared libraries and loader program needs, each
// at its own path in the image; none for a static program.
func libraryFiles(program string) ([]file, error) {
	libs, err := sharedLibraries(program)
	if err != nil {
		return nil, err
	}
	out := make([]file, 0, len(libs))
	for _, lib := range libs {
		lf, err := hostFile(lib, lib)
		if err != nil {
			return nil, fmt.Errorf("library: %w", err)
		}
		out = append(out, lf)
	}
	return out, nil
}

// sharedLibraries lists the absolute paths ldd prints for program: its
// libraries ("libc.so.6 => /lib/.../libc.so.6 (0x...)") and its loader
// ("/lib64/ld-linux-x86-64.so.2 (0x...)"). A static program has none.
func sharedLibraries(program string) ([]string, error) {
	out, err := exec.Command("ldd", program).CombinedOutput()
	if err != nil {
		if bytes.Contains(out, []byte("not a dynamic executable")) {
			return nil, nil
		}
		return nil, fmt.Errorf("ldd %s: %w: %s", program, err, bytes.TrimSpace(out))
	}
	var libs []string
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if _, after, ok := strings.Cut(line, "=> "); ok {
			line = after
		}
		if f := strings.Fields(line); len(f) > 0 && path.IsAbs(f[0]) {
			libs = append(libs, f[0])
		}
	}
	return libs, nil
}

// busyboxFiles reads a busybox as /bin/busybox, with the libraries ldd
// names for it (none for busybox-static), and lists its applets (busybox
// --list-full: "usr/bin/sleep", ...) as links to it.
func busyboxFiles(src string) ([]file, error) {
	f, err := hostFile(src, "/bin/busybox")
	if err != nil {
		return nil, fmt.Errorf("-busybox: %w", err)
	}
	libs, err := libraryFiles(src)
	if err != nil {
		return nil, fmt.Errorf("-busybox: %w", err)
	}
	out, err := exec.Command(src, "--list-full").Output()
	if err != nil {
		return nil, fmt.Errorf("-busybox %s --list-full: %w", src, err)
	}
	files := append([]file{f}, libs...)
	n := len(files)
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		applet := strings.TrimSpace(sc.Text())
		if applet == "" || applet == "bin/busybox" {
			continue
		}
		files = append(files, file{path: strings.TrimPrefix(path.Clean("/"+applet), "/"), link: "/bin/busybox"})
	}
	if len(files) == n {
		return nil, fmt.Errorf("-busybox %s --list-full: no applets", src)
	}
	return files, nil
}
