// Command bench runs the Stratus benchmarks against the upstream
// cloud-controller-manager and regenerates docs/benchmarks.md. It is what
// `make bench` runs; BENCH_* variables select scenarios, scale and
// repetitions (see docs/benchmarks.md).
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/stratus-ccm/stratus/bench/internal/config"
	"github.com/stratus-ccm/stratus/bench/internal/harness"
	"github.com/stratus-ccm/stratus/bench/internal/report"
	"github.com/stratus-ccm/stratus/bench/internal/results"
	"github.com/stratus-ccm/stratus/bench/internal/scenario"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

func run() error {
	root := flag.String("root", "", "repository root (default: found from the working directory)")
	binDir := flag.String("bin", "", "directory with kube-apiserver, etcd, kwok, stratus and upstream-ccm (default ROOT/bin)")
	work := flag.String("work", "", "scratch directory for the runs (default: a new temporary directory)")
	reportOnly := flag.Bool("report-only", false, "regenerate the report from the results file without running anything")
	flag.Parse()
	var err error
	if *root == "" {
		if *root, err = findRoot(); err != nil {
			return err
		}
	}
	if *binDir == "" {
		*binDir = filepath.Join(*root, "bin")
	}
	cfg, err := config.Load(os.Getenv, *root)
	if err != nil {
		return err
	}
	cs := contestants(cfg.S.Contestants)
	if *reportOnly {
		res, err := load(cfg.ResultsPath)
		if err != nil {
			return err
		}
		return write(cfg, res)
	}
	if err := harness.CheckBinaries(*binDir, "kube-apiserver", "etcd", "kwok", "stratus", "upstream-ccm"); err != nil {
		return err
	}
	if *work == "" {
		if *work, err = os.MkdirTemp("", "stratus-bench-"); err != nil {
			return err
		}
		if cfg.KeepDirs {
			fmt.Printf("bench: runs' directories kept under %s\n", *work)
		} else {
			defer func() { _ = os.RemoveAll(*work) }()
		}
	}
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer cancel()

	res := results.Results{Machine: machine(), Versions: versions(*root, *binDir), Settings: cfg.S, Started: time.Now()}
	if !cfg.S.Quick {
		res.Runs = keptRuns(cfg.ResultsPath, cfg.S.Scenarios, cfg.S.Contestants)
	}
	fmt.Printf("bench: %s scale, scenarios %v, contestants %v, %d reps (steady: %d × up to %v; limit drop: %d); results in %s\n",
		cfg.S.Scale, cfg.S.Scenarios, cfg.S.Contestants, cfg.S.Reps, cfg.S.SteadyReps, cfg.S.SteadyWindow, cfg.S.LimitDropReps, cfg.ResultsPath)
	env := &scenario.Env{BinDir: *binDir, WorkDir: *work, S: cfg.S, PhaseTimeout: cfg.PhaseTimeout, Log: os.Stdout, KeepDirs: cfg.KeepDirs}
	failed := 0
	env.Run(ctx, cfg.S.Scenarios, cs, cfg.SteadyParallel, func(r results.Run) {
		if r.Error != "" {
			failed++
		}
		r.LoadAvg = loadAvg()
		res.Runs = append(res.Runs, r)
		res.Finished = time.Now()
		if err := save(cfg.ResultsPath, res); err != nil {
			fmt.Fprintln(os.Stderr, "bench:", err)
		}
	})
	res.Finished = time.Now()
	if err := save(cfg.ResultsPath, res); err != nil {
		return err
	}
	if err := write(cfg, res); err != nil {
		return err
	}
	fmt.Printf("bench: done in %v; report in %s\n", res.Finished.Sub(res.Started).Round(time.Second), cfg.DocPath)
	if ctx.Err() != nil {
		return errors.New("interrupted")
	}
	if failed > 0 {
		return fmt.Errorf("%d run(s) failed; see the report and the logs named above", failed)
	}
	return nil
}

func contestants(names []string) []harness.Contestant {
	var out []harness.Contestant
	for _, c := range harness.Contestants() {
		if slices.Contains(names, c.Name) {
			out = append(out, c)
		}
	}
	return out
}

// write renders the report section, the charts and the doc, for the
// contestants of this invocation and those whose runs were kept.
func write(cfg config.Config, res results.Results) error {
	in := report.Input{Results: res, Baseline: harness.Upstream, Candidate: harness.Stratus,
		ChartLink: func(f string) string { return cfg.ChartLink + "/" + f }}
	var all []string
	for _, c := range harness.Contestants() {
		all = append(all, c.Name)
	}
	for _, c := range contestants(results.Reported(all, cfg.S.Contestants, res.Runs)) {
		in.Contestants = append(in.Contestants, report.Contestant{Name: c.Name, Label: c.Label})
	}
	if _, err := report.WriteCharts(cfg.ChartsDir, in); err != nil {
		return err
	}
	if err := report.UpdateFileSection(cfg.DocPath, cfg.Section, report.Render(in)); err != nil {
		return err
	}
	if !cfg.Published {
		return nil
	}
	return writeGrowth(cfg, in.Contestants)
}

// writeGrowth renders how the figures grow with the node count from every
// scale's published results, once two scales' are there.
func writeGrowth(cfg config.Config, cs []report.Contestant) error {
	var all []results.Results
	for _, scale := range []string{"default", "large", "xlarge"} {
		if r, err := load(filepath.Join(filepath.Dir(cfg.ResultsPath), scale+".json")); err == nil {
			all = append(all, r)
		}
	}
	gs := report.CollectGrowth(all)
	docs := filepath.Dir(cfg.DocPath)
	files, err := report.WriteGrowthCharts(filepath.Join(docs, "benchmarks"), gs, cs)
	if err != nil || len(files) == 0 {
		return err
	}
	return report.UpdateFileSection(cfg.DocPath, report.GrowthSection,
		report.RenderGrowth(gs, cs, func(f string) string { return "benchmarks/" + f }))
}

// keptRuns returns the runs of an earlier results file that this
// invocation does not replace (other scenarios, other contestants), so that
// running a subset keeps the others' figures in the report.
func keptRuns(path string, scenarios, contestants []string) []results.Run {
	old, err := load(path)
	if err != nil {
		return nil
	}
	return results.Kept(old.Runs, scenarios, contestants)
}

func load(path string) (results.Results, error) {
	var res results.Results
	b, err := os.ReadFile(path)
	if err != nil {
		return res, fmt.Errorf("read results: %w", err)
	}
	if err := json.Unmarshal(b, &res); err != nil {
		return res, fmt.Errorf("read results %s: %w", path, err)
	}
	return res, nil
}

func save(path string, res results.Results) error {
	b, err := json.MarshalIndent(res, "", "  ")
	if err != nil {
		return fmt.Errorf("encode results: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil { //nolint:gosec // results are public, like the repository they live in
		return fmt.Errorf("save results: %w", err)
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, append(b, '\n'), 0o644); err != nil { //nolint:gosec // results are public
		return fmt.Errorf("save results: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("save results: %w", err)
	}
	return nil
}

func findRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "hack", "tools")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("cannot find the repository root (a directory with hack/tools); pass -root")
		}
		dir = parent
	}
}

// loadAvg returns the 1-minute load average (0 if unknown).
func loadAvg() float64 {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return 0
	}
	v, _ := strconv.ParseFloat(f[0], 64)
	return v
}

func machine() results.Machine {
	m := results.Machine{CPUs: runtime.NumCPU()}
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if rest, ok := strings.CutPrefix(l, "MemTotal:"); ok {
				if f := strings.Fields(rest); len(f) > 0 {
					kb, _ := strconv.ParseInt(f[0], 10, 64)
					m.MemoryMB = kb / 1024
				}
			}
		}
	}
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if k, v, ok := strings.Cut(l, ":"); ok && strings.TrimSpace(k) == "model name" {
				m.CPUModel = strings.TrimSpace(v)
				break
			}
		}
	}
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		m.Kernel = strings.TrimSpace(string(b))
	}
	return m
}

func versions(root, binDir string) results.Versions {
	v := results.Versions{Go: runtime.Version(), Kubernetes: "unknown", StratusCommit: "unknown"}
	if out, err := exec.Command(filepath.Join(binDir, "kube-apiserver"), "--version").Output(); err == nil {
		v.Kubernetes = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(string(out)), "Kubernetes"))
	}
	cmd := exec.Command("git", "describe", "--always", "--dirty", "--abbrev=12")
	cmd.Dir = root
	if out, err := cmd.Output(); err == nil {
		v.StratusCommit = strings.TrimSpace(string(out))
	}
	return v
}
