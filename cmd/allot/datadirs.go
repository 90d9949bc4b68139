package main

import (
	"context"
	"fmt"
	"io"

	"allot/bench"
	"allot/internal/fsinfo"
	"allot/services"
	"allot/store"
)

// dataDirs says on which file systems a store keeps its data: the data
// directory a store reports (embedded, allot), else the folder of the peer
// server services started for it. It warns on w when a fsync run's data is
// in memory, where fdatasync survives no power loss. Nil when it cannot
// tell (a server given by --addr).
func dataDirs(ctx context.Context, st store.Store, name string, d store.Durability, w io.Writer) []bench.DataDir {
	var paths []string
	if dd, ok := st.(interface{ DataDir() string }); ok && dd.DataDir() != "" {
		paths = append(paths, dd.DataDir())
	} else if reg, err := store.Lookup(name); err == nil && reg.Server != "" {
		if sts, err := services.Status(ctx, services.Config{}, reg.Server); err == nil {
			for _, s := range sts {
				if s.State == services.StateRunning && s.Dir != "" {
					paths = append(paths, s.Dir)
				}
			}
		}
	}
	var out []bench.DataDir
	for _, p := range paths {
		info, err := fsinfo.Describe(p)
		if err != nil {
			fmt.Fprintf(w, "allot bench: %s: %v\n", name, err)
			continue
		}
		out = append(out, bench.DataDir{Path: info.Path, FSType: info.Type, MountPoint: info.MountPoint, MountOptions: info.Options, Memory: info.Memory})
		if info.Memory && d == store.DurabilityFsync {
			fmt.Fprintf(w, "allot bench: WARNING: %s runs fsync on a memory file system (%s at %s): its fsync survives no power loss, so its figures are not durable ones\n", name, info.Type, info.MountPoint)
		}
	}
	return out
}
