// Package sim is allot's deterministic simulator: one seed decides the
// workload, the simulated clock, the order in which each window of
// concurrent requests is submitted, the storage faults (EIO and ENOSPC on
// file creates, opens, writes, syncs, directory syncs, renames, removes and
// truncates) and the crash and restart points. The engine runs on an
// in-memory file system that remembers what was synced; a power cut keeps a
// seed-chosen part of each file's unsynced tail, a process crash keeps all
// of it.
//
// After every recovery the simulator checks the promises, against a
// reference model (inventory.State, the same pure state machine, fed the
// same ops in the same order):
//
//   - the recovered state equals the model after a prefix of the ops that
//     changed state: nothing reordered, nothing invented;
//   - under fsync, every acknowledged op lies inside that prefix (a power
//     cut loses none); under write, the same after a process crash;
//   - every acknowledged reply equals the model's reply;
//   - no op submitted after the engine reported a journal error was
//     acknowledged (fail-stop).
//
// A failing run prints its seed and the command that replays it.
//
// Determinism: the seed fixes the ops, their submission order, the clock,
// the crash points and the fault decisions (drawn per file-system call in
// call order). The engine's flusher is a goroutine, so how requests are
// grouped into frames, and hence which call a fault lands on, can vary
// between runs of one seed; a replay then reproduces the workload, the
// schedule of faults and the crash points, not every frame boundary.
//
// Not modelled yet: the workload has captures, releases and stock sets,
// not holds and expiry; a power cut keeps a prefix of each file's unsynced
// bytes (vfs.Mem's model), not an arbitrary per-page subset; vfs.Mem has no
// mapping, so write and none modes run their write(2) path, not the mmap'd
// one; faults are drawn in sim's own file system wrapper (faultfs.go), not
// vfs.Faulty; maps and unmaps are not faulted.
//
// Its power is tested (sim_test.go): a file system whose fdatasync lies
// (the engine then acknowledges what is not durable) and one that loses
// synced bytes in a crash are both caught within 1,000 seeds.
package sim
