package main

import (
	"flag"
	"fmt"
	"io"
	"strings"

	"allot/workload"
)

func init() {
	register(command{
		name:    "gen",
		summary: "generate a workload and write it as an op file",
		run:     runGen,
	})
}

// workloadFlags are the flags that pick a generated workload, shared by
// gen and bench. Zero means "the preset's value".
type workloadFlags struct {
	preset string
	rows   int
	ops    int
	skus   int
	seed   uint64
	// set holds the names of the flags given on the command line, when the
	// caller fills it (gen does), so that an explicit zero is refused.
	set map[string]bool
}

func (f *workloadFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.preset, "preset", "seed", "workload preset: "+strings.Join(workload.PresetNames, ", ")+
		" (seed: 1000 rows over 1000 SKUs; hot: 20 rows in 5 groups; wide: 100,000 rows over 10,000 SKUs)")
	fs.IntVar(&f.rows, "rows", 0, "number of distinct rows X (default: the preset's)")
	fs.IntVar(&f.ops, "ops", 0, fmt.Sprintf("number of ops Y (default: the preset's, %d)", workload.OpsDefault))
	fs.IntVar(&f.skus, "skus", 0, "number of SKUs rows are drawn from (default: the preset's)")
	fs.Uint64Var(&f.seed, "seed", workload.SeedDefault, "seed of the generator: same seed and parameters, same ops byte for byte")
}

// params returns the validated params the flags describe.
func (f *workloadFlags) params() (workload.Params, error) {
	p, err := workload.Preset(f.preset)
	if err != nil {
		return p, err
	}
	for _, v := range []struct {
		name  string
		value int
	}{{"rows", f.rows}, {"ops", f.ops}, {"skus", f.skus}} {
		// Zero is the flag's default, "the preset's"; given explicitly it
		// is a bad value, not a request for the preset's.
		if v.value < 0 || (v.value == 0 && f.set[v.name]) {
			return p, fmt.Errorf("--%s must be positive, got %d", v.name, v.value)
		}
	}
	if f.rows > 0 {
		p.Rows = f.rows
	}
	if f.ops > 0 {
		p.Ops = f.ops
	}
	if f.skus > 0 {
		p.SKUs = f.skus
	}
	p.Seed = f.seed
	return p, p.Validate()
}

func runGen(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("gen", "[flags]",
		"Generates the \"ims\" workload (initial rows, then captures and releases that\nall succeed when run in order) and writes it as a text op file that\n'allot bench --ops-file' replays.", stderr)
	var wf workloadFlags
	wf.register(fs)
	out := fs.String("o", "", "file to write (- for standard output, the default); an existing file is replaced only once the new one is complete")
	if err := parseFlags(fs, args, stdout); err != nil {
		return err
	}
	wf.set = map[string]bool{}
	fs.Visit(func(fl *flag.Flag) { wf.set[fl.Name] = true })
	p, err := wf.params()
	if err != nil {
		return &exitError{code: 2, msg: err.Error()}
	}
	w, err := workload.Generate(p)
	if err != nil {
		return &exitError{code: 2, msg: err.Error()}
	}
	if *out == "" || *out == "-" {
		return w.Write(stdout)
	}
	if err := writeFileAtomicFunc(*out, w.Write); err != nil {
		return err
	}
	fmt.Fprintf(stderr, "wrote %s: %s preset, %d rows, %d ops, seed %d\n", *out, p.Name, len(w.Initial), len(w.Ops), p.Seed)
	return nil
}
