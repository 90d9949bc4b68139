// Package fsinfo says what kind of file system a directory lives on, and
// where allot keeps data by default.
//
// An fdatasync on tmpfs or ramfs returns at once and proves nothing: the
// data is in memory either way. A durability figure measured there is not a
// durability figure. So every data directory allot opens by default lies on
// a real disk when one is at hand (DataRoot: the checkout's .allot folder,
// else $XDG_DATA_HOME/allot), a server warns when it runs fsync mode on a
// memory file system (Describe's Memory), and every bench result records
// each data directory's file system type and mount options.
//
// Invariants: Describe never fails for a path that does not exist yet: it
// describes the nearest existing folder above it, which is where the path
// would be created. A fact it cannot learn is left empty, never guessed.
//
// It must never: write anything (DataRoot creates nothing), or need more
// than /proc/self/mountinfo and statfs(2).
package fsinfo
