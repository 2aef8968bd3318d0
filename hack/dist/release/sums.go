package release

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// SumsFile is the checksums file at the top of a release, in the format
// `sha256sum -c` reads.
const SumsFile = "SHA256SUMS"

// WriteSums writes dir/SHA256SUMS: the SHA-256 of every file under dir but
// itself, by slash-separated path relative to dir, sorted.
func WriteSums(dir string) error {
	var lines []string
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, err := filepath.Rel(dir, path)
		if err != nil || rel == SumsFile {
			return err
		}
		sum, err := fileSum(path)
		if err != nil {
			return err
		}
		lines = append(lines, sum+"  "+filepath.ToSlash(rel))
		return nil
	})
	if err != nil {
		return fmt.Errorf("checksums: %w", err)
	}
	sort.Slice(lines, func(i, j int) bool { return lines[i][66:] < lines[j][66:] })
	data := strings.Join(lines, "\n") + "\n"
	if err := os.WriteFile(filepath.Join(dir, SumsFile), []byte(data), 0o644); err != nil { //nolint:gosec // a published artefact
		return fmt.Errorf("checksums: %w", err)
	}
	return nil
}

func fileSum(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer func() { _ = f.Close() }()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}
