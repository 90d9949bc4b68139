package report

import (
	"strings"
	"testing"

	"allot/bench"
)

func TestDiskTextNamesFileSystemsAndFlagsMemory(t *testing.T) {
	short, detail, memory := diskText([]bench.DataDir{
		{Path: "/work/.allot/data", FSType: "ext4", MountPoint: "/", MountOptions: "rw,relatime"},
		{Path: "/work/.allot/services/redis", FSType: "ext4", MountPoint: "/", MountOptions: "rw,relatime"},
	})
	if short != "ext4 (rw,relatime)" || memory || strings.Count(detail, "\n") != 1 || !strings.Contains(detail, "/work/.allot/services/redis on /") {
		t.Fatalf("got %q %q %v", short, detail, memory)
	}
	short, _, memory = diskText([]bench.DataDir{{Path: "/dev/shm/d", FSType: "tmpfs", MountPoint: "/dev/shm", MountOptions: "rw", Memory: true}})
	if !memory || !strings.Contains(short, "tmpfs") || !strings.Contains(short, "fsync proves nothing") {
		t.Fatalf("got %q %v", short, memory)
	}
	if short, detail, memory := diskText(nil); short != "" || detail != "" || memory {
		t.Fatal("no data dirs must give nothing")
	}
}

func TestReportShowsDiskBesideDurability(t *testing.T) {
	f := &bench.ResultsFile{Version: bench.ResultsVersion, Runs: []bench.Result{{
		Store: "embedded", Durability: "fsync", Mode: "closed", Status: bench.StatusOK, Workers: 1,
		Check:    bench.CheckResult{OK: true, Violations: []string{}},
		DataDirs: []bench.DataDir{{Path: "/dev/shm/d", FSType: "tmpfs", MountPoint: "/dev/shm", MountOptions: "rw,size=1g", Memory: true}},
	}}}
	var b strings.Builder
	if err := WriteHTML(&b, f); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), `fsync<br><span class="disk memory">tmpfs (rw,size=1g) in memory: fsync proves nothing</span>`) {
		t.Fatal("the runs table does not show the memory file system beside the durability")
	}
}
