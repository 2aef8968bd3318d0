package release

import (
	"archive/tar"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// Git runs git in dir and returns its output, trimmed.
func Git(ctx context.Context, dir string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, "git", args...)
	cmd.Dir = dir
	out, err := cmd.Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return "", fmt.Errorf("git %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(string(ee.Stderr)))
		}
		return "", fmt.Errorf("git %s: %w", strings.Join(args, " "), err)
	}
	return strings.TrimSpace(string(out)), nil
}

// Commit is what a release is built from.
type Commit struct {
	// Hash is the full commit hash: the binaries' commit and the image's
	// revision label.
	Hash string
	// Time is SOURCE_DATE_EPOCH when set, else the commit's committer
	// time: every timestamp a release holds, so that none is the wall
	// clock's.
	Time time.Time
}

// ResolveCommit resolves rev in the repository at dir.
func ResolveCommit(ctx context.Context, dir, rev string) (Commit, error) {
	hash, err := Git(ctx, dir, "rev-parse", "--verify", rev+"^{commit}")
	if err != nil {
		return Commit{}, err
	}
	epoch := os.Getenv("SOURCE_DATE_EPOCH")
	if epoch == "" {
		if epoch, err = Git(ctx, dir, "show", "-s", "--format=%ct", hash); err != nil {
			return Commit{}, err
		}
	}
	secs, err := strconv.ParseInt(epoch, 10, 64)
	if err != nil {
		return Commit{}, fmt.Errorf("SOURCE_DATE_EPOCH=%q: want Unix seconds: %w", epoch, err)
	}
	return Commit{Hash: hash, Time: time.Unix(secs, 0).UTC()}, nil
}

// Export writes the tree of commit hash into dst (git archive): the
// release is built from the commit alone, never from edits in the work
// tree beside it.
func Export(ctx context.Context, repo, hash, dst string) error {
	cmd := exec.CommandContext(ctx, "git", "archive", "--format=tar", hash)
	cmd.Dir = repo
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return fmt.Errorf("git archive: %w", err)
	}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("git archive: %w", err)
	}
	xerr := untar(out, dst)
	if xerr != nil {
		_, _ = io.Copy(io.Discard, out)
	}
	if err := cmd.Wait(); err != nil {
		return fmt.Errorf("git archive %s: %w", hash, err)
	}
	return xerr
}

// untar extracts git archive's regular files, directories and symlinks.
func untar(r io.Reader, dst string) error {
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("git archive: %w", err)
		}
		path := filepath.Join(dst, filepath.FromSlash(h.Name))
		if !strings.HasPrefix(path, filepath.Clean(dst)+string(filepath.Separator)) {
			return fmt.Errorf("git archive: %q leaves the tree", h.Name)
		}
		switch h.Typeflag {
		case tar.TypeDir:
			err = os.MkdirAll(path, 0o755) //nolint:gosec // a source tree
		case tar.TypeSymlink:
			err = os.Symlink(h.Linkname, path)
		case tar.TypeReg:
			err = writeFile(path, tr, os.FileMode(h.Mode)&0o777)
		default: // git archive's pax global header carries the commit id
		}
		if err != nil {
			return fmt.Errorf("git archive: %s: %w", h.Name, err)
		}
	}
}

func writeFile(path string, r io.Reader, mode os.FileMode) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil { //nolint:gosec // a source tree
		return err
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, mode)
	if err != nil {
		return err
	}
	_, err = io.Copy(f, r)
	return errors.Join(err, f.Close())
}
