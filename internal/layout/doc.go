// Package layout holds no code: its test enforces the direction of imports
// between allot's packages, so that the architecture in STYLE.md stays true
// (the state machine imports nothing of ours; the engine knows nothing of
// servers or benches; adapters know nothing of the bench).
package layout
