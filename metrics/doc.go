// Package metrics exports a generator and its lease keeper to Prometheus:
// the series "snowfence serve" exports for them, with the same names,
// help, types and labels, for a service that embeds the library
// (node.Start, or snowfence.New on a lease.StartKeeper) and serves
// /metrics of its own. serve registers this same Collector, so the alert
// rules and the dashboard in ops/ apply to an embedding service unchanged.
//
//	n, err := node.Start(ctx, node.Config{…})
//	c, err := metrics.New(metrics.Config{Generator: n.Generator, Keeper: n.Keeper})
//	reg.MustRegister(c) // the service's own *prometheus.Registry
//
// The Collector reads everything when Prometheus scrapes (minting pays
// nothing for it) and registers nothing itself, on no global registry.
//
// # The series
//
// From the generator (Config.Generator), always:
//
//	snowfence_ids_issued_total                   counter
//	snowfence_refusals_total{reason}             counter: fenced, clock-backwards, clock-unsynchronized, layout, canceled
//	snowfence_sequence_waits_total               counter: a tick's sequence numbers ran out
//	snowfence_backward_waits_total               counter
//	snowfence_clock_forward_jumps_total          counter
//	snowfence_clock_backward_steps_total         counter
//	snowfence_issuing                            gauge: 1 while a mint call would succeed
//	snowfence_layout_timestamps_end_seconds      gauge
//	snowfence_layout_exhaustion_warning_seconds  gauge
//
// while the generator has a machine number: snowfence_fence_remaining_seconds
// and snowfence_generator_info{machine,region,layout}; unless the clock
// policy is off, the policy's bound snowfence_clock_max_error_limit_seconds
// and, once the kernel's clock state has been read,
// snowfence_clock_synchronized, snowfence_clock_estimated_error_seconds,
// snowfence_clock_max_error_seconds, snowfence_clock_offset_seconds and
// snowfence_clock_leap_pending.
//
// From the keeper (Config.Keeper; none without one):
// snowfence_lease_state{state}, snowfence_lease_info{holder,machine,region},
// snowfence_lease_claims_total, snowfence_lease_losses_total,
// snowfence_lease_renew_failures_total, snowfence_lease_mark_timestamp_seconds,
// snowfence_lease_last_renewal_timestamp_seconds, and, while a cutover
// approaches, snowfence_lease_next_state{layout,state}.
//
// From the region registry (Config.RegionNumbers; none without it):
// snowfence_region_numbers_left and snowfence_region_numbers. serve keeps
// its store's registry in memory and answers with RegionNumbers; an
// embedding service does the same with a registry it reads from its store
// (lease.Store.RegistryReader) now and then.
//
// Each series' help text is in collector.go, the one place it is defined.
// What serve exports beside these — HTTP requests and latency, connections,
// draining, the perimeter's callers — is package server's, service's and
// perimeter's, not a generator's.
package metrics
