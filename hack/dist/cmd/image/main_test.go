package main

import (
	"os/exec"
	"strings"
	"testing"
	"time"
)

// TestCreatedTime: the image's time comes from the flag, else
// SOURCE_DATE_EPOCH, else the commit; never from the clock.
func TestCreatedTime(t *testing.T) {
	repo := t.TempDir()
	for _, args := range [][]string{
		{"init", "-q"},
		{"-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-q", "--allow-empty", "-m", "x"},
	} {
		cmd := exec.Command("git", args...)
		cmd.Dir = repo
		cmd.Env = append(cmd.Environ(), "GIT_COMMITTER_DATE=2025-06-07T08:09:10Z", "GIT_AUTHOR_DATE=2020-01-01T00:00:00Z")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	rev, err := git(repo, "rev-parse", "HEAD")
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("SOURCE_DATE_EPOCH", "")
	check := func(flag string, want time.Time) {
		t.Helper()
		got, err := createdTime(flag, repo, rev)
		if err != nil || !got.Equal(want) {
			t.Errorf("createdTime(%q) = %v, %v; want %v", flag, got, err, want)
		}
	}
	check("", time.Date(2025, 6, 7, 8, 9, 10, 0, time.UTC))
	check("2024-02-03T04:05:06+01:00", time.Date(2024, 2, 3, 3, 5, 6, 0, time.UTC))
	check("1700000000", time.Unix(1700000000, 0))
	t.Setenv("SOURCE_DATE_EPOCH", "1600000000")
	check("", time.Unix(1600000000, 0))
	if _, err := createdTime("yesterday", repo, rev); err == nil || !strings.Contains(err.Error(), "-created=yesterday") {
		t.Errorf("createdTime(yesterday) = %v, want an error naming the flag", err)
	}
}
