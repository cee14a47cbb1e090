package main

import (
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
)

// flags is a flag set whose values default to INCIDENTLIB_* environment
// variables, and whose values are checked for sense after parsing.
type flags struct {
	*flag.FlagSet
	getenv func(string) string
	checks []func() error
}

func newFlags(name string, getenv func(string) string, stderr io.Writer) *flags {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	return &flags{FlagSet: fs, getenv: getenv}
}

func envName(flagName string) string {
	return "INCIDENTLIB_" + strings.ToUpper(strings.ReplaceAll(flagName, "-", "_"))
}

// parse reads environment variables first, then the command line, then
// runs every check.
func (f *flags) parse(args []string) error {
	var err error
	f.VisitAll(func(fl *flag.Flag) {
		if err != nil {
			return
		}
		if v := f.getenv(envName(fl.Name)); v != "" {
			if e := fl.Value.Set(v); e != nil {
				err = fmt.Errorf("%s=%q: %v", envName(fl.Name), v, e)
			}
		}
	})
	if err != nil {
		return err
	}
	if err := f.Parse(args); err != nil {
		return err
	}
	for _, c := range f.checks {
		if err := c(); err != nil {
			return err
		}
	}
	return nil
}

// duration is a flag that must be positive (or zero where allowed).
func (f *flags) duration(name string, def time.Duration, allowZero bool, usage string) *time.Duration {
	p := f.Duration(name, def, usage+fmt.Sprintf(" (a duration such as 500ms, 30s; env %s)", envName(name)))
	f.checks = append(f.checks, func() error {
		if *p < 0 || (*p == 0 && !allowZero) {
			return fmt.Errorf("--%s must be a positive duration such as %s, got %s", name, def, *p)
		}
		return nil
	})
	return p
}

// count is an integer flag with a lower bound.
func (f *flags) count(name string, def, min int, usage string) *int {
	p := f.Int(name, def, usage+fmt.Sprintf(" (at least %d; env %s)", min, envName(name)))
	f.checks = append(f.checks, func() error {
		if *p < min {
			return fmt.Errorf("--%s must be at least %d, got %d", name, min, *p)
		}
		return nil
	})
	return p
}

// str is a string flag.
func (f *flags) str(name, def, usage string) *string {
	return f.String(name, def, usage+fmt.Sprintf(" (env %s)", envName(name)))
}

// boolean is a boolean flag.
func (f *flags) boolean(name string, def bool, usage string) *bool {
	return f.Bool(name, def, usage+fmt.Sprintf(" (env %s)", envName(name)))
}

// byteSize is a size flag with an explicit unit: B, KiB, MiB, GiB (or kB,
// MB, GB). A bare number is refused, since its unit would be a guess.
type byteSize int64

func (b *byteSize) String() string { return formatBytes(int64(*b)) }

func (b *byteSize) Set(s string) error {
	n, err := parseBytes(s)
	if err != nil {
		return err
	}
	*b = byteSize(n)
	return nil
}

func (f *flags) bytes(name string, def int64, allowZero bool, usage string) *byteSize {
	p := byteSize(def)
	f.Var(&p, name, usage+fmt.Sprintf(" (a size with its unit such as 64MiB; env %s)", envName(name)))
	f.checks = append(f.checks, func() error {
		if p < 0 || (p == 0 && !allowZero) {
			return fmt.Errorf("--%s must be a positive size such as %s, got %s", name, formatBytes(def), p.String())
		}
		return nil
	})
	return &p
}

var byteUnits = []struct {
	suffix string
	mult   int64
}{
	{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"TiB", 1 << 40},
	{"kB", 1000}, {"KB", 1000}, {"MB", 1000_000}, {"GB", 1000_000_000},
	{"B", 1},
}

func parseBytes(s string) (int64, error) {
	s = strings.TrimSpace(s)
	for _, u := range byteUnits {
		if num, ok := strings.CutSuffix(s, u.suffix); ok {
			num = strings.TrimSpace(num)
			v, err := strconv.ParseFloat(num, 64)
			if err != nil || v < 0 {
				return 0, fmt.Errorf("%q is not a size such as 64MiB", s)
			}
			return int64(v * float64(u.mult)), nil
		}
	}
	if s == "0" {
		return 0, nil
	}
	return 0, fmt.Errorf("%q has no unit: write it as 512KiB, 64MiB, 2GiB or 100B", s)
}

func formatBytes(n int64) string {
	switch {
	case n >= 1<<30 && n%(1<<30) == 0:
		return fmt.Sprintf("%dGiB", n>>30)
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%dMiB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%dKiB", n>>10)
	}
	return fmt.Sprintf("%dB", n)
}
