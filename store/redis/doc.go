// Package redis is the bench's Redis adapter ("redis"): rows in hashes, a
// sorted-set index per group, and capture and release as server-side Lua
// scripts, the way Redis users build an atomic reservation.
//
// Layout in the server (see keys.go): one hash per row, field c the count
// and p the price, both decimal integers; one sorted set per group whose
// members are the group's warehouse ids, all with score 0, so that ZRANGE
// returns them in byte order, which is the allocation order of capture.
// Every key starts with "allot:" and the parts of a key are joined by the
// ASCII unit separator (0x1f), a control character no identifier may hold,
// so two different rows never share a key.
//
// Invariants:
//   - capture and release run as one Lua script each, so each is atomic:
//     Redis runs a script to its end before any other command;
//   - counts never pass through a Lua double in a way that could change
//     them (the scripts say how), so counts up to 2^62-1 are exact;
//   - input is checked in Go before any request is sent: bad input is
//     CodeInvalid and reaches no server.
//
// What it must never do: delete or change a key outside its "allot:"
// prefix (Load clears only its own keys, so it is safe even against a
// shared server), or change the durability settings of a server it was
// not pointed at.
package redis
