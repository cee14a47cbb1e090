//go:build unix

package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// The import benchmark: `incidentlib gen` writes a corpus to a file and
// `incidentlib import --db` (the real binary, built here) reads it into a
// new store; records per second and the child's peak resident memory
// (rusage Maxrss, the kernel's VmHWM) for each size.

func init() {
	registerCommand("import", "incidentlib import of generated corpora: records/s and peak RSS per size", func() command { return &importBench{} })
}

type importBench struct {
	sizes  string
	batch  int
	dir    string
	seed   int64
	counts []int // -sizes, parsed by check
}

func (b *importBench) declare(fs *flag.FlagSet) {
	fs.StringVar(&b.sizes, "sizes", "10000,100000", "corpus sizes, in records, comma-separated (add 1000000 for the full run: minutes, and 3.2 GB of disk for the corpus and 5 GB for the store)")
	fs.IntVar(&b.batch, "batch", 0, "import --batch, in records; 0: the command's default")
	fs.StringVar(&b.dir, "dir", "", "folder for the corpora and stores (default a temporary one, removed afterwards)")
	fs.Int64Var(&b.seed, "seed", 1, "gen --seed")
}

func (b *importBench) check() error {
	for _, s := range strings.Split(b.sizes, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n < 1 {
			return fmt.Errorf("--sizes: %q is not a number of records", s)
		}
		b.counts = append(b.counts, n)
	}
	return nil
}

func (b *importBench) run(ctx context.Context, stdout io.Writer) error {
	work := b.dir
	if work == "" {
		d, err := os.MkdirTemp("", "incidentlib-import-bench-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(d)
		work = d
	}
	bin := filepath.Join(work, "incidentlib")
	build := exec.CommandContext(ctx, "go", "build", "-o", bin, "./cmd/incidentlib")
	build.Stderr = os.Stderr
	if err := build.Run(); err != nil {
		return fmt.Errorf("build the binary: %w", err)
	}
	fmt.Fprintf(stdout, "import: NumCPU=%d %s load=%s mem=%s\n", runtime.NumCPU(), runtime.Version(), loadAvg(), memTotal())
	fmt.Fprintf(stdout, "%10s %10s %9s %10s %11s %12s %10s  %s\n", "records", "input MB", "wall s", "records/s", "us/record", "peak RSS MB", "CPU s", "load before/after")
	for _, n := range b.counts {
		corpus := filepath.Join(work, fmt.Sprintf("corpus-%d.jsonl", n))
		f, err := os.Create(corpus)
		if err != nil {
			return err
		}
		g := exec.CommandContext(ctx, bin, "gen", "--count", strconv.Itoa(n), "--seed", strconv.FormatInt(b.seed, 10))
		g.Stdout, g.Stderr = f, os.Stderr
		err = g.Run()
		f.Close()
		if err != nil {
			return fmt.Errorf("gen %d: %w", n, err)
		}
		st, _ := os.Stat(corpus)
		db := filepath.Join(work, fmt.Sprintf("store-%d.db", n))
		os.Remove(db)
		cmdArgs := []string{"import", "--db", db}
		if b.batch > 0 {
			cmdArgs = append(cmdArgs, "--batch", strconv.Itoa(b.batch))
		}
		imp := exec.CommandContext(ctx, bin, append(cmdArgs, corpus)...)
		var out strings.Builder
		imp.Stdout, imp.Stderr = &out, os.Stderr
		loadBefore := loadAvg()
		start := time.Now()
		err = imp.Run()
		wall := time.Since(start)
		if err != nil {
			return fmt.Errorf("import %d: %w\n%s", n, err, out.String())
		}
		if !strings.Contains(out.String(), fmt.Sprintf("imported %d records", n)) {
			return fmt.Errorf("import %d: %s", n, out.String())
		}
		ru, _ := imp.ProcessState.SysUsage().(*syscall.Rusage)
		var rss, cpu float64
		if ru != nil {
			rss = float64(ru.Maxrss) / 1024 // KiB on Linux
			cpu = time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
		}
		fmt.Fprintf(stdout, "%10d %10.0f %9.1f %10.0f %11.0f %12.0f %10.1f  %s %s\n", n, float64(st.Size())/1e6, wall.Seconds(),
			float64(n)/wall.Seconds(), float64(wall.Microseconds())/float64(n), rss, cpu, loadBefore, loadAvg())
		os.Remove(corpus)
		os.Remove(db)
	}
	return nil
}

func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], "/")
}

func memTotal() string {
	b, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return "?"
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "MemTotal:"); ok {
			kb, _ := strconv.Atoi(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")))
			return fmt.Sprintf("%.1fGiB", float64(kb)/(1<<20))
		}
	}
	return "?"
}
