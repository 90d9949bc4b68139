// Package cart is what the bench's checkout and order workloads share: a
// deterministic generator of carts over a Zipf-skewed set of groups, a
// closed-loop runner that drives a store through store.Checkouter or
// store.Orderer (re-sending a fraction of mutations with the same
// idempotency key after a simulated timeout, and watching abandoned holds
// expire), its pipelined variant for checkout with --pipeline N (N new
// carts a round per worker through store.CheckoutPipeliner, each cart
// making the same calls: pipeline.go), and the checker.
//
// The checker holds a store to DESIGN.md "Checkout: holds, orders,
// idempotency (contract v2)":
//
//   - every applied hold or order is all or nothing: its lines cover each
//     requested group exactly (same-group lines summed), with rows of that
//     group, counts above zero;
//   - per row, final = initial - units of confirmed holds - units of
//     applied orders: every cancelled or expired hold's units came back to
//     the rows they left, and nothing was taken twice; per group,
//     available + held = initial - confirmed - ordered;
//   - no idempotency key (hold id, order key) was applied twice: a repeat
//     gets the first reply, and the rows show one application;
//   - every hold ends in the state its cart asked for (confirmed,
//     cancelled, expired), and an abandoned hold expires within the
//     expiry wait;
//   - no row is below zero;
//   - a refusal (INSUFFICIENT) had a reason: the available it names is
//     below the demand, and so is the group's floor, its total when loaded
//     minus the demand of every cart acknowledged or of unknown outcome on
//     it (the least the group held at any moment of the run); and a run in
//     which no cart succeeded while the stock loaded covered some compared
//     nothing, and fails.
//
// What cart must never do: know a store by name, or pass a run whose check
// failed.
package cart
