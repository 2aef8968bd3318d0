package release

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/stratus-ccm/stratus/hack/dist/chart"
	"github.com/stratus-ccm/stratus/hack/dist/image"
)

// Options say what to release.
type Options struct {
	// Root is the repository; Commit the revision to release (HEAD).
	Root, Commit string
	// Version is the release's version, as VERSION= gives it.
	Version string
	// OutDir is where releases go; this one goes to OutDir/VERSION.
	OutDir string
	// Repository is the image repository (ghcr.io/stratus-ccm/stratus).
	Repository string
	// Platforms are the image's and the binaries' (linux/amd64,linux/arm64).
	Platforms []string
	// SBOMTool is the cyclonedx-gomod binary.
	SBOMTool string
	// Unreleased takes the release notes from CHANGELOG.md's [Unreleased]
	// section: a build of a commit between releases under a pre-release
	// version (the upgrade test's "current release"); refused for a
	// version without a pre-release part, which must have its own section.
	Unreleased bool
	// Record, when set, is the file that names the last release ("vX.Y.Z
	// COMMIT"), which the upgrade test upgrades from: a release (not a
	// pre-release) rewrites it once built.
	Record string
	// Log receives progress.
	Log io.Writer
}

// Module and package facts of the release.
const (
	modulePath  = "github.com/stratus-ccm/stratus"
	mainPackage = "cmd/stratus"
	chartPath   = "charts/stratus"
	sourceURL   = "https://github.com/stratus-ccm/stratus"
)

// Result is what Run built.
type Result struct {
	Dir    string
	Digest v1.Hash
	Commit Commit
}

// Check validates what a release needs before anything is built: the
// version's form and its changelog section in the commit's CHANGELOG.md.
// It returns the parsed version and the release notes.
func Check(ctx context.Context, o Options) (Version, string, error) {
	if o.Version == "" {
		return Version{}, "", errors.New("no version: make release VERSION=vX.Y.Z")
	}
	v, err := ParseVersion(o.Version)
	if err != nil {
		return Version{}, "", fmt.Errorf("VERSION: %w", err)
	}
	changelog, err := Git(ctx, o.Root, "show", o.Commit+":CHANGELOG.md")
	if err != nil {
		return Version{}, "", fmt.Errorf("CHANGELOG.md at %s: %w", o.Commit, err)
	}
	section := v.String()
	if o.Unreleased {
		if v.Prerelease == "" {
			return Version{}, "", fmt.Errorf("VERSION %s: the [%s] notes go only with a pre-release version (%s-dev.1)", v, Unreleased, v)
		}
		section = Unreleased
	}
	notes, err := Section([]byte(changelog), section)
	if err != nil {
		return Version{}, "", fmt.Errorf("release %s (from %s's CHANGELOG.md): %w", v, o.Commit, err)
	}
	return v, notes, nil
}

// Run builds the release.
func Run(ctx context.Context, o Options) (Result, error) {
	v, notes, err := Check(ctx, o)
	if err != nil {
		return Result{}, err
	}
	c, err := ResolveCommit(ctx, o.Root, o.Commit)
	if err != nil {
		return Result{}, err
	}
	res := Result{Dir: filepath.Join(o.OutDir, v.String()), Commit: c}
	fmt.Fprintf(o.Log, "release %s of %s (%s) into %s\n", v, c.Hash, c.Time.Format("2006-01-02T15:04:05Z"), res.Dir)
	work, err := os.MkdirTemp("", "stratus-release-")
	if err != nil {
		return res, err
	}
	defer func() { _ = os.RemoveAll(work) }()
	src := filepath.Join(work, "src")
	if err := Export(ctx, o.Root, c.Hash, src); err != nil {
		return res, err
	}
	// A fresh folder: nothing of an earlier run may stay among the
	// checksums.
	if err := os.RemoveAll(res.Dir); err != nil {
		return res, err
	}
	b := builder{o: o, v: v, c: c, src: src, work: work, out: res.Dir}
	if res.Digest, err = b.imageAndBinaries(ctx); err != nil {
		return res, err
	}
	steps := []func(context.Context) error{
		func(context.Context) error { return b.chartAndManifests(res.Digest) },
		b.sboms,
		func(context.Context) error { return b.notes(notes, res.Digest) },
	}
	for _, step := range steps {
		if err := step(ctx); err != nil {
			return res, err
		}
	}
	if err := WriteSums(res.Dir); err != nil {
		return res, err
	}
	return res, record(o.Record, v, c)
}

// record names v, built from c, as the last release in file, unless v is a
// pre-release, no file is given, or the file names a later release already
// (a rebuild of an older version, e.g. to compare its digests, is not the
// last release).
func record(file string, v Version, c Commit) error {
	if file == "" || v.Prerelease != "" {
		return nil
	}
	if b, err := os.ReadFile(file); err == nil {
		if f := strings.Fields(string(b)); len(f) == 2 {
			if last, err := ParseVersion(f[0]); err == nil && v.Less(last) {
				return nil
			}
		}
	}
	if err := os.WriteFile(file, []byte(v.String()+" "+c.Hash+"\n"), 0o644); err != nil { //nolint:gosec // a file of the repository
		return fmt.Errorf("record the release: %w", err)
	}
	return nil
}

// builder holds one release's inputs while its parts are built.
type builder struct {
	o         Options
	v         Version
	c         Commit
	src, work string
	out       string
}

func (b *builder) ldflags() string {
	return fmt.Sprintf("-X %[1]s/internal/version.version=%[2]s -X %[1]s/internal/version.commit=%[3]s", modulePath, b.v, b.c.Hash)
}

func (b *builder) logf(format string, args ...any) { fmt.Fprintf(b.o.Log, format+"\n", args...) }

// imageAndBinaries builds the image for every platform and writes it as an
// OCI layout and a docker-archive per platform, and the binaries it holds
// as stratus-OS-ARCH.
func (b *builder) imageAndBinaries(ctx context.Context) (v1.Hash, error) {
	b.logf("building the image and binaries for %s", strings.Join(b.o.Platforms, ", "))
	bins := filepath.Join(b.work, "bin")
	idx, err := image.Build(ctx, image.Options{
		ModuleDir: b.src, Package: "./" + mainPackage, Aliases: []string{"cloud-controller-manager"},
		Entrypoint: "cloud-controller-manager", Platforms: b.o.Platforms, LDFlags: b.ldflags(),
		Version: b.v.String(), Source: sourceURL, Revision: b.c.Hash, Created: b.c.Time,
	}, bins)
	if err != nil {
		return v1.Hash{}, err
	}
	ref, err := name.NewTag(b.o.Repository + ":" + b.v.String())
	if err != nil {
		return v1.Hash{}, fmt.Errorf("image %s:%s: %w", b.o.Repository, b.v, err)
	}
	digest, err := WriteImage(idx, filepath.Join(b.out, "image"), ref)
	if err != nil {
		return v1.Hash{}, err
	}
	for _, p := range b.o.Platforms {
		plat, _ := v1.ParsePlatform(p)
		from := filepath.Join(bins, plat.OS+"_"+plat.Architecture, "stratus")
		if err := copyFile(from, filepath.Join(b.out, "bin", "stratus-"+plat.OS+"-"+plat.Architecture), 0o755); err != nil {
			return v1.Hash{}, err
		}
	}
	b.logf("image %s@%s", ref, digest)
	return digest, b.checkStamp(ctx, bins)
}

// checkStamp runs the host's binary, when the release has one, and checks
// that it says the release's version and commit.
func (b *builder) checkStamp(ctx context.Context, bins string) error {
	bin := filepath.Join(bins, "linux_"+hostArch(), "stratus")
	if _, err := os.Stat(bin); err != nil {
		return nil //nolint:nilerr // no binary for this machine to run
	}
	out, err := exec.CommandContext(ctx, bin, "version").Output()
	if err != nil {
		return fmt.Errorf("stratus version: %w", err)
	}
	if !strings.Contains(string(out), b.v.String()+" (commit "+b.c.Hash) {
		return fmt.Errorf("stratus version says %q, want %s and commit %s", strings.TrimSpace(string(out)), b.v, b.c.Hash)
	}
	return nil
}

// chartAndManifests packages the chart at the release's version and
// renders its manifests with the image pinned by digest.
func (b *builder) chartAndManifests(digest v1.Hash) error {
	src := filepath.Join(b.src, chartPath)
	chartYAML, err := os.ReadFile(filepath.Join(src, "Chart.yaml"))
	if err != nil {
		return err
	}
	if chartYAML, err = SetChartVersion(chartYAML, b.v); err != nil {
		return fmt.Errorf("%s: %w", chartPath, err)
	}
	if err := os.WriteFile(filepath.Join(src, "Chart.yaml"), chartYAML, 0o644); err != nil { //nolint:gosec // the exported tree
		return err
	}
	if err := chart.Lint(src, nil); err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Join(b.out, "chart"), 0o755); err != nil { //nolint:gosec // a published artefact
		return err
	}
	pkg, err := PackageChart(src, filepath.Join(b.out, "chart"), b.c.Time)
	if err != nil {
		return err
	}
	b.logf("chart %s", pkg)
	header := fmt.Sprintf("# Stratus %s (%s): charts/stratus rendered for the release %s in %s, the image pinned by digest.\n",
		b.v, b.c.Hash, chart.ReleaseName, chart.Namespace)
	values := map[string]any{"image": map[string]any{"repository": b.o.Repository, "digest": digest.String()}}
	if err := chart.WriteVariants(src, filepath.Join(b.out, "manifests"), header, values); err != nil {
		return fmt.Errorf("manifests: %w", err)
	}
	return nil
}

// sboms writes one SBOM per platform. The tool reads the main module's
// version from a tag on HEAD, so the exported tree becomes a repository of
// one commit, tagged with the release, made at the commit's time.
func (b *builder) sboms(ctx context.Context) error {
	if b.o.SBOMTool == "" {
		return errors.New("no SBOM tool (-sbom-tool; make release builds bin/cyclonedx-gomod)")
	}
	if err := b.tagSource(ctx); err != nil {
		return err
	}
	for _, p := range b.o.Platforms {
		plat, _ := v1.ParsePlatform(p)
		out := filepath.Join(b.out, "sbom", "stratus-"+plat.OS+"-"+plat.Architecture+".cdx.json")
		if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil { //nolint:gosec // a published artefact
			return err
		}
		if err := WriteSBOM(ctx, SBOMOptions{Tool: b.o.SBOMTool, SourceDir: b.src, Main: mainPackage, Platform: plat, Out: out}); err != nil {
			return err
		}
	}
	b.logf("SBOMs in %s", filepath.Join(b.out, "sbom"))
	return nil
}

func (b *builder) tagSource(ctx context.Context) error {
	date := fmt.Sprintf("@%d +0000", b.c.Time.Unix())
	for _, args := range [][]string{
		{"init", "-q"},
		{"add", "-A"},
		{"-c", "user.name=stratus", "-c", "user.email=stratus@invalid", "commit", "-q", "--no-verify", "-m", b.v.String()},
		{"tag", b.v.String()},
	} {
		cmd := exec.CommandContext(ctx, "git", args...)
		cmd.Dir = b.src
		cmd.Env = append(os.Environ(), "GIT_AUTHOR_DATE="+date, "GIT_COMMITTER_DATE="+date, "GIT_CONFIG_NOSYSTEM=1", "HOME="+b.work)
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("git %s in the exported tree: %w\n%s", args[0], err, out)
		}
	}
	return nil
}

// notes writes RELEASE-NOTES.md: the changelog's section and what the
// release holds.
func (b *builder) notes(section string, digest v1.Hash) error {
	var s strings.Builder
	s.WriteString(section)
	fmt.Fprintf(&s, "\n\n### Artefacts\n\n- Commit: `%s`\n- Image: `%s:%s@%s` (%s)\n- Chart: `chart/stratus-%s.tgz` (appVersion `%s`)\n",
		b.c.Hash, b.o.Repository, b.v, digest, strings.Join(b.o.Platforms, ", "), b.v.ChartVersion(), b.v)
	s.WriteString("- Manifests: `manifests/` (the image pinned by digest)\n- Binaries: `bin/stratus-OS-ARCH`\n")
	s.WriteString("- SBOM: `sbom/stratus-OS-ARCH.cdx.json` (CycloneDX: every module linked, with its licence)\n")
	s.WriteString("- Checksums: `SHA256SUMS` (`sha256sum -c SHA256SUMS`)\n\nInstalling, verifying and upgrading: docs/install.md; compatibility: docs/versioning.md.\n")
	if err := os.WriteFile(filepath.Join(b.out, "RELEASE-NOTES.md"), []byte(s.String()), 0o644); err != nil { //nolint:gosec // a published artefact
		return err
	}
	return nil
}
